import { anthropicOutputSchema } from '../validation/anthropic-schema.js';
import { conservativeSchema } from '../validation/conservative-schema.js';
import { openAIStrictSchema } from '../validation/openai-strict-schema.js';
import type { RewrittenSchema } from '../validation/schema-rewrite.js';
import type { CompiledSchema, JsonSchema, SchemaDialect } from '../../contract/model-provider.js';

type Compile = (schema: JsonSchema) => CompiledSchema;

/** A compiler whose answers are kept per schema object (schemas are built once per DTO or tool). */
function cached(compile: Compile): Compile {
  const known = new WeakMap<object, CompiledSchema>();
  return (schema) => {
    let compiled = known.get(schema);
    if (compiled === undefined) {
      compiled = Object.freeze(compile(schema));
      known.set(schema, compiled);
    }
    return compiled;
  };
}

const ROOT_PROBLEM = '(root): must be an object (a DTO class); a list or a single value cannot be the schema';

/** The schema as it is, checked only for what no provider takes: a root that is not an object. */
function asIs(schema: JsonSchema): CompiledSchema {
  return {
    schema,
    problems: schema.type === undefined || schema.type === 'object' ? [] : [ROOT_PROBLEM],
    strict: false,
  };
}

function loose(rewritten: RewrittenSchema): CompiledSchema {
  return { ...rewritten, strict: false };
}

/**
 * OpenAI (`OpenAIModel` with `structuredOutput: 'native'`): a tool whose schema strict mode
 * can express goes `strict: true` in the strict dialect (its answers' `null`s for optional
 * fields are mapped back before validation), any other tool as it is; the typed output is
 * `response_format: json_schema, strict: true`, so an output DTO strict mode cannot express
 * is refused.
 */
export const OPENAI_STRICT_DIALECT: SchemaDialect = Object.freeze({
  name: 'openai-strict',
  nativeOutput: true,
  tool: cached((schema) => {
    const strict = openAIStrictSchema(schema);
    return strict.problems.length === 0 ? { schema: strict.schema, problems: [], strict: true } : asIs(schema);
  }),
  output: cached((schema) => ({ ...openAIStrictSchema(schema), strict: true })),
});

/**
 * Anthropic (`AnthropicModel` with `structuredOutput: 'native'`): tools as they are (the
 * Messages API takes JSON Schema for `input_schema`); the typed output is
 * `output_config.format` in Anthropic's structured-output dialect.
 */
export const ANTHROPIC_DIALECT: SchemaDialect = Object.freeze({
  name: 'anthropic',
  nativeOutput: true,
  tool: cached(asIs),
  output: cached((schema) => loose(anthropicOutputSchema(schema))),
});

/** Anthropic with `structuredOutput: 'prompt'`: tools as they are; the typed output asked for in the system prompt. */
export const ANTHROPIC_PROMPT_DIALECT: SchemaDialect = Object.freeze({
  name: 'anthropic-prompt',
  nativeOutput: false,
  tool: ANTHROPIC_DIALECT.tool,
  output: cached(asIs),
});

/**
 * OpenAI-compatible servers (`OpenAIModel` with `structuredOutput: 'prompt'`, the default
 * for a `baseURL` other than OpenAI's): tool schemas in the conservative subset, never
 * strict; the typed output asked for in the system prompt and validated.
 */
export const CONSERVATIVE_DIALECT: SchemaDialect = Object.freeze({
  name: 'conservative',
  nativeOutput: false,
  tool: cached((schema) => loose(conservativeSchema(schema))),
  output: cached(asIs),
});
