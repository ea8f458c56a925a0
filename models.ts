/**
 * Model providers, beyond the classes the root entry has (`OpenAIModel`, `AnthropicModel`,
 * `FallbackModel`, `ScriptedModel`): `import { type SchemaDialect, OPENAI_STRICT_DIALECT } from 'trellis/models'`.
 *
 * What a provider author implements and reads (the `ModelProvider` port, its request and
 * response shapes, schema dialects and compiled schemas), the dialects of the built-in
 * adapters, and the options of the built-in models. See docs/models.md.
 */
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
  OutputFormat,
  SchemaDialect,
  CompiledSchema,
  SchemaAwareProvider,
} from './src/contract/model-provider.js';
export { isModelProvider, schemaDialectOf } from './src/contract/model-provider.js';
export {
  OPENAI_STRICT_DIALECT,
  ANTHROPIC_DIALECT,
  ANTHROPIC_PROMPT_DIALECT,
  CONSERVATIVE_DIALECT,
} from './src/engine/models/schema-dialects.js';
export { outputInstructions } from './src/agent/turn/turn-output.js';
export type { AnthropicPromptCache, CacheBreakpoint } from './src/engine/models/anthropic-messages.js';
export type { FallbackModelOptions, FallbackEvent } from './src/engine/models/fallback-model.js';
