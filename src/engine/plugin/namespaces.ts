import type { ServiceIdentifier } from 'inversify';

/**
 * Who owns a dotted name. `trellis` and `trellis.*` are the kernel's, `app` and `app.*` the
 * host's (its request context: `app.user_id`, `app.scopes`); every other `<plugin>.*` is the
 * plugin of that name. Names compare case-insensitively, as plugin names are checked.
 */
export const RESERVED_NAMESPACES: Readonly<Record<string, string>> = { trellis: 'the kernel', app: 'the host' };

/** Whether `name` is `namespace` itself or inside it (`vault`, `vault.reset`; not `vaults`). */
export function inNamespace(name: string, namespace: string): boolean {
  const n = name.toLowerCase();
  const ns = namespace.toLowerCase();
  return n === ns || n.startsWith(`${ns}.`);
}

/** The reserved namespace `name` falls in (`'trellis'`, `'app'`), or `undefined`. */
export function reservedNamespace(name: string): string | undefined {
  return Object.keys(RESERVED_NAMESPACES).find((ns) => inNamespace(name, ns));
}

/** `'trellis' and 'trellis.*' belong to the kernel`: for messages. */
export function reservedBy(namespace: string): string {
  return `'${namespace}' and '${namespace}.*' belong to ${RESERVED_NAMESPACES[namespace]}`;
}

/**
 * The name a DI token carries, when it carries one: a string token, or a symbol's registry
 * key (`Symbol.for('vault.client')`) or description. Classes name no namespace.
 */
export function tokenName(token: ServiceIdentifier): string | undefined {
  if (typeof token === 'string') return token;
  if (typeof token === 'symbol') return Symbol.keyFor(token) ?? token.description;
  return undefined;
}
