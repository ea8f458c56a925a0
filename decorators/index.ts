export { Plugin, type PluginOptions } from './plugin.decorator.js';
export { Tool, type ToolOptions } from './tool.decorator.js';
export { Hook, Transform, type HookOptions } from './hook.decorator.js';
export { Requires } from './requires.decorator.js';
export { Middleware } from './middleware.decorator.js';
export { StateKey, type StateKeyOptions } from './state-key.decorator.js';
export { OnEffect, OnAction, SelfTest } from './handler.decorators.js';
