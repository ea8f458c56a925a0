export { Plugin, type PluginOptions } from './plugin.decorator.js';
export { Tool, type ToolOptions } from './tool.decorator.js';
export { Hook, Transform, type HookOptions } from './hook.decorator.js';
export { Requires } from './requires.decorator.js';
export { Middleware } from './middleware.decorator.js';
export { StateKey, type StateKeyOptions } from './state-key.decorator.js';
export { OnEffect } from './on-effect.decorator.js';
export { OnAction } from './on-action.decorator.js';
export { SelfTest } from './self-test.decorator.js';
