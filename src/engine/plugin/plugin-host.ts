import type { ServiceIdentifier } from 'inversify';
import type { Observable } from 'rxjs';
import type { TrellisErrorCode } from '../../errors/trellis-error.js';
import type { TrellisEvent } from '../events/trellis-event.js';
import type { PluginRecords } from './plugin-records.js';

/** A structured logger as plugins get it: pino-shaped, bound to the plugin's name. */
export interface PluginLogger {
  debug(fields: object | string, message?: string): void;
  info(fields: object | string, message?: string): void;
  warn(fields: object | string, message?: string): void;
  error(fields: object | string, message?: string): void;
}

/** What the host may hand a plugin beyond its own host, by name at install (`{ grants }`). */
export type PluginGrant = 'events' | 'app' | 'store';

/**
 * What a plugin gets at `onInstall` / `onUninstall` instead of the app: its own name,
 * config and logger, a way to emit its own events and to export services to plugins
 * installed after it — and, only where the host granted it, the app's event stream.
 */
export interface PluginHost {
  /** The plugin's name. */
  readonly name: string;
  /** Its validated config (an instance of its config DTO), or `undefined` when it takes none. */
  readonly config: object | undefined;
  readonly logger: PluginLogger;
  /**
   * Every event of the app: turns, rounds, tool calls (with arguments), model text, errors.
   * Only with `app.install(P, { grants: ['events'] })`: it shows every session's traffic,
   * so observation plugins (metrics, tracing) get it and others do not. Reading it
   * without the grant throws `KernelAccess`.
   */
  readonly events$: Observable<TrellisEvent>;
  /** Emits `{ type: 'plugin.event', plugin, name, data }` on the app's event stream. */
  emit(name: string, data?: unknown): void;
  /**
   * Reports an error on the app's event stream (`{ type: 'error', plugin }` with this
   * plugin's name) without throwing: for failures a plugin handles but users should see.
   */
  reportError(
    error: unknown,
    where?: { readonly sessionId?: string; readonly point?: string; readonly code?: TrellisErrorCode },
  ): void;
  /**
   * Makes `value` injectable as `token` in plugins installed after this one (they name it
   * in their constructors). Removed when this plugin is uninstalled.
   */
  export(token: ServiceIdentifier, value: unknown): void;
  /**
   * The plugin's own records in the session store, by subject and key, outliving sessions
   * (see {@link PluginRecords}). A store that keeps no records makes reading this throw.
   */
  readonly records: PluginRecords;
}
