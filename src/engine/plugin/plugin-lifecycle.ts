import type { PluginHost } from './plugin-host.js';
import type { EraseRequest } from '../erasure/erasure.js';

/** Optional lifecycle methods a plugin class may implement. */
export interface PluginLifecycle {
  /** After validation, before the plugin is registered; a throw aborts the install. */
  onInstall?(host: PluginHost): void | Promise<void>;
  /** Before the plugin is removed by `uninstall` or replaced by `reload`. */
  onUninstall?(host: PluginHost): void | Promise<void>;
  /**
   * `app.erase(...)` (`trellis sessions erase`): remove or anonymise what this plugin holds of
   * these sessions outside the session store (its own tables, indexes, caches). Runs before the
   * sessions are deleted; a throw stops the erasure with nothing deleted, so it can be run again.
   */
  onErase?(request: EraseRequest): void | Promise<void>;
}
