import 'reflect-metadata';
import { injectable, type ServiceIdentifier } from 'inversify';
import { METADATA } from './metadata-keys.js';

export interface PluginOptions {
  /** Unique across the app; also the namespace of the plugin's context keys (`<name>.*`). */
  readonly name: string;
  readonly version: string;
  readonly description?: string;
  /** Default priority of the plugin's hooks; lower runs first. Default 100. */
  readonly priority?: number;
  readonly tags?: readonly string[];
  /**
   * The team that owns the plugin (`team-payments`): shown by `trellis plugins` and carried by
   * its tool-call records, events, errors, spans, metrics and `usage.byOwner`. Letters, digits,
   * `.`, `_`, `-`; at most 64 characters.
   */
  readonly owner?: string;
  /**
   * Plugins that must be installed first; uninstalling one of them is refused while this one
   * is installed. Names, or names with the semver range of versions this plugin works with
   * (`{ billing: '^2.1.0' }`), checked at install.
   */
  readonly dependsOn?: readonly string[] | Readonly<Record<string, string>>;
  /** A class-validator DTO the install-time `config` is checked against; injected as `PLUGIN_CONFIG`. */
  readonly config?: new () => object;
  /**
   * The DI tokens this plugin owns and may `host.export` from `onInstall`: an undeclared
   * export is refused, and a token declared by an installed plugin cannot be declared by
   * another. A dotted token name (`Symbol.for('vault.client')`, `'vault.client'`) must be in
   * the plugin's namespace; `trellis.*` and `app.*` tokens are never a plugin's.
   */
  readonly exports?: readonly ServiceIdentifier[];
}

/**
 * Marks a class as a Trellis plugin and makes it injectable. Writes metadata only; the
 * app reads it on `app.install(PluginClass)`.
 */
export function Plugin(options: PluginOptions): ClassDecorator {
  return (target) => {
    injectable()(target as never);
    Reflect.defineMetadata(METADATA.plugin, options, target);
  };
}
