import type { ChatMessage, InferenceSettings, ToolDefinition } from '../models/model-provider.js';

/** The request the transform chain and `llm.before` shape before the model call. */
export interface InferenceRequest {
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ToolDefinition[];
  readonly inference: InferenceSettings;
}
