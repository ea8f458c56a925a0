import { TrellisError } from '../../errors/trellis-error.js';
import { schemaDialectOf, type JsonSchema, type ModelProvider } from '../../contract/model-provider.js';
import type { OutputSpec } from './turn-output.js';

/** A tool's name and the input schema its model is sent. */
export interface SchemaOfTool {
  readonly name: string;
  readonly schema: JsonSchema;
}

/**
 * What each model's schema dialect cannot take of a typed output and of tools' input schemas,
 * one line each, naming the model, the dialect and what to change. Models without a dialect
 * take schemas as they are.
 */
export function schemaProblems(
  models: readonly ModelProvider[],
  output: OutputSpec | undefined,
  tools: readonly SchemaOfTool[],
): string[] {
  const problems: string[] = [];
  for (const model of models) {
    const dialect = schemaDialectOf(model);
    if (dialect === undefined) continue;
    if (output !== undefined)
      for (const problem of dialect.output(output.format.schema).problems)
        problems.push(`output ${output.format.name}, for ${model.name} (${dialect.name}): ${problem}`);
    for (const tool of tools)
      for (const problem of dialect.tool(tool.schema).problems)
        problems.push(`tool ${tool.name}, for ${model.name} (${dialect.name}): ${problem}`);
  }
  return problems;
}

/** The refusal of a schema a model cannot take, before any turn runs. */
export function unsupportedSchema(where: string, problems: readonly string[]): TrellisError {
  return new TrellisError(
    'UnsupportedSchema',
    `${where}: the model cannot take this schema:\n- ${problems.join('\n- ')}`,
    {
      hint: "Change the DTO as each line says; or, for a typed output, set structuredOutput: 'prompt' on the model (the answer is then asked for in the system prompt and validated)",
      details: { problems },
    },
  );
}

/** The models of an agent spec: one, or its fallback list. */
export function modelsOf(model: ModelProvider | readonly ModelProvider[]): readonly ModelProvider[] {
  return Array.isArray(model) ? model : [model as ModelProvider];
}
