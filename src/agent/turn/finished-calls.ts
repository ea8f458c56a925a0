import { redactSecrets } from '../../redaction/redactor.js';
import type { ToolCallRecord, ToolErrorInfo } from '../../contract/tool-result.js';

/** What a finished call is known by: the model's call (`ModelToolCall`), whose id and name the record repeats. */
export interface CallName {
  readonly id: string;
  readonly name: string;
}

/** In `#numbers`, in place of `round * 2 + ok`: the call is kept as its whole record. */
const WHOLE = -1;

/**
 * A turn's finished tool calls while the turn runs, kept compact: a turn waiting in its
 * 20th call held 20 `ToolCallRecord`s of 72 B and their `durationMs` as 16-B heap numbers.
 * Here a call costs four slots of 8 B: the model's call (which the transcript keeps anyway)
 * and the value or error, in one list; the duration and `round * 2 + ok`, in a list of
 * numbers only, which V8 stores unboxed. The public records are built by {@link records}
 * where they are read: the turn's result, a suspension record, a handoff. A record that
 * carries more than the compact form holds (a sub-agent's usage, an owner, an id or name other than
 * the call's, a record restored from a suspension) is kept whole.
 */
export class FinishedCalls {
  /** Per call: the call (or the whole record), then its value or error. */
  readonly #refs: unknown[] = [];
  /** Per call: `durationMs`, then `round * 2 + (ok ? 1 : 0)`, or {@link WHOLE}. */
  readonly #numbers: number[] = [];

  get length(): number {
    return this.#numbers.length >> 1;
  }

  /** A call of this turn that ended with `record`. */
  add(call: CallName, record: ToolCallRecord): void {
    if (
      record.usage !== undefined ||
      record.owner !== undefined ||
      record.callId !== call.id ||
      record.tool !== call.name
    ) {
      this.addRecord(record);
      return;
    }
    this.#refs.push(call, record.ok ? record.value : record.error);
    this.#numbers.push(record.durationMs, record.round * 2 + (record.ok ? 1 : 0));
  }

  /** A record as it is (from a suspension record, an earlier agent's runner, or a decision). */
  addRecord(record: ToolCallRecord): void {
    this.#refs.push(record, undefined);
    this.#numbers.push(0, WHOLE);
  }

  /** Every call of `other`, after this one's. */
  addAll(other: FinishedCalls): void {
    this.#refs.push(...other.#refs);
    this.#numbers.push(...other.#numbers);
  }

  /** The tools of the calls that finished in `round`, cheaply (no records are built): what that round's results came from. */
  toolsOfRound(round: number): string[] {
    const refs = this.#refs;
    const numbers = this.#numbers;
    const tools: string[] = [];
    for (let slot = 0; slot < numbers.length; slot += 2) {
      const meta = numbers[slot + 1]!;
      if (meta === WHOLE) {
        const record = refs[slot] as ToolCallRecord;
        if (record.round === round) tools.push(record.tool);
      } else if (meta >> 1 === round) {
        tools.push((refs[slot] as CallName).name);
      }
    }
    return tools;
  }

  /**
   * The public records, in the order the calls finished: `TurnResult.toolCalls`. Values are
   * copies without secrets (by key name, shape and `@Secret()`), as every other sink shows
   * them; the model read the tool's own value.
   */
  records(): ToolCallRecord[] {
    const refs = this.#refs;
    const numbers = this.#numbers;
    const records: ToolCallRecord[] = [];
    for (let slot = 0; slot < numbers.length; slot += 2) {
      const meta = numbers[slot + 1]!;
      if (meta === WHOLE) {
        records.push(refs[slot] as ToolCallRecord);
        continue;
      }
      const call = refs[slot] as CallName;
      const durationMs = numbers[slot]!;
      const round = meta >> 1;
      // The fields in the order the pipeline's records have them (`callEnd`).
      records.push(
        (meta & 1) === 1
          ? { callId: call.id, tool: call.name, round, ok: true, value: redactSecrets(refs[slot + 1]), durationMs }
          : { callId: call.id, tool: call.name, round, ok: false, error: refs[slot + 1] as ToolErrorInfo, durationMs },
      );
    }
    return records;
  }
}
