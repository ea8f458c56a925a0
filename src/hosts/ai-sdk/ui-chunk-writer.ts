import type { UIMessageChunk } from 'ai';
import type { PendingApproval, TrellisEvent, TurnResult } from '../../../index.js';
import { redactSecrets } from '../../../plugin.js';

/** The id of a typed answer's `data-output` part: one per assistant message. */
const OUTPUT_PART = 'output';

/** What the `finish` chunk carries as message metadata, for a front end to show. */
export interface TrellisMessageMetadata {
  readonly sessionId: string;
  /** How the turn ended (`completed`, `suspended`, `failed`, …). */
  readonly status: TurnResult['status'];
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number; readonly totalTokens: number };
}

/**
 * Turns one Trellis turn — its events as they come, then its result — into the chunks of
 * the AI SDK's UI message stream: `start-step` / `finish-step` per round, `text-start` /
 * `text-delta` / `text-end` for the model's text, `tool-input-available` when a call starts,
 * `tool-approval-request` when a gate parks it (the approval id is the call id), then
 * `tool-output-available` / `tool-output-error` / `tool-output-denied`, an `error` chunk
 * for a failed turn, a typed turn's answer as a `data-output` part (the object so far on each
 * `output.partial` event, the validated one at the end, all under one id so the client
 * replaces it), and `finish` with {@link TrellisMessageMetadata}. Tools are sent as
 * dynamic tools (`dynamic-tool` parts), since their names are the app's, not the front end's.
 */
export class UiChunkWriter {
  #text: string | undefined;
  #texts = 0;
  #inStep = false;
  #sawText = false;
  readonly #inputs = new Set<string>();
  readonly #outputs = new Set<string>();
  readonly #approvals = new Set<string>();

  constructor(
    private readonly sessionId: string,
    private readonly write: (chunk: UIMessageChunk) => void,
    known: readonly string[] = [],
  ) {
    // Calls the client's message already shows (a resumed turn): updated in place, never added twice.
    for (const callId of known) {
      this.#inputs.add(callId);
      this.#approvals.add(callId);
    }
  }

  /** The opening chunk; a resumed turn continues the assistant message the client has. */
  start(messageId?: string): void {
    this.write(messageId === undefined ? { type: 'start' } : { type: 'start', messageId });
  }

  event(event: TrellisEvent): void {
    // A sub-agent's turn has a session of its own: its text is not this reply.
    if ('sessionId' in event && event.sessionId !== undefined && event.sessionId !== this.sessionId) return;
    switch (event.type) {
      case 'round.started':
        this.#step();
        break;
      case 'round.finished':
        this.#endStep();
        break;
      case 'model.delta':
        if (event.delta.type === 'text' && event.delta.text !== '') this.#delta(event.delta.text);
        break;
      case 'tool.started':
        this.#input(event.callId, event.tool, event.args);
        break;
      case 'tool.suspended':
        this.#approval(event.callId);
        break;
      case 'tool.finished':
        if (!event.ok) this.#failed(event.callId, event.error?.message ?? 'The tool failed');
        break;
      case 'output.partial':
        // A typed answer so far: one `data-output` part, replaced as it grows (same id).
        this.write({ type: 'data-output', id: OUTPUT_PART, data: event.partial });
        break;
      case 'error':
        break;
    }
  }

  /** The turn's end: outputs, the calls waiting for a decision, a failure, and `finish`. */
  result(result: TurnResult): void {
    this.#endText();
    for (const call of result.toolCalls) {
      if (call.ok) this.#output(call.callId, call.tool, call.value);
      else if (call.error.code === 'Rejected' || call.error.code === 'Cancelled') this.#denied(call.callId);
      else this.#failed(call.callId, call.error.message);
    }
    for (const pending of result.suspended ?? []) {
      this.#input(pending.callId, pending.tool, argumentsOf(pending));
      this.#approval(pending.callId, pending.ticket.message);
    }
    if (result.reply && !this.#sawText) {
      // `streamText: 'final'` (or a model that does not stream) sends the reply once, rewritten.
      this.#delta(result.reply);
      this.#endText();
    }
    this.#endStep();
    if (result.output !== undefined)
      this.write({ type: 'data-output', id: OUTPUT_PART, data: JSON.parse(JSON.stringify(result.output)) as unknown });
    if (result.status === 'failed' && result.error)
      this.write({ type: 'error', errorText: `${result.error.code}: ${result.error.message}` });
    const metadata: TrellisMessageMetadata = {
      sessionId: this.sessionId,
      status: result.status,
      usage: {
        inputTokens: result.usage.inputTokens,
        outputTokens: result.usage.outputTokens,
        totalTokens: result.usage.inputTokens + result.usage.outputTokens,
      },
    };
    this.write({ type: 'finish', finishReason: finishReason(result), messageMetadata: metadata });
  }

  /** A request that could not run at all (a busy session, a bad decision): an `error` chunk, then `finish`. */
  failure(message: string): void {
    this.#endText();
    this.#endStep();
    this.write({ type: 'error', errorText: message });
    this.write({ type: 'finish', finishReason: 'error' });
  }

  #step(): void {
    this.#endStep();
    this.write({ type: 'start-step' });
    this.#inStep = true;
  }

  #endStep(): void {
    this.#endText();
    if (!this.#inStep) return;
    this.write({ type: 'finish-step' });
    this.#inStep = false;
  }

  #delta(text: string): void {
    if (!this.#inStep) this.#step();
    if (this.#text === undefined) {
      this.#text = `text-${++this.#texts}`;
      this.write({ type: 'text-start', id: this.#text });
    }
    this.#sawText = true;
    this.write({ type: 'text-delta', id: this.#text, delta: text });
  }

  #endText(): void {
    if (this.#text === undefined) return;
    this.write({ type: 'text-end', id: this.#text });
    this.#text = undefined;
  }

  #input(callId: string, tool: string, args: unknown): void {
    if (this.#inputs.has(callId)) return;
    if (!this.#inStep) this.#step();
    this.#endText();
    this.#inputs.add(callId);
    this.write({
      type: 'tool-input-available',
      toolCallId: callId,
      toolName: tool,
      input: redactSecrets(args ?? {}),
      dynamic: true,
    });
  }

  #approval(callId: string, reason?: string): void {
    if (this.#approvals.has(callId) || !this.#inputs.has(callId)) return;
    this.#approvals.add(callId);
    this.write({
      type: 'tool-approval-request',
      approvalId: callId,
      toolCallId: callId,
      ...(reason ? { reason } : {}),
    });
  }

  #output(callId: string, tool: string, value: unknown): void {
    if (this.#outputs.has(callId)) return;
    this.#input(callId, tool, {});
    this.#outputs.add(callId);
    this.write({
      type: 'tool-output-available',
      toolCallId: callId,
      output: redactSecrets(value ?? null),
      dynamic: true,
    });
  }

  #failed(callId: string, message: string): void {
    if (this.#outputs.has(callId) || !this.#inputs.has(callId)) return;
    this.#outputs.add(callId);
    this.write({ type: 'tool-output-error', toolCallId: callId, errorText: message, dynamic: true });
  }

  #denied(callId: string): void {
    if (this.#outputs.has(callId) || !this.#inputs.has(callId)) return;
    this.#outputs.add(callId);
    this.write({ type: 'tool-output-denied', toolCallId: callId });
  }
}

function argumentsOf(pending: PendingApproval): unknown {
  try {
    return JSON.parse(pending.arguments) as unknown;
  } catch {
    return { arguments: pending.arguments };
  }
}

function finishReason(result: TurnResult): 'stop' | 'tool-calls' | 'length' | 'error' | 'other' {
  switch (result.status) {
    case 'completed':
      return 'stop';
    case 'suspended':
      return 'tool-calls';
    case 'max_rounds':
      return 'length';
    case 'failed':
      return 'error';
    default:
      return 'other';
  }
}
