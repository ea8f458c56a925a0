import 'reflect-metadata';

/**
 * Trellis: `import { Trellis, Plugin, Tool, type ToolContext } from 'trellis'`.
 *
 * The core nouns an application uses: the app, agents, sessions and what a turn returns;
 * the decorators, hook results and contexts of a plugin written inside the app; errors and
 * events; the built-in tool middleware; the models and the stores. Everything else has an
 * entry of its own (docs/architecture.md, "Public entries"): `trellis/plugin` (the plugin
 * SDK), `trellis/plugins/<name>` (each built-in plugin family with its config classes),
 * `trellis/models`, `trellis/stores`, `trellis/governance`, `trellis/host`, and the hosts
 * (`trellis/nestjs`, `trellis/queue`, `trellis/mcp`, …). The names below that `trellis/plugin`
 * also has are the same bindings.
 */

// The app
export { Trellis, type TrellisOptions, type InstalledRef } from './src/app/trellis.js';
export type { Provider } from './src/app/providers.js';
export type { InstallOptions } from './src/engine/plugin/plugin-installer.js';
export type { PluginClass } from './src/engine/plugin/plugin-definition.js';
export type { LoadReport } from './src/engine/plugin/directory-loader.js';
export type { AppDescription } from './src/app/app-description.js';
export type { SelfTestReport } from './src/app/self-test-report.js';

// Agents, sessions, turns
export { Agent, type SessionOptions } from './src/agent/agent.js';
export type { AgentSpec } from './src/agent/agent-spec.js';
export { Session, type SendOptions, type ResumeOptions } from './src/agent/session.js';
export type {
  TurnResult,
  TurnStatus,
  TurnUsage,
  ToolCallRecord,
  PendingApproval,
  Decision,
} from './src/agent/turn/turn-result.js';
export type { Approver } from './src/engine/stores/audit-log.js';
export type { OutputClass } from './src/agent/turn/turn-output.js';
export type { DirectCallOptions, DirectCallResult } from './src/agent/direct-tool-call.js';
export {
  AgentInput,
  type AgentToolSpec,
  type HandoffSpec,
  type RemoteAgent,
  type RemoteAgentCall,
  type RemoteAgentReply,
} from './src/agent/delegation/agent-tool-spec.js';

// Who may use a session
export type { SessionAccess } from './src/agent/session-owner.js';
export {
  ownerOnlySessionPolicy,
  ownerDecidesSessionPolicy,
  type SessionPolicy,
  type SessionAccessRequest,
  type SessionAction,
} from './src/agent/session-policy.js';

// Plugins inside the app: decorators (and inversify's, so no inversify import is needed), hook results, contexts
export { inject, injectable, optional } from 'inversify';
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
export { block, cancel, suspend, setResult, done } from './src/engine/hooks/hook-results.js';
export type { HookPoint } from './src/contract/hook-points.js';
export type { PluginContext, HookContext, ToolContext } from './src/contract/plugin-context.js';
export type { ToolCallInfo } from './src/contract/hook-payloads.js';
export { argsOf } from './src/contract/tool-call-args.js';

// Errors and events
export {
  TrellisError,
  type TrellisErrorCode,
  type TrellisErrorCodes,
  type TrellisErrorKind,
} from './src/errors/trellis-error.js';
export type { TrellisEvent, TrellisEventType } from './src/engine/events/trellis-event.js';

// Tool middleware: the interface and the built-ins (their options, the logger and the clock: `trellis/plugins/middleware`)
export type { ToolMiddleware, ToolInvocation, ToolResult, NextToolHandler } from './src/contract/tool-middleware.js';
export {
  RetryMiddleware,
  TimeoutMiddleware,
  AuthMiddleware,
  LoggingMiddleware,
  RateLimitMiddleware,
  CacheMiddleware,
} from './plugins/middleware/index.js';

// Models (schema dialects and what a provider author implements: `trellis/models`)
export type {
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelDelta,
  ChatMessage,
  Usage,
} from './src/contract/model-provider.js';
export type { ContentPartInput } from './src/contract/content-part.js';
export { OpenAIModel, type OpenAIModelOptions } from './src/engine/models/openai-model.js';
export { AnthropicModel, type AnthropicModelOptions } from './src/engine/models/anthropic-model.js';
export { FallbackModel } from './src/engine/models/fallback-model.js';
export { ScriptedModel, type ScriptedReply } from './src/engine/models/scripted-model.js';
export { modelFromEnv, type EnvModel } from './src/engine/models/model-from-env.js';

// Stores (the store's records, capabilities and operators' tools: `trellis/stores`)
export type { SessionStore } from './src/engine/stores/session-store.js';
export { MemoryStore } from './src/engine/stores/memory-store.js';
export { SqliteStore, type SqliteStoreOptions } from './src/engine/stores/sqlite-store.js';
export { PostgresStore, type PostgresStoreOptions } from './src/engine/stores/postgres-store.js';
