import 'reflect-metadata';

/**
 * The plugin SDK: `import { Plugin, Hook, type HookContext } from 'trellis/plugin'`.
 *
 * Everything a plugin, middleware or DTO author needs, and nothing of the app's
 * machinery. The built-in plugins are written against this entry and nothing deeper, so
 * a third-party plugin can do whatever they do. It points only into `src/` and
 * `decorators/` (never at the root `index.ts` or `plugins/`), so the built-ins importing
 * it add no import circle.
 */

// Dependency injection: authors need not depend on inversify themselves.
export { inject, injectable, optional } from 'inversify';

// Decorators (metadata only) and the plugin's own config token
export {
  Plugin,
  Tool,
  Hook,
  Transform,
  Requires,
  Middleware,
  StateKey,
  OnEffect,
  OnAction,
  SelfTest,
  Secret,
} from './decorators/index.js';
// Secrets: the one redactor logs, events, errors and the CLI use
export {
  redactSecrets,
  redactText,
  isSecretKey,
  redactionKey,
  REDACTED,
  type RedactOptions,
} from './src/redaction/redactor.js';
export { describeError } from './src/errors/describe-error.js';
export type { PluginOptions, ToolOptions, HookOptions, StateKeyOptions } from './decorators/index.js';
// The plugin's own config token; the app and the store, bound only for a plugin installed with `grants: ['app' | 'store']`
export { PLUGIN_CONFIG, TRELLIS_APP, SESSION_STORE } from './src/contract/plugin-tokens.js';
export type { PluginLifecycle } from './src/engine/plugin/plugin-lifecycle.js';
export type { EraseRequest, EraseSelector } from './src/engine/erasure/erasure.js';
export type { PluginHost, PluginLogger, PluginGrant } from './src/engine/plugin/plugin-host.js';
export type { PluginRecords, PluginRecord } from './src/engine/plugin/plugin-records.js';
export type { PluginClass } from './src/engine/plugin/plugin-definition.js';
export { Describe } from './src/engine/validation/describe.decorator.js';
export type { FieldError } from './src/contract/field-error.js';

// Hook results, hook points, contexts
export { block, cancel, suspend, setResult, done } from './src/engine/hooks/hook-results.js';
export type { HookResult, SuspendTicket } from './src/engine/hooks/hook-results.js';
export { HOOK_POINTS, type HookPoint, type HookMode } from './src/contract/hook-points.js';
export type { PluginContext, HookContext, ToolContext } from './src/contract/plugin-context.js';
export type { ContextKeySpec } from './src/contract/context-key.js';

// State: the kernel's keys and actions a plugin may read or schedule
export { KERNEL_KEYS } from './src/contract/kernel-keys.js';
export { BuiltInActions } from './src/engine/state/built-in-actions.js';
export type {
  AddContextMessagePayload,
  SetInferenceOverridePayload,
  ToolFilterPayload,
} from './src/engine/state/built-in-actions.js';
export type { StateCommand } from './src/contract/state-command.js';

// What hooks are handed: requests, responses, tool calls, exchanges, events
export type {
  InferenceRequest,
  ToolCallInfo,
  ToolCallOutcome,
  TurnExchange,
  ToolCandidate,
  SessionStartPayload,
  SessionEndPayload,
  TaskStartPayload,
  TaskEndPayload,
  MemoryReadPayload,
  ToolRegisterPayload,
} from './src/contract/hook-payloads.js';
export { argsOf, type ToolCallArgs } from './src/contract/tool-call-args.js';
export type { ToolCallRecord } from './src/contract/tool-result.js';
export type { PendingApproval } from './src/contract/suspension.js';
export type { DelegatingPayload, DelegatedPayload } from './src/contract/delegation.js';
export type { RolledUpUsage } from './src/contract/agent-usage.js';
export type {
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelDelta,
  ChatMessage,
  ModelToolCall,
  ToolDefinition,
  InferenceSettings,
  Usage,
  JsonSchema,
} from './src/contract/model-provider.js';
export {
  toolContent,
  isToolContent,
  messageParts,
  hasMediaParts,
  describePart,
  describeParts,
  partsText,
  IMAGE_MEDIA_TYPES,
  FILE_MEDIA_TYPES,
  MAX_IMAGE_BYTES,
  MAX_FILE_BYTES,
  type ContentPart,
  type ContentPartInput,
  type TextPart,
  type ImagePart,
  type FilePart,
  type ToolContent,
} from './src/contract/content-part.js';
export { addUsage, subtractUsage } from './src/engine/models/usage-sum.js';
export type { TrellisEvent, TrellisEventType, RoundCause } from './src/engine/events/trellis-event.js';

// Errors
export {
  TrellisError,
  type TrellisErrorCode,
  type TrellisErrorCodes,
  type TrellisErrorKind,
  type TrellisErrorOptions,
} from './src/errors/trellis-error.js';

// Tool middleware
export { MIDDLEWARE_OPTIONS, okResult, errorResult } from './src/contract/tool-middleware.js';
export type {
  ToolMiddleware,
  ToolMiddlewareClass,
  ToolInvocation,
  ToolNotice,
  ToolResult,
  NextToolHandler,
  ToolErrorInfo,
  MiddlewareDeclaration,
} from './src/contract/tool-middleware.js';
