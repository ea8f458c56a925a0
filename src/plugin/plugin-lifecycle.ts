import type { PluginHost } from './plugin-host.js';

/** Optional lifecycle methods a plugin class may implement. */
export interface PluginLifecycle {
  /** After validation, before the plugin is registered; a throw aborts the install. */
  onInstall?(host: PluginHost): void | Promise<void>;
  /** Before the plugin is removed by `uninstall` or replaced by `reload`. */
  onUninstall?(host: PluginHost): void | Promise<void>;
}
