import 'reflect-metadata';
import { injectable } from 'inversify';
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
