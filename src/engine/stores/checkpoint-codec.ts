import { TrellisError } from '../../errors/trellis-error.js';
import type { ChatMessage } from '../../contract/model-provider.js';
import type { SessionCheckpoint, TurnRecord } from './session-store.js';
import type { StepAppend } from './step-journal.js';

/**
 * A checkpoint already turned into JSON text, so nothing can throw halfway through the
 * write: a store encodes first, then opens its transaction.
 */
export interface EncodedCheckpoint {
  readonly state: string;
  readonly suspension: string;
  readonly messages: readonly string[];
  readonly turn: string;
}

/**
 * Encodes the parts of `checkpoint` a store writes as JSON text.
 *
 * @throws TrellisError `InvalidCheckpoint` when the state is not an object or a part is
 *   not JSON-serializable.
 */
export function encodeCheckpoint(checkpoint: SessionCheckpoint): EncodedCheckpoint {
  const { sessionId } = checkpoint;
  if (!isRecord(checkpoint.state)) throw invalidInput(sessionId, 'state', 'it is not an object');
  return {
    state: stringify(checkpoint.state, sessionId, 'state'),
    suspension: stringify(checkpoint.suspension ?? null, sessionId, 'suspension'),
    messages: checkpoint.append.map((message, i) => stringify(message, sessionId, `append[${i}]`)),
    turn: stringify(checkpoint.turn, sessionId, 'turn'),
  };
}

/**
 * A checkpoint encoded for a store that keeps a checkpoint's messages together: the
 * appended messages are one JSON array (one `JSON.stringify`, one row to write).
 */
export interface EncodedBatchCheckpoint extends Omit<EncodedCheckpoint, 'messages'> {
  /** The appended messages as one JSON array. */
  readonly messages: string;
  /** How many messages the array holds. */
  readonly count: number;
}

/**
 * Like {@link encodeCheckpoint}, with the appended messages as one JSON array.
 *
 * @throws TrellisError `InvalidCheckpoint`, naming the message (`append[i]`) that is not
 *   JSON-serializable.
 */
export function encodeBatchCheckpoint(checkpoint: SessionCheckpoint): EncodedBatchCheckpoint {
  const { sessionId, append } = checkpoint;
  if (!isRecord(checkpoint.state)) throw invalidInput(sessionId, 'state', 'it is not an object');
  let messages: string;
  try {
    messages = JSON.stringify(append);
  } catch {
    // Encode one by one to name the message at fault.
    append.forEach((message, i) => stringify(message, sessionId, `append[${i}]`));
    throw invalidInput(sessionId, 'append', 'is not JSON-serializable');
  }
  return {
    state: stringify(checkpoint.state, sessionId, 'state'),
    suspension: stringify(checkpoint.suspension ?? null, sessionId, 'suspension'),
    messages,
    count: append.length,
    turn: stringify(checkpoint.turn, sessionId, 'turn'),
  };
}

/**
 * The steps of one append as one JSON array, checked before the store opens its transaction.
 *
 * @throws TrellisError `InvalidCheckpoint` when there are no steps, or one is not JSON-serializable.
 */
export function encodeSteps(append: StepAppend): string {
  if (!Array.isArray(append.steps) || append.steps.length === 0)
    throw invalidInput(append.sessionId, 'steps', 'must be a non-empty list');
  return stringify(append.steps, append.sessionId, 'steps');
}

/**
 * Reads stored rows back, refusing any that no longer have the shape Trellis wrote, so a
 * damaged row fails the load with `InvalidCheckpoint` rather than return part of a session.
 * `where` names the storage in the hint ("file", "database").
 */
export class StoredRowDecoder {
  constructor(
    private readonly sessionId: string,
    private readonly where: string,
  ) {}

  state(raw: string, column: string): Record<string, unknown> {
    const state = this.parse(raw, column);
    if (!isRecord(state)) throw this.invalid(column, 'not a JSON object');
    return state;
  }

  message(raw: string, seq: number, table: string): ChatMessage {
    const column = `${table}.message (seq ${seq})`;
    const parsed = this.parse(raw, column);
    if (!isChatMessage(parsed)) throw this.invalid(column, 'not a chat message');
    return parsed as ChatMessage;
  }

  /**
   * The messages of one stored batch (a JSON array) whose first message is transcript index
   * `seq`. A row that is not an array names the batch; a bad element names its own index.
   */
  messageBatch(raw: string, seq: number, table: string): ChatMessage[] {
    const column = `${table}.messages (batch from seq ${seq})`;
    const parsed = this.parse(raw, column);
    if (!Array.isArray(parsed)) throw this.invalid(column, 'not a JSON array of messages');
    for (let i = 0; i < parsed.length; i++) {
      if (!isChatMessage(parsed[i])) throw this.invalid(`${table}.messages (seq ${seq + i})`, 'not a chat message');
    }
    return parsed as ChatMessage[];
  }

  /** The steps of one stored append (a JSON array), numbered by the row that holds them. */
  steps(raw: string, row: number | string, table: string): unknown[] {
    const column = `${table}.steps (row ${row})`;
    const parsed = this.parse(raw, column);
    if (!Array.isArray(parsed)) throw this.invalid(column, 'not a JSON array of steps');
    return parsed;
  }

  /** A stored transcript that does not add up: a batch missing, or a count that disagrees. */
  transcriptGap(column: string, problem: string): TrellisError {
    return this.invalid(column, problem);
  }

  turn(raw: string, index: number, table: string): TurnRecord {
    const column = `${table}.record (index ${index})`;
    const parsed = this.parse(raw, column);
    if (!isRecord(parsed) || parsed.index !== index) throw this.invalid(column, 'not the turn record of this index');
    return parsed as unknown as TurnRecord;
  }

  parse(raw: string, column: string): unknown {
    try {
      return JSON.parse(raw);
    } catch {
      throw this.invalid(column, 'not valid JSON');
    }
  }

  private invalid(column: string, problem: string): TrellisError {
    return new TrellisError(
      'InvalidCheckpoint',
      `Stored session "${this.sessionId}" cannot be read: ${column} is ${problem}`,
      {
        hint: `The ${this.where} was changed outside Trellis or is damaged; restore it from a backup, or delete this session (trellis sessions delete ${this.sessionId}, or store.delete('${this.sessionId}')) and check the store with: trellis doctor`,
        kind: 'system',
        details: { sessionId: this.sessionId, column },
      },
    );
  }
}

function stringify(value: unknown, sessionId: string, field: string): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    throw invalidInput(
      sessionId,
      field,
      `it is not JSON-serializable (${error instanceof Error ? error.message : String(error)})`,
    );
  }
}

function invalidInput(sessionId: string, field: string, problem: string): TrellisError {
  return new TrellisError(
    'InvalidCheckpoint',
    `Checkpoint of session "${sessionId}" cannot be stored: ${field} ${problem}`,
    {
      hint: 'Keep session state, messages and suspension tickets to plain JSON values',
      details: { sessionId, field },
    },
  );
}

function isChatMessage(value: unknown): boolean {
  return isRecord(value) && typeof value.role === 'string' && typeof value.content === 'string';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
