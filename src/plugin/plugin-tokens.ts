/** DI token: a plugin's validated `config` (an instance of its config DTO). */
export const PLUGIN_CONFIG = Symbol.for('trellis.plugin.config');
