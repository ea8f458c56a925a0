import { TrellisError } from '../../errors/trellis-error.js';
import type { ChatMessage, OutputFormat } from '../../contract/model-provider.js';
import { dtoJsonSchema } from '../../engine/validation/dto-json-schema.js';
import type { FieldError } from '../../contract/field-error.js';
import { parseOutput } from '../../engine/validation/parse-output.js';
import { formatFieldErrors, INPUT_PATH } from '../../engine/validation/validate-dto.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';

/**
 * A class-validator DTO a turn's typed answer is an instance of (`app.agent({ output })`,
 * `send(message, { output })`): the type parameter is what `result.output` is typed as.
 */
export type OutputClass<T = unknown> = new () => T;

/** A DTO class as a turn asks for it: the class, and the format the model is sent. */
export interface OutputSpec {
  readonly type: OutputClass<object>;
  readonly format: OutputFormat;
}

/** Repair rounds a typed turn gets by default (`AgentSpec.maxOutputRepairs`). */
export const DEFAULT_OUTPUT_REPAIRS = 2;

const specs = new WeakMap<object, OutputSpec>();

/**
 * The output spec of a DTO class, built once per class.
 *
 * @throws TrellisError `InvalidOptions` when `type` is not a class, or a DTO whose schema
 *   cannot be derived (`@ValidateNested()` without `@Type`), with what to change.
 */
export function outputSpecOf(type: unknown, where: string): OutputSpec {
  if (typeof type !== 'function' || type.prototype === undefined) {
    throw new TrellisError(
      'InvalidOptions',
      `${where}: output must be a class-validator DTO class, got ${type === null ? 'null' : typeof type}`,
      {
        hint: 'Pass the class itself, e.g. { output: InvoiceSummary }, whose fields carry class-validator decorators',
      },
    );
  }
  let spec = specs.get(type);
  if (spec === undefined) {
    let schema;
    try {
      schema = dtoJsonSchema(type as OutputClass<object>);
    } catch (error) {
      if (!TrellisError.is(error)) throw error;
      throw new TrellisError(
        'InvalidOptions',
        `${where}: the output DTO ${type.name} cannot be described: ${error.message}`,
        { hint: error.hint, cause: error },
      );
    }
    spec = Object.freeze({
      type: type as OutputClass<object>,
      format: Object.freeze({ name: schemaName(type.name), schema }),
    });
    specs.set(type, spec);
  }
  return spec;
}

/** A name providers accept for a schema (`^[a-zA-Z0-9_-]{1,64}$`). */
function schemaName(name: string): string {
  const safe = name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);
  return safe.length > 0 ? safe : 'output';
}

/** A checked answer: the DTO instance and its plain JSON (what records keep), or what is wrong with it. */
export type CheckedOutput =
  | { readonly ok: true; readonly value: object }
  | { readonly ok: false; readonly errors: readonly FieldError[]; readonly final?: true };

/**
 * One typed turn's answer: checks replies against the DTO, and keeps the repair round in
 * progress — the invalid answer and the note listing its field errors, sent after the turn's
 * messages in the next request only, so the transcript keeps only the answer that counted.
 */
export class TurnOutput {
  /** Repair rounds used so far. */
  repairs = 0;
  /** The invalid answer and the note asking to correct it, for the next request; undefined when none waits. */
  pending: readonly ChatMessage[] | undefined;

  /**
   * @param spec the DTO, or undefined when the turn's DTO (named `name`) was not given to the
   *   process that goes on with it (a turn recovered elsewhere): its answer then cannot be checked.
   */
  constructor(
    readonly spec: OutputSpec | undefined,
    readonly name: string,
    readonly maxRepairs: number,
  ) {}

  /** The reply checked: parsed as JSON and validated against the DTO. */
  check(text: string): CheckedOutput {
    if (this.spec === undefined) {
      return {
        ok: false,
        final: true,
        errors: [
          {
            path: INPUT_PATH,
            messages: [
              `the turn asked for ${this.name}, which was not given to this process: continue it where the DTO is passed (the agent's output, or send(…, { output: ${this.name} }))`,
            ],
          },
        ],
      };
    }
    return parseOutput(this.spec.type, text, this.spec.format.schema);
  }

  /** The user message that asks the model to correct an invalid answer, one line per field. */
  repairNote(errors: readonly FieldError[]): ChatMessage {
    return {
      role: 'user',
      content: `Your answer is not a valid ${this.name}:\n${formatFieldErrors(errors)}\nAnswer again with only the corrected JSON object.`,
    };
  }

  /** What a turn that gave up says: the last answer's field errors. */
  failure(errors: readonly FieldError[]): { code: string; message: string } {
    const rounds = this.repairs === 1 ? '1 repair round' : `${this.repairs} repair rounds`;
    return {
      code: 'OutputInvalid',
      message: `The model's answer is not a valid ${this.name}${this.repairs > 0 ? ` after ${rounds}` : ''}:\n${formatFieldErrors(errors)}`,
    };
  }
}

/**
 * The system prompt's addition for a provider without native structured output: the answer
 * the turn needs, and its JSON Schema.
 */
export function outputInstructions(format: OutputFormat): string {
  return `When you give your final answer (after any tool calls you need), answer with only one JSON object, no other text, that matches this JSON Schema (${format.name}):\n${JSON.stringify(format.schema)}`;
}

/** A checked output as records and hosts keep it: plain JSON. */
export function plainOutput(value: unknown): unknown {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}

/** What a typed turn needs of the agent running it: its `output` DTO and its repair rounds. */
interface OutputAgent {
  readonly output?: OutputSpec;
  readonly limits: { readonly maxOutputRepairs: number };
}

/** A new turn's typed answer: the send's DTO, else the agent's; undefined for an untyped turn. */
export function newOutput(given: OutputSpec | undefined, agent: OutputAgent): TurnOutput | undefined {
  const spec = given ?? agent.output;
  return spec === undefined ? undefined : new TurnOutput(spec, spec.format.name, agent.limits.maxOutputRepairs);
}

/**
 * The typed answer of a stored turn (resumed, or recovered from its journal), whose DTO's
 * name its turn values keep (`trellis.output`): the caller's DTO, else the agent's, when it
 * has that name. Undefined for an untyped turn.
 *
 * @param where set for a caller who must say (`session.resume()`): a DTO of another name, or
 *   none, is refused with `InvalidOptions`. Unset (a recovery, an expiry), the turn goes on
 *   and its answer fails with `OutputInvalid` saying which DTO was missing.
 */
export function storedOutput(
  turn: Readonly<Record<string, unknown>> | undefined,
  given: OutputSpec | undefined,
  agent: OutputAgent,
  where?: string,
): TurnOutput | undefined {
  const name = turn?.[KERNEL_KEYS.output];
  if (typeof name !== 'string') return undefined;
  const spec = [given, agent.output].find((candidate) => candidate?.format.name === name);
  if (where !== undefined && (spec === undefined || (given !== undefined && given !== spec))) {
    throw new TrellisError(
      'InvalidOptions',
      `${where}: the turn waiting here asked for a typed answer of ${name}${given === undefined ? ', and no output DTO of that name was given' : `, not ${given.format.name}`}`,
      {
        hint: `Pass the same DTO again: resume({ …, output: ${name} })`,
      },
    );
  }
  return new TurnOutput(spec, name, agent.limits.maxOutputRepairs);
}
