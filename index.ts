import 'reflect-metadata';

// Everything a plugin author imports from `trellis/plugin` is here too (the names below that
// repeat some of it are the same bindings).
export * from './plugin.js';

// The kernel
export { Trellis, TRELLIS_APP, type TrellisOptions, type InstalledRef } from './src/app/trellis.js';
export type { Provider } from './src/app/providers.js';
export type { PluginLifecycle } from './src/plugin/plugin-lifecycle.js';
export type { PluginHost, PluginLogger, PluginGrant } from './src/plugin/plugin-host.js';
export type { AppDescription, PluginInfo, ToolInfo, HookInfo } from './src/app/app-description.js';
export type { SelfTestReport } from './src/app/self-test-report.js';
export type { InstallOptions } from './src/plugin/plugin-installer.js';
export type { LoadReport } from './src/plugin/directory-loader.js';
export type { PluginClass } from './src/plugin/plugin-definition.js';
export { isPluginClass } from './src/plugin/plugin-explorer.js';
export { PLUGIN_CONFIG } from './src/plugin/plugin-tokens.js';

// Agents, sessions, turns
export { Agent, type SessionOptions } from './src/agent/agent.js';
export { Session, type SendOptions, type ResumeOptions } from './src/agent/session.js';
export type { SessionAccess } from './src/agent/session-owner.js';
export { authorizeSessionAccess, ownerDecidesSessionPolicy, ownerOnlySessionPolicy, userIdPrincipal, type SessionAccessCheck, type SessionAccessRequest, type SessionAction, type SessionPolicy } from './src/agent/session-policy.js';
export { waitForLeaseProblem } from './src/agent/session-lease.js';
export type { AgentSpec } from './src/agent/agent-spec.js';
export { AgentInput, type AgentToolSpec, type HandoffSpec, type RemoteAgent, type RemoteAgentCall, type RemoteAgentReply } from './src/agent/delegation/agent-tool-spec.js';
export type { DirectCallOptions, DirectCallResult } from './src/agent/direct-tool-call.js';
export type { TurnResult, TurnStatus, ToolCallRecord, PendingApproval, Decision, TurnUsage } from './src/agent/turn-result.js';
export type { AttributedUsage, UsageSplit } from './src/contract/agent-usage.js';
export { outputInstructions, type OutputClass } from './src/agent/turn-output.js';
export type { InferenceRequest } from './src/contract/hook-payloads.js';
export { parseSuspension, type SuspensionRecord } from './src/agent/suspension-record.js';
export type { ToolCallInfo, ToolCallOutcome, TurnExchange, ToolCandidate } from './src/contract/hook-payloads.js';
export { argsOf, type ToolCallArgs } from './src/contract/tool-call-args.js';
export type { DelegatingPayload, DelegatedPayload } from './src/contract/delegation.js';
export type { RolledUpUsage } from './src/contract/agent-usage.js';

// Decorators (and inversify's, re-exported so plugins and middleware need no inversify import of their own)
export { inject, injectable, optional } from 'inversify';
export { Plugin, Tool, Hook, Transform, Requires, Middleware, StateKey, OnEffect, OnAction, SelfTest, Secret } from './decorators/index.js';
export { redactSecrets, redactText, redactArguments, isSecretKey, type RedactOptions } from './src/redaction/redactor.js';
export { redactMessage, type SecretFieldsOf } from './src/redaction/message-redaction.js';
export type { PluginOptions, ToolOptions, HookOptions, StateKeyOptions } from './decorators/index.js';

// Hooks, context and state
export { block, cancel, suspend, setResult, done } from './src/hooks/hook-results.js';
export type { HookResult, SuspendTicket } from './src/hooks/hook-results.js';
export { HOOK_POINTS, type HookPoint, type HookMode } from './src/hooks/hook-points.js';
export type { PluginContext, HookContext, ToolContext } from './src/context/plugin-context.js';
export type { ContextKeySpec } from './src/context/context-key.js';
export { BuiltInActions } from './src/state/built-in-actions.js';
export type { AddContextMessagePayload, SetInferenceOverridePayload, ToolFilterPayload } from './src/state/built-in-actions.js';
export { KERNEL_KEYS } from './src/state/kernel-keys.js';
export type { StateCommand } from './src/state/state-command.js';

// Events and errors
export type { TrellisEvent, TrellisEventType } from './src/events/trellis-event.js';
export { TrellisError, type TrellisErrorCode, type TrellisErrorCodes, type TrellisErrorKind } from './src/errors/trellis-error.js';

// Tool middleware
export { MIDDLEWARE_OPTIONS, okResult, errorResult } from './src/tools/tool-middleware.js';
export type { ToolMiddleware, ToolMiddlewareClass, ToolInvocation, ToolResult, NextToolHandler, ToolErrorInfo, MiddlewareDeclaration } from './src/tools/tool-middleware.js';
export {
  RetryMiddleware,
  TimeoutMiddleware,
  AuthMiddleware,
  LoggingMiddleware,
  RateLimitMiddleware,
  CacheMiddleware,
  TRELLIS_LOGGER,
  createLogger,
  CLOCK,
} from './plugins/middleware/index.js';

// Models
export { isModelProvider, schemaDialectOf } from './src/models/model-provider.js';
export type { ModelProvider, ModelRequest, ModelResponse, ModelDelta, ChatMessage, ModelToolCall, ToolDefinition, InferenceSettings, Usage, JsonSchema, OutputFormat, SchemaDialect, CompiledSchema, SchemaAwareProvider } from './src/models/model-provider.js';
export { OPENAI_STRICT_DIALECT, ANTHROPIC_DIALECT, ANTHROPIC_PROMPT_DIALECT, CONSERVATIVE_DIALECT } from './src/models/schema-dialects.js';
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
} from './src/models/content-part.js';
export { addUsage, subtractUsage } from './src/models/usage-sum.js';
export { OpenAIModel, type OpenAIModelOptions } from './src/models/openai-model.js';
export { AnthropicModel, type AnthropicModelOptions } from './src/models/anthropic-model.js';
export type { AnthropicPromptCache, CacheBreakpoint } from './src/models/anthropic-messages.js';
export { PART_INLINE_BYTES } from './src/stores/part-blobs.js';
export { FallbackModel } from './src/models/fallback-model.js';
export { ScriptedModel, type ScriptedReply } from './src/models/scripted-model.js';
export { modelFromEnv, type EnvModel } from './src/models/model-from-env.js';

// Stores
export { SESSION_STORE } from './src/stores/session-store.js';
export type { SessionStore, StoredSession, SessionCheckpoint, SessionSummary, TurnRecord } from './src/stores/session-store.js';
export { canLogTurnEvents, TURN_EVENT_LIMITS } from './src/stores/turn-event-log.js';
export { canKeepCredentials, CREDENTIAL_LIMITS, type CredentialStore } from './src/stores/credential-store.js';
export type { TurnEventLog, RecordedTurnEvent, StoredTurnEvents } from './src/stores/turn-event-log.js';
export { canJournalSteps } from './src/stores/step-journal.js';
export type { StepJournal, StepAppend } from './src/stores/step-journal.js';
export { canAudit } from './src/stores/audit-log.js';
export type { AuditLog, AuditEntry, AuditRecord, AuditOutcome, Approver } from './src/stores/audit-log.js';
export { hasRecordStore, type RecordStore, type StoredRecord, type RecordSelector } from './src/stores/record-store.js';
export { verifyAuditChain, argumentsHash, AUDIT_GENESIS, type AuditVerification } from './src/stores/audit-chain.js';
export { CONTRACT_VERSION, type PluginContract } from './src/app/plugin-contract.js';
export { diffContracts, type ContractChange, type ContractDiff } from './src/app/contract-diff.js';
export { MemoryBudgetCounter, RedisBudgetCounter, StoreBudgetCounter, type BudgetCounter, type RedisLike, type RedisPipelineLike } from './src/budgets/budget-counter.js';
export { canCountBudgets, type BudgetCounts } from './src/stores/budget-counts.js';
export { PostgresBudgetCounter, type PostgresBudgetCounterOptions } from './src/budgets/postgres-budget-counter.js';
export type { BudgetLimit, BudgetSettings, BudgetRefusal, BudgetWindow, BudgetPrice, BudgetLimitKind } from './src/budgets/budgets.js';
export type { EraseSelector, EraseRequest, EraseReport, EraseOptions, SessionEraser } from './src/erasure/erasure.js';
export type { ApprovalPolicy, ApprovalSettings, SweepContext } from './src/agent/approval/approval-policy.js';
export type { ExpiryReport } from './src/app/expiry-sweep.js';
export { MemoryStore } from './src/stores/memory-store.js';
export { SqliteStore, DEFAULT_SQLITE_PATH, type SqliteStoreOptions } from './src/stores/sqlite-store.js';
export { diagnoseSqliteStore, type DoctorReport, type DoctorFinding } from './src/stores/sqlite-doctor.js';
export { repairSqliteStore, type RepairReport } from './src/stores/sqlite-repair.js';
export { PostgresStore, DEFAULT_POSTGRES_SCHEMA, type PostgresStoreOptions } from './src/stores/postgres-store.js';
export type { SessionLease, LeaseAdmin, LeaseView, LeaseState } from './src/stores/session-lease.js';
export { canAdministerLeases, LEASE_CLOCK_TOLERANCE_MS } from './src/stores/session-lease.js';


// Validation helpers for DTOs
export { Describe } from './src/validation/describe.decorator.js';
export { checkArgumentShape, checkArgumentSize, MAX_ARGUMENT_CHARS, MAX_ARGUMENT_DEPTH } from './src/validation/argument-limits.js';
export type { FieldError } from './src/validation/field-error.js';

// Built-in plugins: policy
export { PermissionsPlugin, PermissionsConfig, PermissionRule, ArgumentCondition, PermissionPolicy, type PermissionEffect, type PermissionDecision } from './plugins/permissions/index.js';
export { ContentSafetyPlugin, ContentSafetyConfig, RedactionPattern, PiiRedactor, passesLuhn } from './plugins/content-safety/index.js';
export { BillingPlugin, BillingConfig, BillingPlan, UserAccount, BillingAccounts, CREDITS_KEY, billingPrice, type CreditBalances } from './plugins/billing/index.js';
export { ReflectionPlugin, ReflectionConfig, LESSONS_KEY, type Lesson } from './plugins/reflection/index.js';

// Built-in plugins: memory, retrieval, observation
export {
  TranscriptMemory,
  TranscriptMemoryConfig,
  SummarisingMemory,
  SummarisingMemoryConfig,
  SUMMARISER,
  ModelSummariser,
  ContextWindowTransform,
  ContextWindowConfig,
  SemanticRecall,
  SemanticRecallConfig,
  WorkingMemory,
  WorkingMemoryNotes,
  WorkingMemoryConfig,
  workingMemoryPlugin,
  MEMORY_USER_KEY,
  type Summariser,
  type ExchangeRecord,
  type RecalledExchange,
  type RecallHit,
  type WorkingMemoryOptions,
  type WorkingMemoryPluginApi,
} from './plugins/memory/index.js';
export { RagPlugin, RagConfig, EMBEDDING_PROVIDER, OpenAIEmbeddings, VectorIndex, cosineSimilarity, type EmbeddingProvider, type OpenAIEmbeddingsOptions, type Passage } from './plugins/retrieval/index.js';
export { RETRIEVAL_INDEX, PgVectorIndex, RAG_TENANT_KEY, RRF_K, isTenantErasable, type RetrievalIndex, type RetrievalQuery, type RetrievalMode, type IndexHit, type MetadataFilter, type MetadataValue, type TenantErasable, type PgVectorIndexOptions, type IndexDocument, type SqlClient, type PassageHit } from './plugins/retrieval/index.js';
export {
  MetricsPlugin,
  MetricsConfig,
  OpenTelemetryPlugin,
  OpenTelemetryConfig,
  OTEL_TRACER_PROVIDER,
  TokenAccountingPlugin,
  TokenAccountingConfig,
  TOKEN_USAGE_STORE,
  InMemoryTokenUsageStore,
  type TokenUsageStore,
  type TokenTotals,
} from './plugins/observation/index.js';
