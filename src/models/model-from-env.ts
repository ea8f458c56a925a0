import { AnthropicModel } from './anthropic-model.js';
import type { ModelProvider } from './model-provider.js';
import { OpenAIModel } from './openai-model.js';

/** A model configured from environment variables, and where it came from, for the user to see. */
export interface EnvModel {
  readonly model: ModelProvider;
  /** e.g. `openai:gpt-4o-mini (OPENAI_API_KEY)`. */
  readonly label: string;
}

/** The OpenAI model used when `TRELLIS_MODEL` is not set. */
export const DEFAULT_OPENAI_MODEL = 'gpt-4o-mini';
/** The Anthropic model used when `TRELLIS_MODEL` is not set. */
export const DEFAULT_ANTHROPIC_MODEL = 'claude-sonnet-4-5';

/**
 * Picks a real model from the environment: `OPENAI_API_KEY` (with `OPENAI_BASE_URL` for any
 * OpenAI-compatible endpoint) first, then `ANTHROPIC_API_KEY`; `TRELLIS_MODEL` names the
 * model. Returns `undefined` when no key is set, so the caller can fall back to a scripted
 * model and say so.
 */
export function modelFromEnv(env: NodeJS.ProcessEnv = process.env): EnvModel | undefined {
  if (env.OPENAI_API_KEY) {
    const model = new OpenAIModel({ model: env.TRELLIS_MODEL || DEFAULT_OPENAI_MODEL, apiKey: env.OPENAI_API_KEY, baseURL: env.OPENAI_BASE_URL || undefined });
    const where = env.OPENAI_BASE_URL ? `OPENAI_API_KEY, OPENAI_BASE_URL=${env.OPENAI_BASE_URL}` : 'OPENAI_API_KEY';
    return { model, label: `${model.name} (${where})` };
  }
  if (env.ANTHROPIC_API_KEY) {
    const model = new AnthropicModel({ model: env.TRELLIS_MODEL || DEFAULT_ANTHROPIC_MODEL, apiKey: env.ANTHROPIC_API_KEY });
    return { model, label: `${model.name} (ANTHROPIC_API_KEY)` };
  }
  return undefined;
}
