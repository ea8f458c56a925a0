/** DI token: a plugin's validated `config` (an instance of its config DTO). */
export const PLUGIN_CONFIG = Symbol.for('trellis.plugin.config');

/** DI token of the app itself: bound for a plugin only with `grants: ['app']`. */
export const TRELLIS_APP = Symbol.for('trellis.app');

/** DI token of the app's session store: bound for a plugin only with `grants: ['store']`. */
export const SESSION_STORE = Symbol.for('trellis.session-store');
