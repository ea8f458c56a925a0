import { TrellisError, type InstallOptions, type PluginClass } from '../../index.js';

/** A plugin a feature module owns: its class, or the class with install options. */
export type FeaturePlugin = PluginClass | ({ readonly plugin: PluginClass } & Omit<InstallOptions, 'instance'>);

/** One plugin of a `forFeature` call, in one shape. */
export interface FeaturePluginEntry {
  readonly plugin: PluginClass;
  readonly options: Omit<InstallOptions, 'instance'>;
}

/** What one `TrellisModule.forFeature([...])` call declares. */
export interface FeatureDeclaration {
  readonly entries: readonly FeaturePluginEntry[];
}

/** Normalizes a `forFeature` list; refuses what is not a class, naming the position. */
export function featureEntries(plugins: readonly FeaturePlugin[]): FeaturePluginEntry[] {
  if (!Array.isArray(plugins)) throw new TrellisError('InvalidOptions', 'TrellisModule.forFeature() takes a list of plugin classes', { hint: 'e.g. TrellisModule.forFeature([OrdersPlugin])' });
  return plugins.map((item, index) => {
    const entry = typeof item === 'function' ? { plugin: item, options: {} } : { plugin: item?.plugin, options: withoutPlugin(item) };
    if (typeof entry.plugin !== 'function') {
      throw new TrellisError('InvalidOptions', `TrellisModule.forFeature(): entry ${index} is not a plugin class or { plugin: Class, config? }: ${String(item)}`, { hint: 'Import the plugin class and list it itself' });
    }
    return entry;
  });
}

function withoutPlugin(item: Exclude<FeaturePlugin, PluginClass>): Omit<InstallOptions, 'instance'> {
  const { plugin: _plugin, ...options } = item ?? {};
  return options;
}
