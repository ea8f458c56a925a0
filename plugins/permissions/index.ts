/**
 * `trellis/plugins/permissions`: the `permissions` plugin (allow / deny / ask rules over tool
 * calls) with its config classes and the policy it applies. See docs/plugins/permissions.md.
 */
export { PermissionsPlugin } from './permissions.plugin.js';
export { PermissionsConfig, PermissionRule, ArgumentCondition, type PermissionEffect } from './permissions.config.js';
export { PermissionPolicy, type PermissionDecision } from './permission-policy.js';
