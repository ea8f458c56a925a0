/**
 * The OpenTelemetry GenAI semantic-convention attribute names the plugin sets
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/), plus Trellis's own.
 */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  conversationId: 'gen_ai.conversation.id',
  agentName: 'gen_ai.agent.name',
  requestModel: 'gen_ai.request.model',
  requestTemperature: 'gen_ai.request.temperature',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestTopP: 'gen_ai.request.top_p',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  /** Input tokens read from the provider's prompt cache (a part of `input_tokens`). */
  cacheReadInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  /** Input tokens written to the provider's prompt cache (a part of `input_tokens`). */
  cacheCreationInputTokens: 'gen_ai.usage.cache_creation.input_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  errorType: 'error.type',
  turnIndex: 'trellis.turn.index',
  turnStatus: 'trellis.turn.status',
  roundIndex: 'trellis.round.index',
} as const;

/** `gen_ai.operation.name` values. */
export const GEN_AI_OPERATION = {
  agent: 'invoke_agent',
  chat: 'chat',
  tool: 'execute_tool',
} as const;
