import { TrellisError } from '../../errors/trellis-error.js';
import { AnthropicModel } from './anthropic-model.js';
import type { ModelProvider } from '../../contract/model-provider.js';
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
 * model. With both keys set, a `claude-…` model goes to Anthropic. Returns `undefined` when
 * no key is set, so the caller can fall back to a scripted model and say so.
 *
 * @param modelFrom where `TRELLIS_MODEL` came from, for the error below (the CLI passes the config's model as it).
 * @throws TrellisError `InvalidConfig` when the model plainly belongs to the other vendor than
 *   the only key set (a `gpt-…` model with `ANTHROPIC_API_KEY`, a `claude-…` model with
 *   `OPENAI_API_KEY` and no `OPENAI_BASE_URL`): the call would fail at the vendor with a less
 *   helpful answer.
 */
export function modelFromEnv(env: NodeJS.ProcessEnv = process.env, modelFrom = 'TRELLIS_MODEL'): EnvModel | undefined {
  const name = env.TRELLIS_MODEL || undefined;
  const vendor = name === undefined ? undefined : vendorOf(name);
  // An OpenAI-compatible endpoint (OPENAI_BASE_URL) may serve any model name.
  const anthropicByName = vendor === 'anthropic' && !env.OPENAI_BASE_URL;
  if (env.OPENAI_API_KEY && !(anthropicByName && env.ANTHROPIC_API_KEY)) {
    if (anthropicByName)
      throw mismatch(name!, modelFrom, 'Anthropic', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', DEFAULT_OPENAI_MODEL);
    const model = new OpenAIModel({
      model: name ?? DEFAULT_OPENAI_MODEL,
      apiKey: env.OPENAI_API_KEY,
      baseURL: env.OPENAI_BASE_URL || undefined,
    });
    const where = env.OPENAI_BASE_URL ? `OPENAI_API_KEY, OPENAI_BASE_URL=${env.OPENAI_BASE_URL}` : 'OPENAI_API_KEY';
    return { model, label: `${model.name} (${where})` };
  }
  if (env.ANTHROPIC_API_KEY) {
    if (vendor === 'openai')
      throw mismatch(name!, modelFrom, 'OpenAI', 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY', DEFAULT_ANTHROPIC_MODEL);
    const model = new AnthropicModel({ model: name ?? DEFAULT_ANTHROPIC_MODEL, apiKey: env.ANTHROPIC_API_KEY });
    return { model, label: `${model.name} (ANTHROPIC_API_KEY)` };
  }
  return undefined;
}

/** The vendor a model name plainly belongs to, if any (`gpt-4o-mini`, `o3-mini`: OpenAI; `claude-…`: Anthropic). */
function vendorOf(model: string): 'openai' | 'anthropic' | undefined {
  if (/^claude/i.test(model)) return 'anthropic';
  if (/^(gpt-|chatgpt-|o\d(-|$))/i.test(model)) return 'openai';
  return undefined;
}

function mismatch(
  model: string,
  modelFrom: string,
  vendor: string,
  keySet: string,
  keyNeeded: string,
  sameVendorDefault: string,
): TrellisError {
  return new TrellisError(
    'InvalidConfig',
    `The model '${model}' (from ${modelFrom}) is an ${vendor} model, but the only key set is ${keySet}, which calls the other vendor`,
    {
      hint: `Set ${keyNeeded} to use ${model}, or name a model of the key's vendor (e.g. ${sameVendorDefault})`,
    },
  );
}
