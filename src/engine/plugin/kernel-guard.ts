import type { Container, ServiceIdentifier } from 'inversify';
import { TrellisError } from '../../errors/trellis-error.js';

/**
 * Bindings that refuse: the kernel's tokens and installed plugins' classes are bound in
 * the container plugins resolve from, to a factory that throws `KernelAccess`. A plugin
 * that asks for one fails at install with a message saying what it may have instead.
 */
export function guardToken(container: Container, token: ServiceIdentifier, what: string, instead: string): void {
  if (container.isCurrentBound(token)) return;
  container.bind(token).toDynamicValue(() => {
    throw new TrellisError('KernelAccess', `asks for ${what}, which a plugin cannot inject`, {
      hint: instead,
      details: { token: describeToken(token) },
    });
  });
}

/** A plugin's construction failed on a guarded token: the error, rewritten to name the plugin. */
export function kernelAccessOf(error: unknown, plugin: string): TrellisError | undefined {
  for (
    let cause: unknown = error, depth = 0;
    cause !== undefined && depth < 8;
    cause = (cause as { cause?: unknown }).cause, depth++
  ) {
    if (TrellisError.is(cause, 'KernelAccess')) {
      const message =
        cause.hint && cause.message.endsWith(`. ${cause.hint}`)
          ? cause.message.slice(0, -(cause.hint.length + 2))
          : cause.message;
      return new TrellisError('KernelAccess', `Plugin '${plugin}' ${message}`, {
        hint: cause.hint,
        details: { ...cause.details, plugin },
        cause: error,
      });
    }
  }
  return undefined;
}

export function describeToken(token: ServiceIdentifier): string {
  if (typeof token === 'function') return token.name;
  return String(token);
}

/** How a plugin gets things legitimately, for the `KernelAccess` hint. */
export const LEGITIMATE_ROUTES =
  "Use what a plugin is given: ctx in tools and hooks for context and state, @inject(PLUGIN_CONFIG) for its config, services the host provides with Trellis.create({ providers }), services other plugins export from onInstall with host.export(token, value), and the PluginHost onInstall receives. If the host means to hand this plugin the kernel, it says so per plugin: app.install(Plugin, { grants: ['app'] }) (or 'store', 'events')";
