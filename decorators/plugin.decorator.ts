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
  /** Plugins that must be installed first; uninstalling one of them is refused while this one is installed. */
  readonly dependsOn?: readonly string[];
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
