import type { InjectionToken } from '@nestjs/common';
import { TrellisError, type InstallOptions, type PluginClass } from '../../../index.js';

/**
 * A plugin a feature module owns: its class, or the class with install options and `trust`:
 * providers the host vouches hand out nothing of Nest's container, so the seal does not look
 * behind them (a narrow port over CQRS's `CommandBus`, say). See docs/nestjs.md, "Sealing".
 */
export type FeaturePlugin =
  | PluginClass
  | ({ readonly plugin: PluginClass; readonly trust?: readonly InjectionToken[] } & Omit<InstallOptions, 'instance'>);

/** One plugin of a `forFeature` call, in one shape. */
export interface FeaturePluginEntry {
  readonly plugin: PluginClass;
  readonly options: Omit<InstallOptions, 'instance'>;
  /** Providers the seal does not look behind (never Trellis's own). */
  readonly trust: readonly InjectionToken[];
}

/** What one `TrellisModule.forFeature([...])` call declares. */
export interface FeatureDeclaration {
  readonly entries: readonly FeaturePluginEntry[];
}

/** Normalizes a `forFeature` list; refuses what is not a class, naming the position. */
export function featureEntries(plugins: readonly FeaturePlugin[]): FeaturePluginEntry[] {
  if (!Array.isArray(plugins))
    throw new TrellisError('InvalidOptions', 'TrellisModule.forFeature() takes a list of plugin classes', {
      hint: 'e.g. TrellisModule.forFeature([OrdersPlugin])',
    });
  return plugins.map((item, index) => {
    const entry =
      typeof item === 'function'
        ? { plugin: item, options: {}, trust: [] }
        : { plugin: item?.plugin, options: withoutPlugin(item), trust: item?.trust ?? [] };
    if (typeof entry.plugin !== 'function') {
      throw new TrellisError(
        'InvalidOptions',
        `TrellisModule.forFeature(): entry ${index} is not a plugin class or { plugin: Class, config? }: ${String(item)}`,
        { hint: 'Import the plugin class and list it itself' },
      );
    }
    if (!Array.isArray(entry.trust)) {
      throw new TrellisError(
        'InvalidOptions',
        `TrellisModule.forFeature(): trust of ${entry.plugin.name} must be a list of provider tokens`,
        { hint: `e.g. { plugin: ${entry.plugin.name}, trust: [ORDERS_PORT] }` },
      );
    }
    return entry;
  });
}

function withoutPlugin(item: Exclude<FeaturePlugin, PluginClass>): Omit<InstallOptions, 'instance'> {
  const { plugin: _plugin, trust: _trust, ...options } = item ?? {};
  return options;
}
