import { TaskState, type Message, type Task } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import {
  TrellisError,
  type Decision,
  type PendingApproval,
  type SessionAccess,
  type TurnResult,
} from '../../../index.js';
import type { TurnGuard } from '../ui-turns/turn-access.js';
import { runWatched, type TurnAction, type TurnSession } from '../ui-turns/turn-session.js';
import { a2aMessage, dataOf, dataPart, textOf, textPart } from './a2a-parts.js';

/** Where a task's turns run: the session of an A2A context (a conversation). */
export type A2aSessionResolver = (contextId: string, request: RequestContext) => TurnSession;

/**
 * Runs a Trellis agent behind the A2A SDK's `DefaultRequestHandler`: an A2A context is a
 * session, a task is a turn. The reply streams as the `reply` artifact; a turn whose calls
 * wait for a human ends `input-required` with a status message listing them (text, and a
 * data part `{ pending: [...] }`); the client's next message on that task carries the
 * decision — a data part `{ decision, callId?, args?, message? }` or `{ decisions: [...] }`,
 * or the text `approve` / `reject …` for every waiting call — and continues the turn.
 */
export class TrellisAgentExecutor implements AgentExecutor {
  readonly #running = new Map<string, AbortController>();

  /**
   * @param guard who may send to or decide on a context's session (see `a2aRequestHandler`'s
   * `principal` and `policy`); none: anyone who reaches the endpoint and knows a context id.
   */
  constructor(
    private readonly sessionOf: A2aSessionResolver,
    private readonly guard?: TurnGuard<RequestContext>,
  ) {}

  execute = async (request: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = request;
    const user = request.userMessage;
    const task: Task = request.task ?? {
      id: taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now(), message: undefined },
      artifacts: [],
      history: [user],
      metadata: {},
    };
    bus.publish(AgentEvent.task(task));
    const session = this.sessionOf(contextId, request);
    const continues = request.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    let access: SessionAccess | undefined;
    try {
      access = await this.guard?.(session, continues ? 'decide' : 'send', request, undefined);
    } catch (error) {
      // Nothing of the session is read or run: the caller learns only that they may not.
      const why = TrellisError.is(error) ? `${error.code}: ${error.message}` : 'Internal error';
      return this.#status(
        bus,
        taskId,
        contextId,
        TrellisError.is(error) && error.code === 'Unauthenticated'
          ? TaskState.TASK_STATE_AUTH_REQUIRED
          : TaskState.TASK_STATE_REJECTED,
        why,
      );
    }
    const action = continues
      ? await this.#decisionsOf(session, user)
      : { kind: 'send' as const, message: textOf(user) };
    if (typeof action === 'string')
      return this.#status(bus, taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, action);
    if (action.kind === 'send' && action.message.trim() === '')
      return this.#status(bus, taskId, contextId, TaskState.TASK_STATE_REJECTED, 'The message has no text to answer');
    this.#status(bus, taskId, contextId, TaskState.TASK_STATE_WORKING);
    const cancel = new AbortController();
    this.#running.set(taskId, cancel);
    let streamed = false;
    let finished: TurnResult | undefined;
    let failed: unknown;
    try {
      await runWatched(
        session,
        action,
        {
          event: (event) => {
            if (
              event.type !== 'model.delta' ||
              event.delta.type !== 'text' ||
              event.delta.text === '' ||
              event.sessionId !== session.id
            )
              return;
            bus.publish(
              AgentEvent.artifactUpdate({
                taskId,
                contextId,
                artifact: {
                  artifactId: 'reply',
                  name: 'reply',
                  description: "The agent's reply",
                  parts: [textPart(event.delta.text)],
                  metadata: undefined,
                  extensions: [],
                },
                append: streamed,
                lastChunk: false,
                metadata: undefined,
              }),
            );
            streamed = true;
          },
          result: (result) => void (finished = result),
          error: (error) => void (failed = error),
        },
        { signal: cancel.signal, access },
      );
    } finally {
      this.#running.delete(taskId);
    }
    if (failed !== undefined || !finished) {
      const why = TrellisError.is(failed) ? `${failed.code}: ${failed.message}` : 'Internal error';
      return this.#status(bus, taskId, contextId, TaskState.TASK_STATE_FAILED, why);
    }
    this.#finish(bus, taskId, contextId, finished);
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const running = this.#running.get(taskId);
    if (running) running.abort(new Error('The A2A client cancelled the task'));
    else
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: '',
          status: { state: TaskState.TASK_STATE_CANCELED, timestamp: now(), message: undefined },
          metadata: undefined,
        }),
      );
  };

  #finish(bus: ExecutionEventBus, taskId: string, contextId: string, result: TurnResult): void {
    if (result.reply) {
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: 'reply',
            name: 'reply',
            description: "The agent's reply",
            parts: [textPart(result.reply)],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
    }
    switch (result.status) {
      case 'completed':
      case 'max_rounds':
        return this.#status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED, result.reply ?? '');
      case 'suspended':
        return this.#inputRequired(bus, taskId, contextId, result.suspended ?? []);
      case 'cancelled':
        return this.#status(
          bus,
          taskId,
          contextId,
          TaskState.TASK_STATE_CANCELED,
          result.error?.message ?? 'Cancelled',
        );
      case 'blocked':
        return this.#status(bus, taskId, contextId, TaskState.TASK_STATE_REJECTED, result.error?.message ?? 'Blocked');
      case 'failed':
        return this.#status(
          bus,
          taskId,
          contextId,
          TaskState.TASK_STATE_FAILED,
          result.error ? `${result.error.code}: ${result.error.message}` : 'The turn failed',
        );
    }
  }

  #inputRequired(bus: ExecutionEventBus, taskId: string, contextId: string, pending: readonly PendingApproval[]): void {
    const lines = pending.map((p) => `- ${p.tool} (call ${p.callId}): ${p.ticket.message}`);
    const text = `Approval needed before I go on:\n${lines.join('\n')}\nAnswer "approve" or "reject <why>", or send a data part { decision, callId }.`;
    const data = {
      pending: pending.map((p) => ({
        callId: p.callId,
        tool: p.tool,
        arguments: p.arguments,
        message: p.ticket.message,
        allowedDecisions: p.ticket.allowedDecisions ?? ['approve', 'reject', 'edit'],
      })),
    };
    const message = a2aMessage('agent', [textPart(text), dataPart(data)], { taskId, contextId });
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_INPUT_REQUIRED, timestamp: now(), message },
        metadata: undefined,
      }),
    );
  }

  #status(bus: ExecutionEventBus, taskId: string, contextId: string, state: TaskState, text?: string): void {
    const message: Message | undefined =
      text === undefined ? undefined : a2aMessage('agent', [textPart(text)], { taskId, contextId });
    bus.publish(
      AgentEvent.statusUpdate({ taskId, contextId, status: { state, timestamp: now(), message }, metadata: undefined }),
    );
  }

  /** The decisions a message carries for the waiting calls, or why it carries none (the task stays input-required). */
  async #decisionsOf(session: TurnSession, message: Message): Promise<TurnAction | string> {
    const pending = await session.pending();
    if (pending.length === 0) return { kind: 'send', message: textOf(message) };
    const decisions: Decision[] = [];
    for (const value of dataOf(message)) {
      const entries = isObject(value) && Array.isArray(value.decisions) ? value.decisions : [value];
      for (const entry of entries) {
        if (!isObject(entry) || typeof entry.decision !== 'string') continue;
        const targets = typeof entry.callId === 'string' ? [entry.callId] : pending.map((p) => p.callId);
        for (const callId of targets)
          decisions.push({
            callId,
            decision: entry.decision as Decision['decision'],
            ...(entry.args !== undefined ? { args: entry.args } : {}),
            ...(typeof entry.message === 'string' ? { message: entry.message } : {}),
          });
      }
    }
    if (decisions.length === 0) {
      const text = textOf(message).trim();
      if (/^(approve|approved|yes|ok)\b/i.test(text))
        decisions.push(...pending.map((p) => ({ callId: p.callId, decision: 'approve' as const })));
      else if (/^(reject|rejected|no|deny)\b/i.test(text)) {
        const why = text.replace(/^\S+\s*/, '');
        decisions.push(
          ...pending.map((p) => ({ callId: p.callId, decision: 'reject' as const, ...(why ? { message: why } : {}) })),
        );
      }
    }
    if (decisions.length === 0)
      return 'This task waits for a decision: answer "approve" or "reject <why>", or send a data part { decision, callId }.';
    return { kind: 'resume', decisions };
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const now = () => new Date().toISOString();
