import { EventType, type BaseEvent, type Interrupt, type RunFinishedOutcome } from '@ag-ui/core';
import type { TrellisEvent, TurnResult } from '../../../index.js';
import { redactSecrets } from '../../../plugin.js';

/** The `reason` of the interrupt a parked call becomes. */
export const TOOL_APPROVAL = 'tool_approval';

/**
 * Turns one Trellis turn into AG-UI events: `RUN_STARTED`, a `STEP_STARTED` /
 * `STEP_FINISHED` pair per round, `TEXT_MESSAGE_START` / `_CONTENT` / `_END` for the model's
 * text, `TOOL_CALL_START` / `_ARGS` / `_END` when a call starts, `TOOL_CALL_RESULT` when it
 * ended, and `RUN_FINISHED` — with the `interrupt` outcome listing each call a gate parked
 * (interrupt id = call id, reason {@link TOOL_APPROVAL}), usage per model — or `RUN_ERROR`.
 */
export class AgUiEventWriter {
  #text: string | undefined;
  #texts = 0;
  #step: string | undefined;
  #sawText = false;
  readonly #calls = new Set<string>();
  readonly #results = new Set<string>();

  constructor(
    private readonly sessionId: string,
    private readonly threadId: string,
    private readonly runId: string,
    private readonly write: (event: BaseEvent) => void,
  ) {}

  start(): void {
    this.write({ type: EventType.RUN_STARTED, threadId: this.threadId, runId: this.runId, protocolVersion: '1.0' });
  }

  event(event: TrellisEvent): void {
    if ('sessionId' in event && event.sessionId !== undefined && event.sessionId !== this.sessionId) return;
    switch (event.type) {
      case 'round.started':
        this.#endStep();
        this.#step = `round ${event.round}`;
        this.write({ type: EventType.STEP_STARTED, stepName: this.#step });
        break;
      case 'round.finished':
        this.#endStep();
        break;
      case 'model.delta':
        if (event.delta.type === 'text' && event.delta.text !== '') this.#delta(event.delta.text);
        break;
      case 'tool.started':
        this.#call(event.callId, event.tool, event.args);
        break;
      case 'output.partial':
        // A typed answer so far (AG-UI has no event of its own for it).
        this.write({ type: EventType.CUSTOM, name: 'trellis.output.partial', value: event.partial });
        break;
    }
  }

  result(result: TurnResult): void {
    this.#endText();
    for (const call of result.toolCalls) {
      if (!this.#calls.has(call.callId) || this.#results.has(call.callId)) continue;
      this.#results.add(call.callId);
      const content = call.ok
        ? typeof call.value === 'string'
          ? call.value
          : JSON.stringify(redactSecrets(call.value ?? null))
        : JSON.stringify({ error: call.error });
      this.write({
        type: EventType.TOOL_CALL_RESULT,
        messageId: `${this.runId}:result:${call.callId}`,
        toolCallId: call.callId,
        content,
        role: 'tool',
      });
    }
    if (result.reply && !this.#sawText) {
      this.#delta(result.reply);
      this.#endText();
    }
    this.#endStep();
    if (result.status === 'failed') {
      this.write({
        type: EventType.RUN_ERROR,
        message: result.error?.message ?? 'The turn failed',
        code: result.error?.code,
      });
      return;
    }
    const interrupts: Interrupt[] = (result.suspended ?? []).map((p) => ({
      id: p.callId,
      reason: TOOL_APPROVAL,
      message: p.ticket.message,
      toolCallId: p.callId,
      responseSchema: APPROVAL_SCHEMA,
      metadata: {
        tool: p.tool,
        arguments: p.arguments,
        allowedDecisions: p.ticket.allowedDecisions ?? ['approve', 'reject', 'edit'],
      },
    }));
    const outcome: RunFinishedOutcome =
      interrupts.length > 0
        ? { type: 'interrupt', interrupts }
        : result.status === 'cancelled'
          ? { type: 'cancelled' }
          : { type: 'success' };
    const usage = Object.entries(result.usage.byModel).map(([model, u]) => ({
      model,
      inputTokens: u.inputTokens,
      outputTokens: u.outputTokens,
    }));
    this.write({
      type: EventType.RUN_FINISHED,
      threadId: this.threadId,
      runId: this.runId,
      outcome,
      usage,
      result: {
        status: result.status,
        reply: result.reply,
        ...(result.output !== undefined && { output: JSON.parse(JSON.stringify(result.output)) as unknown }),
      },
    });
  }

  failure(code: string, message: string): void {
    this.#endText();
    this.#endStep();
    this.write({ type: EventType.RUN_ERROR, message, code });
  }

  #delta(text: string): void {
    if (this.#text === undefined) {
      this.#text = `${this.runId}:text:${++this.#texts}`;
      this.write({ type: EventType.TEXT_MESSAGE_START, messageId: this.#text, role: 'assistant' });
    }
    this.#sawText = true;
    this.write({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: this.#text, delta: text });
  }

  #endText(): void {
    if (this.#text === undefined) return;
    this.write({ type: EventType.TEXT_MESSAGE_END, messageId: this.#text });
    this.#text = undefined;
  }

  #endStep(): void {
    this.#endText();
    if (this.#step === undefined) return;
    this.write({ type: EventType.STEP_FINISHED, stepName: this.#step });
    this.#step = undefined;
  }

  #call(callId: string, tool: string, args: unknown): void {
    if (this.#calls.has(callId)) return;
    this.#endText();
    this.#calls.add(callId);
    this.write({ type: EventType.TOOL_CALL_START, toolCallId: callId, toolCallName: tool });
    this.write({
      type: EventType.TOOL_CALL_ARGS,
      toolCallId: callId,
      delta: JSON.stringify(redactSecrets(args ?? {})),
    });
    this.write({ type: EventType.TOOL_CALL_END, toolCallId: callId });
  }
}

/** What a resume entry's payload for a tool approval may say. */
export const APPROVAL_SCHEMA = {
  type: 'object',
  properties: {
    decision: { enum: ['approve', 'reject', 'edit'] },
    args: { type: 'object', description: "With 'edit': the arguments to run the call with instead" },
    message: { type: 'string', description: "With 'reject': what the model is told" },
  },
  required: ['decision'],
} as const;
