/** The `permissions` plugin: allow / deny / ask rules over tool calls. */
export { PermissionsPlugin } from './permissions.plugin.js';
export { PermissionsConfig, PermissionRule, ArgumentCondition, type PermissionEffect } from './permissions.config.js';
export { PermissionPolicy, type PermissionDecision } from './permission-policy.js';
export { compilePattern, IsPattern } from './regex-pattern.js';
export { toolGlob } from './tool-glob.js';
