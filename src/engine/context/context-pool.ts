import { TrellisError } from '../../errors/trellis-error.js';
import type { NormalizedKey } from '../../contract/context-key.js';
import { lookup, searchedLevels, type ContextSnapshot } from './context-level.js';
import type { StateSchema } from '../../contract/state-schema.js';

const NO_DEPS: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * Resolves a member's declared keys against a snapshot, nearest level first. A missing
 * required key is a `MissingContext` error naming the key and the levels searched; an
 * optional one resolves to `undefined`.
 */
export function resolveDeclared(
  keys: readonly NormalizedKey[],
  snapshot: ContextSnapshot,
  schema: StateSchema,
  /** Who declared the keys, for the error: a name, or the member (its `plugin.method` is built only on error). */
  who: string | { readonly plugin: string; readonly method: string },
): Readonly<Record<string, unknown>> {
  if (keys.length === 0) return NO_DEPS;
  const deps: Record<string, unknown> = {};
  for (const { key, optional } of keys) {
    let value = lookup(snapshot, key);
    if (value === undefined) value = schema.stateKey(key)?.default;
    if (value === undefined && !optional)
      throw missingContext(key, snapshot, typeof who === 'string' ? who : `${who.plugin}.${who.method}`);
    deps[key] = value;
  }
  return deps;
}

export function missingContext(key: string, snapshot: ContextSnapshot, who: string): TrellisError {
  const levels = searchedLevels(snapshot);
  return new TrellisError(
    'MissingContext',
    `${who} requires context key '${key}', which is not set (searched ${levels.join(', ')})`,
    {
      hint: key.startsWith('app.')
        ? `Pass it in agent.session(id, { context: { '${key}': … } }) or session.send(message, { context })`
        : `Make sure the plugin that owns '${key}' writes it before this runs, or declare it { key: '${key}', optional: true }`,
      details: { key, levels },
    },
  );
}
