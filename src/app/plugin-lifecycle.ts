import type { Trellis } from './trellis.js';

/** Optional lifecycle methods a plugin class may implement. */
export interface PluginLifecycle {
  /** After validation, before the plugin is registered; a throw aborts the install. */
  onInstall?(app: Trellis): void | Promise<void>;
  /** Before the plugin is removed by `uninstall` or replaced by `reload`. */
  onUninstall?(app: Trellis): void | Promise<void>;
}
