import { redactEvent } from '../events/redact-event.js';
import { Subject, type Observable } from 'rxjs';
import type { Trellis } from '../app/trellis.js';
import { ContextLevel, ContextScope } from '../context/context-scope.js';
import { TrellisError } from '../errors/trellis-error.js';
import type { TrellisEvent } from '../events/trellis-event.js';
import type { ChatMessage } from '../models/model-provider.js';
import { KERNEL_KEYS } from '../state/kernel-keys.js';
import { canReadRevision, type StoredSession } from '../stores/session-store.js';
import type { SessionState } from '../state/session-state.js';
import { executeToolCall, toolMessage } from '../tools/tool-pipeline.js';
import type { Agent } from './agent.js';
import { NEVER_ABORTED } from './never-signal.js';
import { parseSuspension, type SuspensionRecord } from './suspension-record.js';
import type { TurnEnv } from './turn-env.js';
import type { Decision, PendingApproval, TurnResult } from './turn-result.js';
import { cancelled, isControl, replyText, TurnRunner, type TurnEnd } from './turn-runner.js';
import { errorInfo, persistentValues, turnRecord } from './turn-record.js';
import { checkEditedArgs, validateDecisions } from './decisions.js';

export interface SendOptions {
  /** Aborting it stops the model call and running tools; the turn ends `cancelled`. */
  readonly signal?: AbortSignal;
  /** Turn-level host context (`app.*` keys), e.g. the caller's scopes for this message. */
  readonly context?: Readonly<Record<string, unknown>>;
}

export interface ResumeOptions {
  readonly decisions: readonly Decision[];
  readonly signal?: AbortSignal;
}


/**
 * One conversation with an agent. Turns of one session never interleave: a second
 * `send()` waits for the first. With a store, every turn ends in one atomic checkpoint.
 */
export class Session {
  private readonly subject = new Subject<TrellisEvent>();
  /** This session's turn events: model text deltas, rounds, tool calls. */
  readonly events$: Observable<TrellisEvent> = this.subject.asObservable();
  readonly state: SessionState;
  private history: ChatMessage[] = [];
  private turns = 0;
  private storeRevision = 0;
  private suspension: unknown = null;
  private loading: Promise<void> | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly app: Trellis,
    private readonly agent: Agent,
    readonly id: string,
    private readonly context: Readonly<Record<string, unknown>>,
  ) {
    this.state = app.sessionState(id);
  }

  /** The conversation so far (user, assistant and tool messages). */
  get transcript(): readonly ChatMessage[] {
    return this.history;
  }

  /**
   * Whether a turn is waiting for decisions on suspended calls, as far as this object
   * knows: a session reopened from a store knows once it was used; `pending()` asks the store.
   */
  get suspended(): boolean {
    return this.suspension !== null && this.suspension !== undefined;
  }

  /** The calls waiting for a decision, loading the session from the store first if needed. */
  pending(): Promise<readonly PendingApproval[]> {
    return this.serialize(async () => {
      await this.ready();
      return parseSuspension(this.suspension, this.id)?.pending ?? [];
    });
  }

  /** Runs one turn: the message in, the reply (or why there is none) out. */
  send(message: string, options: SendOptions = {}): Promise<TurnResult> {
    if (typeof message !== 'string') {
      return Promise.reject(new TrellisError('InvalidOptions', `session.send() takes a string message, got ${typeof message}`, { hint: 'Pass the user message as text' }));
    }
    return this.serialize(async () => {
      await this.ready();
      this.assertPluginsInstalled();
      if (this.suspended) await this.cancelSuspended();
      return this.runNew(message, options);
    });
  }

  /**
   * Continues a suspended turn with decisions on its parked calls. Approved (or edited)
   * calls run once; rejected calls never run; calls without a decision keep waiting;
   * a decision already applied is ignored.
   */
  resume(options: ResumeOptions): Promise<TurnResult> {
    return this.serialize(async () => {
      await this.ready();
      const record = parseSuspension(this.suspension, this.id);
      if (!record) {
        throw new TrellisError('InvalidDecision', `Session '${this.id}' has no suspended calls to decide on`, {
          hint: 'Decisions apply once; check session.suspended before resuming',
        });
      }
      return this.runResumed(record, options);
    });
  }

  /** Runs `session.end` hooks and forgets the live state; the store keeps the session. */
  async end(): Promise<void> {
    await this.serialize(async () => {
      const run = { scope: new ContextScope(this.state, undefined, undefined), schema: this.app.registry };
      await this.app.hooks.parallel('session.end', this.app.registry.view(this.agent.spec.plugins).hooks['session.end'], { sessionId: this.id }, run);
      this.agent.forget(this.id);
      this.app.releaseSession(this.id);
      this.subject.complete();
    });
  }

  /** An agent naming a plugin that is not installed would silently run without it: refuse. */
  private assertPluginsInstalled(): void {
    const { missing } = this.app.registry.view(this.agent.spec.plugins);
    if (missing.length === 0) return;
    throw new TrellisError('UnknownPlugin', `Agent '${this.agent.spec.name}' lists plugins that are not installed: ${missing.map((m) => `'${m}'`).join(', ')}`, {
      hint: `Installed: ${[...this.app.registry.byName.keys()].join(', ') || 'none'}. Fix the agent's plugins list or install them`,
      details: { missing },
    });
  }

  private async runNew(message: string, options: SendOptions): Promise<TurnResult> {
    const turnIndex = this.turns;
    const env = this.env(new ContextLevel({ ...options.context, [KERNEL_KEYS.turnInput]: message, [KERNEL_KEYS.turnIndex]: turnIndex }), options.signal, turnIndex);
    const startedAt = new Date().toISOString();
    const began = performance.now();
    const saved = this.state.session.values;
    if (env.observed()) env.emit({ type: 'turn.started', sessionId: this.id, turn: turnIndex });
    let end: TurnEnd | undefined;
    let runner: TurnRunner | undefined;
    let input = message;
    let taskStarted = false;
    try {
      const received = await env.hooks.pipeline('message.received', env.view.hooks['message.received'], message, env.run);
      if (isControl(received, 'block')) {
        runner = new TurnRunner(env, this.agent.limits, message, '', this.history, startedAt);
        end = runner.end('blocked', undefined, { code: 'Blocked', message: received.reason });
      } else {
        input = received as string;
        await env.hooks.parallel('task.start', env.view.hooks['task.start'], { input, turn: turnIndex }, env.run);
        taskStarted = true;
        const instructions = (await env.hooks.pipeline('planning.started', env.view.hooks['planning.started'], this.agent.spec.instructions, env.run)) as string;
        runner = new TurnRunner(env, this.agent.limits, input, instructions, this.history, startedAt);
        runner.messages.push({ role: 'user', content: input });
        end = await this.finishReply(env, runner, await runner.loop());
      }
    } catch (error) {
      end = this.failed(error, runner ?? new TurnRunner(env, this.agent.limits, input, '', this.history, startedAt), saved);
    }
    if (taskStarted) end = await this.taskEnd(env, input, end);
    await this.checkpoint(turnIndex, message, end, startedAt);
    if (env.observed()) env.emit({ type: 'turn.finished', sessionId: this.id, turn: turnIndex, status: end.result.status, durationMs: performance.now() - began });
    return end.result;
  }

  private async runResumed(record: SuspensionRecord, options: ResumeOptions): Promise<TurnResult> {
    const fresh = validateDecisions(record, options.decisions, this.id);
    this.assertPluginsInstalled();
    checkEditedArgs(record, fresh, this.app.registry.view(this.agent.spec.plugins).toolsByName);
    const env = this.env(new ContextLevel({ ...record.turn, [KERNEL_KEYS.turnInput]: record.input, [KERNEL_KEYS.turnIndex]: record.turnIndex }), options.signal, record.turnIndex);
    const saved = this.state.session.values;
    const runner = new TurnRunner(env, this.agent.limits, record.input, record.instructions, this.history, record.startedAt);
    runner.restore(record);
    if (fresh.some((d) => d.decision !== 'reject')) await this.claim(record, fresh, runner);
    const began = performance.now();
    if (env.observed()) env.emit({ type: 'turn.started', sessionId: this.id, turn: record.turnIndex });
    let end: TurnEnd;
    try {
      const results = { ...record.results };
      let pending = [...record.pending];
      let done = record.done;
      // Decided but still pending: claimed by a resume that stopped before saving the outcome.
      // It may have run, so it is not run again (at most once); the model is told.
      const decided = new Set(record.decisions.map((d) => d.callId));
      for (const call of pending.filter((p) => decided.has(p.callId))) {
        const error = { code: 'Interrupted', message: 'An approved call was interrupted before its result was saved; it may or may not have run. Check before retrying it', retryable: false };
        results[call.callId] = toolMessage({ ok: false, error });
        runner.toolCalls.push({ callId: call.callId, tool: call.tool, round: record.rounds, ok: false, error, durationMs: 0 });
        pending = pending.filter((p) => p !== call);
      }
      for (const decision of fresh) {
        const call = pending.find((p) => p.callId === decision.callId)!;
        pending = pending.filter((p) => p !== call);
        if (decision.decision === 'reject') {
          const error = { code: 'Rejected', message: decision.message ?? 'A human rejected this call; do not retry it unchanged', retryable: false };
          results[call.callId] = toolMessage({ ok: false, error });
          runner.toolCalls.push({ callId: call.callId, tool: call.tool, round: record.rounds, ok: false, error, durationMs: 0 });
          continue;
        }
        const args = decision.decision === 'edit' ? JSON.stringify(decision.args) : call.arguments;
        const outcome = await executeToolCall(env, { id: call.callId, name: call.tool, arguments: args }, record.rounds, env.view.toolsByName, { approved: true });
        if (outcome.kind !== 'result') continue;
        results[call.callId] = outcome.content;
        runner.toolCalls.push(outcome.record);
        if (outcome.done && done === undefined) done = replyText(outcome.record.value);
      }
      if (pending.length > 0) {
        const next: SuspensionRecord = { ...record, results, pending, decisions: [...record.decisions, ...fresh], toolCalls: runner.toolCalls, turn: runner.turnValues(), ...(done !== undefined && { done }) };
        end = { result: runner.result('suspended', undefined, undefined, pending), append: [], suspension: next };
      } else {
        runner.pushToolMessages(record.calls, results);
        if (done !== undefined) {
          runner.messages.push({ role: 'assistant', content: done });
          end = await this.finishReply(env, runner, runner.end('completed', done));
        } else {
          end = await this.finishReply(env, runner, await runner.loop());
        }
      }
    } catch (error) {
      end = this.failed(error, runner, saved);
    }
    end = await this.taskEnd(env, record.input, end);
    await this.checkpoint(record.turnIndex, record.input, end, record.startedAt);
    if (env.observed()) env.emit({ type: 'turn.finished', sessionId: this.id, turn: record.turnIndex, status: end.result.status, durationMs: performance.now() - began });
    return end.result;
  }

  /**
   * Stores the decisions before any call runs, so that a second process resuming the
   * same turn at the same time fails the revision check instead of running the calls again.
   */
  private async claim(record: SuspensionRecord, fresh: readonly Decision[], runner: TurnRunner): Promise<void> {
    if (!this.app.store) return;
    const claimed: SuspensionRecord = { ...record, decisions: [...record.decisions, ...fresh] };
    try {
      await this.checkpoint(record.turnIndex, record.input, { result: runner.result('suspended', undefined, undefined, record.pending), append: [], suspension: claimed }, record.startedAt);
    } catch (error) {
      if (!TrellisError.is(error, 'StaleState')) throw error;
      this.loading = undefined;
      throw new TrellisError('SessionBusy', `Session '${this.id}' was changed elsewhere (another process resumed or continued it); nothing was run here`, {
        hint: 'Reload the session and check whether the calls still wait for a decision',
        cause: error,
      });
    }
  }

  /** `message.sending` may rewrite or cancel the reply; then `memory.write` sees the exchange. */
  private async finishReply(env: TurnEnv, runner: TurnRunner, end: TurnEnd): Promise<TurnEnd> {
    if (end.result.status !== 'completed' || end.result.reply === undefined) return end;
    const sending = await env.hooks.pipeline('message.sending', env.view.hooks['message.sending'], end.result.reply, env.run);
    if (isControl(sending, 'cancel')) {
      // Like any cancelled turn, nothing is appended: the model must not see a reply the user never got.
      return { result: runner.result('cancelled', undefined, { code: 'ReplyCancelled', message: sending.reason }), append: [], suspension: undefined };
    }
    const reply = sending as string;
    let append = end.append;
    if (reply !== end.result.reply) {
      // The transcript keeps what the user was actually sent.
      append = [...append.slice(0, -1), { role: 'assistant', content: reply }];
    }
    if (this.agent.limits.streamText === 'final' && env.observed()) env.emit({ type: 'model.delta', sessionId: this.id, delta: { type: 'text', text: reply } });
    await env.hooks.pipeline('memory.write', env.view.hooks['memory.write'], { kind: 'exchange', input: runner.input, reply, status: 'completed' }, env.run);
    return { result: { ...end.result, reply }, append, suspension: undefined };
  }

  /** `task.end` always runs; if it throws, the turn fails. */
  private async taskEnd(env: TurnEnv, input: string, end: TurnEnd): Promise<TurnEnd> {
    try {
      await env.hooks.parallel('task.end', env.view.hooks['task.end'], { input, status: end.result.status, reply: end.result.reply }, env.run);
      return end;
    } catch (error) {
      if (end.result.status === 'failed') return end;
      return { result: { ...end.result, status: 'failed', reply: undefined, error: errorInfo(error) }, append: [], suspension: undefined };
    }
  }

  /**
   * A cancelled turn leaves nothing half-written: session values go back to how they were.
   * A failed turn keeps what it committed (each commit was whole), so charges for model
   * calls that happened, or lessons from errors, are not lost with it.
   */
  private failed(error: unknown, runner: TurnRunner, saved: Readonly<Record<string, unknown>>): TurnEnd {
    const isCancel = TrellisError.is(error, 'Cancelled') || (error instanceof Error && error.name === 'AbortError');
    if (isCancel) this.state.restore(saved);
    else this.app.reportError(error, undefined, undefined, this.id);
    return { result: runner.result(isCancel ? 'cancelled' : 'failed', undefined, errorInfo(isCancel ? cancelled() : error)), append: [], suspension: undefined };
  }

  /** A plain message while calls wait for decisions cancels them; the transcript says so. */
  private async cancelSuspended(): Promise<void> {
    let record: SuspensionRecord | undefined;
    try {
      record = parseSuspension(this.suspension, this.id);
    } catch (error) {
      this.app.reportError(error, undefined, undefined, this.id);
    }
    if (!record) {
      this.suspension = null;
      return;
    }
    const note = { code: 'Cancelled', message: 'Cancelled: the user sent a new message before anyone decided on this call', retryable: false };
    const results = { ...record.results };
    for (const call of record.pending) results[call.callId] = toolMessage({ ok: false, error: note });
    const env = this.env(new ContextLevel(), undefined, record.turnIndex);
    const runner = new TurnRunner(env, this.agent.limits, record.input, record.instructions, this.history, record.startedAt);
    runner.restore(record);
    runner.pushToolMessages(record.calls, results);
    const end = runner.end('cancelled', undefined, { code: 'Cancelled', message: 'Suspended calls were cancelled by a new message' });
    await this.checkpoint(record.turnIndex, record.input, end, record.startedAt);
  }

  private env(turn: ContextLevel, signal: AbortSignal | undefined, turnIndex: number): TurnEnv {
    const registry = this.app.registry;
    const bus = this.app.bus;
    const subject = this.subject;
    return {
      hooks: this.app.hooks,
      state: this.app.stateEngine,
      registry,
      view: registry.view(this.agent.spec.plugins),
      run: { scope: new ContextScope(this.state, turn, undefined), schema: registry, signal: signal ?? NEVER_ABORTED },
      sessionId: this.id,
      turnIndex,
      maxToolResultChars: this.agent.spec.maxToolResultChars,
      observed: () => subject.observed || bus.observed,
      emit: (raw) => {
        const event = redactEvent(raw);
        if (subject.observed) subject.next(event);
        bus.emit(event);
      },
    };
  }

  private async checkpoint(turnIndex: number, input: string, end: TurnEnd, startedAt: string): Promise<void> {
    const record = turnRecord(turnIndex, input, end.result, startedAt);
    const suspension = end.suspension ?? null;
    if (this.app.store) {
      this.storeRevision = await this.app.store.checkpoint({
        sessionId: this.id,
        agent: this.agent.spec.name,
        expectedRevision: this.storeRevision,
        state: persistentValues(this.state.session.values, this.app.registry),
        append: end.append,
        turn: record,
        suspension,
      });
    }
    for (const message of end.append) this.history.push(message);
    this.suspension = suspension;
    this.turns = Math.max(this.turns, turnIndex + 1);
  }

  /** Restores the session from the store once, then runs `session.start`. */
  private load(): Promise<void> {
    this.loading ??= (async () => {
      const stored = this.app.store ? await this.app.store.load(this.id) : undefined;
      if (stored) {
        if (stored.agent !== this.agent.spec.name) {
          throw new TrellisError('SessionNotFound', `Session '${this.id}' belongs to agent '${stored.agent}', not '${this.agent.spec.name}'`, {
            hint: 'Open it through the agent that created it, or use another session id',
          });
        }
        this.restore(stored);
      }
      this.state.seed({ ...this.context, [KERNEL_KEYS.sessionId]: this.id });
      const run = { scope: new ContextScope(this.state, undefined, undefined), schema: this.app.registry };
      await this.app.hooks.parallel('session.start', this.app.registry.view(this.agent.spec.plugins).hooks['session.start'], { sessionId: this.id, resumed: stored !== undefined }, run);
    })();
    this.loading.catch(() => (this.loading = undefined));
    return this.loading;
  }

  private restore(stored: StoredSession): void {
    this.history = [...stored.transcript];
    this.turns = stored.turns.reduce((n, t) => Math.max(n, t.index + 1), 0);
    this.storeRevision = stored.revision;
    this.suspension = stored.suspension ?? null;
    this.state.seed(stored.state);
  }

  /** Loads the session on first use; afterwards, reloads it if the store moved on. */
  private async ready(): Promise<void> {
    if (this.loading === undefined) return this.load();
    await this.loading;
    await this.refresh();
  }

  /**
   * Another process may have checkpointed this session since it was loaded here: reload it
   * before a turn rather than run the turn and fail with `StaleState` when saving it.
   */
  private async refresh(): Promise<void> {
    const store = this.app.store;
    if (!store || !canReadRevision(store)) return;
    const revision = await store.revision(this.id);
    if (revision === undefined || revision === this.storeRevision) return;
    const stored = await store.load(this.id);
    if (stored) this.restore(stored);
  }

  private serialize<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
