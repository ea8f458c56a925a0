import { randomUUID } from 'node:crypto';
import { normalizeParts, partsText, type ContentPart, type ContentPartInput } from '../contract/content-part.js';
import type { Observable } from 'rxjs';
import { ContextScope } from '../engine/state/context-scope.js';
import { TrellisError } from '../errors/trellis-error.js';
import type { TrellisEvent } from '../engine/events/trellis-event.js';
import type { ChatMessage } from '../contract/model-provider.js';
import { KERNEL_KEYS } from '../contract/kernel-keys.js';
import { runNewTurn } from './turn/new-turn.js';
import { cancelSuspended, runResumedTurn, type CancelCause } from './durability/resumed-turn.js';
import type { AgentBinding, DelegateSession, SessionHost } from './session-host.js';
import { leaseHolder, leasesOf, leaseTtlProblem, waitForLeaseProblem, withLease } from './durability/session-lease.js';
import { SessionEvents } from './session-events.js';
import { SessionSync } from './durability/session-sync.js';
import {
  isHostKey,
  parseSuspension,
  suspendedTurnMessages,
  type SuspensionRecord,
} from './durability/suspension-record.js';
import type { SessionParts } from './turn/turn-envelope.js';
import type { DelegationFrame } from '../contract/delegation.js';
import type { ActiveAgent } from './delegation/handoff-continuation.js';
import type { Decision, PendingApproval, TurnResult } from './turn/turn-result.js';
import { callToolDirectly, type DirectCallOptions, type DirectCallResult } from './direct-tool-call.js';
import { reviewJournal } from './durability/call-journal.js';
import { withDeepPending } from './delegation/delegated-pending.js';
import { delegationFor } from './delegation/delegation-extension.js';
import { DELEGATE } from './delegation/delegate-handle.js';
import { runRecoveredTurn } from './durability/recovered-turn.js';
import { openStepOf, parseSteps } from './durability/turn-steps.js';
import type { TurnRecord } from '../engine/stores/session-store.js';
import { totalUsage } from './turn/turn-runner.js';
import { TurnStopper } from '../engine/context/turn-stopper.js';
import type { Approver } from '../engine/stores/audit-log.js';
import { checkApprover } from './approval/approval-review.js';
import { expiredCalls } from './approval/expiry.js';
import { accessProblem, enforceAccess, ownerOf, type SessionAccess } from './session-owner.js';
import { outputSpecOf, storedOutput, type OutputClass, type OutputSpec } from './turn/turn-output.js';
import { modelsOf, schemaProblems, unsupportedSchema } from './turn/schema-check.js';
import { validateDto } from '../engine/validation/validate-dto.js';

export interface SendOptions {
  /** Aborting it stops the model call and running tools; the turn ends `cancelled`. */
  readonly signal?: AbortSignal;
  /** Turn-level host context (`app.*` keys), e.g. the caller's scopes for this message. */
  readonly context?: Readonly<Record<string, unknown>>;
  /**
   * With a store that has leases: wait up to this many milliseconds for another writer's
   * turn on this session to end, instead of failing at once with `SessionBusy`. A finite
   * number, 0 or more (anything else is refused with `InvalidOptions`, whatever the store).
   */
  readonly waitForLease?: number;
  /**
   * The caller's id for this turn, unique within the session: a message id, a request id, a
   * queued job's key. It is kept in the turn's record and step journal. A send whose key the
   * session already recorded answers with that turn (its status, reply, rounds and usage from
   * the record; `toolCalls` empty) and runs nothing; one whose turn a crash cut off goes on
   * with that turn from its journal. Default: a new id for every send. At most 512 characters.
   */
  readonly key?: string;
  /**
   * With a store that has leases: the lease this turn holds on the session lasts this long
   * without renewal (renewed every third of it) instead of the app's `leaseTtlMs` — a queue
   * worker sets its own, so a killed worker's turn goes on after it. 1,000 to 86,400,000 ms.
   */
  readonly leaseTtlMs?: number;
  /**
   * The caller and the owner a host checked their access against (see {@link SessionAccess}):
   * checked again under the session's lease before anything runs (`AuthDenied` when the owner
   * changed meanwhile); a session without an owner gets the caller as its owner.
   */
  readonly access?: SessionAccess;
  /**
   * A class-validator DTO this turn's final answer must be, instead of the agent's `output`:
   * `result.output` is then its instance (typed as it). Checked against the agent's models
   * before anything runs (`UnsupportedSchema`, `InvalidOptions`).
   */
  readonly output?: OutputClass;
}

export interface ResumeOptions {
  readonly decisions: readonly Decision[];
  readonly signal?: AbortSignal;
  /** Turn-level host context for the resumed turn (the one it was suspended with is not stored). */
  readonly context?: Readonly<Record<string, unknown>>;
  /** As in `send`: wait for another writer's lease this long. */
  readonly waitForLease?: number;
  /**
   * Who is deciding, as the host vouches for them (the authenticated user of the request, the
   * CLI's configured identity): approval policies check it, and the audit log records it.
   * Never take it from the request body.
   */
  readonly approver?: Approver;
  /**
   * The caller's id for this resume (a queued job's key): when a crash cut off the turn this
   * resume continued, a resume with the same key goes on with it and answers with its end.
   */
  readonly key?: string;
  /** As in `send`: the lease this resume holds lasts this long without renewal. */
  readonly leaseTtlMs?: number;
  /** As in `send`, without giving the session an owner. */
  readonly access?: SessionAccess;
  /**
   * The DTO of a typed turn that a `send(…, { output })` started: pass it again (the class
   * cannot be stored). Default: the agent's `output`. A resume of a typed turn whose DTO is
   * neither is refused with `InvalidOptions` before anything runs.
   */
  readonly output?: OutputClass;
}

const NO_MESSAGES: readonly ChatMessage[] = [];

/**
 * One conversation with an agent. Turns of one session never interleave: a second
 * `send()` waits for the first, and with a store that has leases, a second process gets
 * `SessionBusy` (or waits) before anything runs. With a store, every turn ends in one
 * atomic checkpoint.
 */
export class Session<TOutput = unknown> {
  /** Host, agent, state, sync and event stream, in the one record its turns take (not in fields of their own as well). */
  readonly #parts: SessionParts;
  #holder: string | undefined;
  #hostContext: Readonly<Record<string, unknown>>;
  #queue: Promise<unknown> = IDLE;
  #pending = 0;
  /** How the turn running now (a send or a resume) is stopped; undefined between turns. */
  #running: TurnStopper | undefined;

  /**
   * Not for applications: a session is opened with `agent.session(id, options)`. (Not
   * marked internal: the published declarations would then offer a constructor without arguments.)
   */
  constructor(
    host: SessionHost,
    agent: AgentBinding,
    readonly id: string,
    context: Readonly<Record<string, unknown>>,
  ) {
    this.#hostContext = context;
    this.#parts = {
      host,
      agent,
      id,
      state: host.sessionState(id),
      sync: new SessionSync(host, agent, id),
      subject: new SessionEvents(),
      extension: delegationFor(agent.spec, false),
    };
  }

  /** This session's turn events: model text deltas, rounds, tool calls. */
  get events$(): Observable<TrellisEvent> {
    return this.#parts.subject.events$;
  }

  /**
   * The session-level values committed so far: plugins' session keys, host context and
   * kernel keys. Host code sees everything; plugins see only their cropped `ctx`.
   */
  get values(): Readonly<Record<string, unknown>> {
    return this.#parts.state.session.values;
  }

  /**
   * The principal that opened the session (the `access.principal` of its first turn), as far
   * as this object knows: `pending()` reads the store first. Undefined for a session nobody owns.
   */
  get owner(): string | undefined {
    return ownerOf(this.#parts);
  }

  /** The session state's revision: one more for every commit. */
  get revision(): number {
    return this.#parts.state.revision;
  }

  /** The conversation so far (user, assistant and tool messages) of the turns that ended. */
  get transcript(): readonly ChatMessage[] {
    return this.#parts.sync.history;
  }

  /**
   * The messages of the turn that waits for decisions, empty when none does: the user's
   * message, the model's replies up to the one that asked for the waiting calls, and the
   * results of that round's calls that finished. They join {@link transcript} when the turn
   * ends; until then a client shows them after it, so the waiting call has its reason.
   */
  get pendingMessages(): readonly ChatMessage[] {
    const { suspension } = this.#parts.sync;
    return suspension === null || suspension === undefined ? NO_MESSAGES : suspendedTurnMessages(suspension);
  }

  /**
   * Whether a turn is waiting for decisions on suspended calls, as far as this object
   * knows: a session reopened from a store knows once it was used; `pending()` asks the store.
   */
  get suspended(): boolean {
    return this.#parts.sync.suspension !== null && this.#parts.sync.suspension !== undefined;
  }

  /**
   * The calls waiting for a decision, loading the session from the store first if needed,
   * as `resume` will take them: an approved call that a crash cut off mid-run waits for
   * `retry` or `skip` (see {@link reviewJournal}); a call waiting inside a sub-agent is shown
   * as its child session sees it.
   */
  pending(): Promise<readonly PendingApproval[]> {
    return this.#serialize(async () => {
      await this.#ready();
      const record = parseSuspension(this.#parts.sync.suspension, this.id);
      if (!record) return [];
      const reviewed = reviewJournal(
        record,
        this.#parts.host.registry.view(this.#parts.agent.spec.plugins).toolsByName,
      ).record;
      return withDeepPending(this.#parts, reviewed);
    });
  }

  /**
   * Runs one turn: the message in, the reply (or why there is none) out. The message is
   * text, or parts (text, images, files): hooks and memory see the text parts joined, the
   * model sees every part.
   *
   * @example
   * await session.send([{ type: 'text', text: 'What is the total?' }, { type: 'image', data: png, mediaType: 'image/png' }]);
   */
  send<T>(
    message: string | readonly ContentPartInput[],
    options: SendOptions & { readonly output: OutputClass<T> },
  ): Promise<TurnResult<T>>;
  send(message: string | readonly ContentPartInput[], options?: SendOptions): Promise<TurnResult<TOutput>>;
  send(message: string | readonly ContentPartInput[], options: SendOptions = {}): Promise<TurnResult> {
    if (typeof message === 'string' || !Array.isArray(message))
      return this.#send(message as string, options, undefined);
    let parts: ContentPart[];
    try {
      parts = normalizeParts(message, 'session.send()');
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#send(
      partsText(parts),
      options,
      undefined,
      parts.some((part) => part.type !== 'text') ? parts : undefined,
    );
  }

  #send(
    message: string,
    options: SendOptions,
    delegation: DelegationFrame | undefined,
    parts?: readonly ContentPart[],
  ): Promise<TurnResult> {
    if (typeof message !== 'string') {
      return Promise.reject(
        new TrellisError(
          'InvalidOptions',
          `session.send() takes a string message or an array of parts, got ${typeof message}`,
          { hint: 'Pass the user message as text, or as [{ type: "text", text }, { type: "image", … }]' },
        ),
      );
    }
    const keyProblem = turnKeyProblem(options.key, 'session.send()') ?? accessProblem(options.access, 'session.send()');
    if (keyProblem) return Promise.reject(keyProblem);
    let output: OutputSpec | undefined;
    try {
      output = this.#sendOutput(options.output);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#serialize(() =>
      this.#stoppable(options.signal, (stopper) =>
        this.#leased('send()', options.waitForLease, options.leaseTtlMs, () => {
          // No async frame: the turn's own promise is what the queue waits on.
          const ready = this.#ready();
          if (ready instanceof Promise)
            return ready.then(() => this.#newTurn(message, options, delegation, stopper, parts, output));
          return this.#newTurn(message, options, delegation, stopper, parts, output);
        }),
      ),
    );
  }

  /**
   * Stops the turn running on this session in this process (a `send` or a `resume` that has
   * begun; one waiting behind it is not touched): the model call is aborted, a tool call that
   * is running is aborted when the turn was given a signal (a queued job's turn always is) and
   * otherwise finishes, no further step starts, and the turn ends `cancelled`. With
   * `keepSteps` (the default) the steps it completed join the transcript — the user's message,
   * the model's replies, the finished calls' results, each unfinished call answered
   * `Cancelled` — and what they committed stays; with `keepSteps: false` the turn is rolled
   * back: nothing joins the transcript and session values return to how they were.
   *
   * @returns whether a turn was running (and is now stopping).
   * @example
   * const reply = session.send('Write a long report');
   * session.cancel();                        // (await reply).status === 'cancelled'
   */
  cancel(options: { readonly keepSteps?: boolean } = {}): boolean {
    const stopper = this.#running;
    return stopper !== undefined && stopper.stop(options.keepSteps !== false);
  }

  /**
   * For a process about to exit while a turn runs here (the CLI's second Ctrl-C): gives up
   * the session's store lease at once rather than leave it to expire, so another process can
   * go on with the session right away. The running turn is not waited for, and once the lease
   * is gone the store refuses its writes (`LeaseLost`): the session stays as its journal has
   * it, and a call cut off mid-run comes back as a `retry` / `skip` decision, as after a crash.
   *
   * @returns whether a lease was given up (false: no turn holds one here, or the store has none).
   */
  abandon(): Promise<boolean> {
    return this.#parts.sync.abandonLease();
  }

  /** Runs `work` as the session's running turn: `cancel()` reaches it through its stopper. */
  #stoppable<T>(signal: AbortSignal | undefined, work: (stopper: TurnStopper) => Promise<T>): Promise<T> {
    const stopper = new TurnStopper(signal);
    this.#running = stopper;
    const ended = () => {
      stopper.dispose();
      if (this.#running === stopper) this.#running = undefined;
    };
    let running: Promise<T>;
    try {
      running = work(stopper);
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(ended, ended);
    return running;
  }

  /** A send's own `output` DTO, checked against the agent's models before anything runs. */
  #sendOutput(given: OutputClass | undefined): OutputSpec | undefined {
    if (given === undefined) return undefined;
    const spec = outputSpecOf(given, 'session.send()');
    if (spec !== this.#parts.agent.output) {
      const problems = schemaProblems(modelsOf(this.#parts.agent.spec.model), spec, []);
      if (problems.length > 0) throw unsupportedSchema('session.send()', problems);
    }
    return spec;
  }

  #newTurn(
    message: string,
    options: SendOptions,
    delegation: DelegationFrame | undefined,
    stopper: TurnStopper,
    parts?: readonly ContentPart[],
    output?: OutputSpec,
  ): Promise<TurnResult> {
    this.#assertPluginsInstalled();
    enforceAccess(this.#parts, options.access, true);
    const sync = this.#parts.sync;
    const { key } = options;
    if (key !== undefined) {
      // This turn ran already (a retried request, a retried job): its record is the answer.
      const recorded = sync.recorded(key);
      if (recorded !== undefined) return Promise.resolve(this.#resultOf(recorded, output));
    }
    if (sync.steps !== undefined) {
      // A turn a crash cut off goes on first: it is this one (the same key), or it comes before this one.
      const steps = parseSteps(sync.steps, this.id);
      const same = key !== undefined && openStepOf(steps).key === key;
      const recovering = runRecoveredTurn(this.#activeParts(delegation), steps, {
        context: options.context,
        signal: stopper,
        keepsLease: !same,
        output: same ? output : undefined,
      });
      if (same) return recovering;
      return recovering.then(() => this.#newTurn(message, options, delegation, stopper, parts, output));
    }
    // A new message cancels the waiting calls first; then the session is no longer suspended.
    if (this.suspended)
      return this.#cancelSuspended('message').then(() =>
        this.#newTurn(message, options, delegation, stopper, parts, output),
      );
    return runNewTurn(this.#activeParts(delegation), {
      message,
      parts,
      context: options.context,
      signal: stopper,
      key: key ?? (sync.journals || this.#parts.host.store !== undefined ? randomUUID() : undefined),
      output,
    });
  }

  /**
   * A recorded turn as `send` answers it: what its record keeps, and what waits now if it is
   * suspended; a typed turn's output as the DTO (the send's, else the agent's) builds it again.
   */
  #resultOf(record: TurnRecord, given: OutputSpec | undefined): TurnResult {
    const waiting = record.status === 'suspended' ? parseSuspension(this.#parts.sync.suspension, this.id) : undefined;
    const suspended =
      waiting === undefined
        ? undefined
        : reviewJournal(waiting, this.#parts.host.registry.view(this.#parts.agent.spec.plugins).toolsByName).record
            .pending;
    let output = record.output;
    const dto = (given ?? this.#parts.agent.output)?.type;
    if (output !== undefined && dto !== undefined) {
      const rebuilt = validateDto(dto, output, { forbidUnknown: false });
      if (rebuilt.ok) output = rebuilt.value;
    }
    return {
      status: record.status,
      reply: record.reply,
      rounds: record.rounds,
      toolCalls: [],
      usage: totalUsage(record.usage),
      ...(output !== undefined && { output }),
      ...(suspended !== undefined && { suspended }),
      ...(record.error !== undefined && { error: record.error }),
    };
  }

  /** Goes on with a turn a crash cut off, if the session has one; its result, or undefined. */
  async #recoverFirst(
    options: {
      readonly context?: Readonly<Record<string, unknown>>;
      readonly signal?: AbortSignal | TurnStopper;
      readonly output?: OutputClass;
    },
    delegation: DelegationFrame | undefined,
  ): Promise<{ result: TurnResult; resumedBy: string | undefined } | undefined> {
    const sync = this.#parts.sync;
    if (sync.steps === undefined) return undefined;
    const steps = parseSteps(sync.steps, this.id);
    // The caller's own work follows (or the recovered turn is its answer, and the lease is released after it).
    const result = await runRecoveredTurn(this.#activeParts(delegation), steps, {
      context: options.context,
      signal: options.signal,
      keepsLease: true,
      output: options.output === undefined ? undefined : outputSpecOf(options.output, 'session.resume()'),
    });
    return { result, resumedBy: openStepOf(steps).resumedBy };
  }

  /**
   * Continues a suspended turn with decisions on its parked calls. Approved (or edited)
   * calls run once; rejected calls never run; calls without a decision keep waiting;
   * a decision already applied is ignored.
   */
  resume<T>(options: ResumeOptions & { readonly output: OutputClass<T> }): Promise<TurnResult<T>>;
  resume(options: ResumeOptions): Promise<TurnResult<TOutput>>;
  resume(options: ResumeOptions): Promise<TurnResult> {
    return this.#resume(options, undefined);
  }

  /**
   * Rejects the waiting calls whose approval policy's `expiresAfterMs` ran out, and goes on
   * with the turn (the model is told each was not approved in time). Call it from a timer or
   * a heartbeat; `resume` does the same for expired calls first.
   *
   * @returns the resumed turn's result, or undefined when no waiting call has expired.
   */
  expirePending(
    options: { readonly waitForLease?: number; readonly signal?: AbortSignal } = {},
  ): Promise<TurnResult | undefined> {
    return this.#serialize(() =>
      this.#leased('expirePending()', options.waitForLease, undefined, async () => {
        await this.#ready();
        await this.#recoverFirst({}, undefined);
        const record = parseSuspension(this.#parts.sync.suspension, this.id);
        if (
          !record ||
          expiredCalls(record, this.#parts.host.approvals ?? [], this.#parts.host.registry.tools, Date.now()).length ===
            0
        )
          return undefined;
        this.#assertPluginsInstalled();
        const active = this.#activeParts(undefined);
        return runResumedTurn(active, record, {
          decisions: [],
          context: undefined,
          signal: options.signal,
          key: undefined,
          approver: undefined,
          expireOnly: true,
          output: storedOutput(record.turn, undefined, active.agent),
        });
      }),
    );
  }

  #resume(options: ResumeOptions, delegation: DelegationFrame | undefined): Promise<TurnResult> {
    const keyProblem =
      turnKeyProblem(options.key, 'session.resume()') ?? accessProblem(options.access, 'session.resume()');
    if (keyProblem) return Promise.reject(keyProblem);
    try {
      checkApprover(options.approver);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#serialize(() =>
      this.#stoppable(options.signal, (stopper) =>
        this.#leased('resume()', options.waitForLease, options.leaseTtlMs, async () => {
          await this.#ready();
          this.#assertPluginsInstalled();
          enforceAccess(this.#parts, options.access, false);
          const recovered = await this.#recoverFirst(
            { context: options.context, signal: stopper, output: options.output },
            delegation,
          );
          if (recovered !== undefined) {
            // The resume a crash cut off, tried again: the turn it continued has gone on to its end.
            if (options.key !== undefined && recovered.resumedBy === options.key) return recovered.result;
            // The same decisions again, all applied already: nothing waits for them.
            const applied = new Set(recovered.result.toolCalls.map((c) => c.callId));
            if (
              recovered.result.status !== 'suspended' &&
              Array.isArray(options.decisions) &&
              options.decisions.length > 0 &&
              options.decisions.every((d) => applied.has(d?.callId))
            )
              return recovered.result;
          }
          const record = parseSuspension(this.#parts.sync.suspension, this.id);
          if (!record) {
            throw new TrellisError('InvalidDecision', `Session '${this.id}' has no suspended calls to decide on`, {
              hint: 'Decisions apply once; check session.suspended before resuming',
            });
          }
          this.#assertPluginsInstalled();
          const active = this.#activeParts(delegation);
          const output = storedOutput(
            record.turn,
            options.output === undefined ? undefined : outputSpecOf(options.output, 'session.resume()'),
            active.agent,
            'session.resume()',
          );
          return runResumedTurn(active, record, {
            decisions: options.decisions,
            context: options.context,
            signal: stopper,
            key: options.key,
            approver: options.approver,
            output,
          });
        }),
      ),
    );
  }

  /**
   * Cancels the suspended turn without a new message (a new `send()` does the same first):
   * its waiting calls never run — each is answered `Cancelled` in the transcript — and the
   * turn ends `cancelled`. Sub-agents waiting inside it are cancelled too, so none of their
   * calls can be approved later in a child session.
   *
   * @returns whether a turn was waiting.
   */
  cancelPending(
    options: { readonly waitForLease?: number; readonly leaseTtlMs?: number; readonly access?: SessionAccess } = {},
  ): Promise<boolean> {
    const problem = accessProblem(options.access, 'session.cancelPending()');
    if (problem) return Promise.reject(problem);
    return this.#serialize(() =>
      this.#leased('cancelPending()', options.waitForLease, options.leaseTtlMs, async () => {
        await this.#ready();
        enforceAccess(this.#parts, options.access, false);
        // A turn a crash cut off goes on to its end first (it may end suspended, and then waits no more).
        await this.#recoverFirst({}, undefined);
        if (!this.suspended) return false;
        await this.#cancelSuspended('withdrawn');
        return true;
      }),
    );
  }

  /**
   * Runs one tool call through the whole tool pipeline outside a model turn (for hosts such
   * as an MCP server); nothing is added to the transcript. See {@link callToolDirectly}.
   */
  callTool(name: string, args: unknown, options: DirectCallOptions = {}): Promise<DirectCallResult> {
    return this.#serialize(async () => {
      await this.#ready();
      return callToolDirectly(this.#parts, name, args, options);
    });
  }

  /** Runs `session.end` hooks and forgets the live state; the store keeps the session. */
  end(): Promise<void> {
    return this.#serialize(() => {
      const registry = this.#parts.host.registry;
      const hooks = registry.view(this.#parts.agent.spec.plugins).hooks;
      const ending = this.#parts.host.hooks.run(
        'session.end',
        { sessionId: this.id },
        { scope: new ContextScope(this.#parts.state, undefined, undefined), schema: registry, hooks },
      );
      if (ending instanceof Promise) return ending.then(() => this.#forget());
      this.#forget();
      return undefined;
    });
  }

  #forget(): void {
    this.#parts.agent.forget(this.id);
    this.#parts.host.releaseSession(this.id);
    this.#parts.subject.complete();
  }

  /**
   * @internal The kernel's handle on this session when it runs a sub-agent's turn: `send`
   * and `resume` with the turn's place in the delegation chain.
   */
  [DELEGATE](): DelegateSession {
    const session = this;
    return {
      get transcript() {
        return session.transcript;
      },
      send: (message, run) => this.#send(message, run, run.delegation),
      resume: (run) => this.#resume(run, run.delegation),
      pending: () => this.pending(),
      cancelPending: (options) => this.cancelPending(options),
    };
  }

  /** @internal Whether a turn (or anything else) is queued or running on this session. */
  get busy(): boolean {
    return this.#pending > 0;
  }

  /** Whether a turn (a send or a resume) is running on this session in this process; reads in flight do not count. Hosts ask it to tell an opened session from one that is only stored. */
  get turnRunning(): boolean {
    return this.#running !== undefined;
  }

  /**
   * @internal The agent dropped this session from memory (too many open, or idle): its live
   * state is forgotten; the store keeps it, and `agent.session(id)` loads it again.
   */
  release(): void {
    this.#parts.host.releaseSession(this.id);
    this.#parts.subject.complete();
  }

  /**
   * @internal The host stated new session-level context (reopening the session): it
   * replaces the old for every turn from now on.
   */
  restate(context: Readonly<Record<string, unknown>>): void {
    this.#hostContext = context;
    void this.#serialize(async () => this.#seedHostContext());
  }

  #seedHostContext(): void {
    // Copied key by key onto a new literal, then the id set: objects built this way share one
    // hidden class. A spread (`{ ...context }`, with or without a computed key) gave every
    // session's values a hidden class of their own (~160 B each, and megamorphic reads).
    const context = this.#hostContext;
    const values: Record<string, unknown> = {};
    for (const key in context) if (Object.prototype.hasOwnProperty.call(context, key)) values[key] = context[key];
    values[KERNEL_KEYS.sessionId] = this.id;
    this.#parts.state.replace(isHostKey, values);
  }

  /** An agent naming a plugin that is not installed would silently run without it: refuse. */
  #assertPluginsInstalled(): void {
    const registry = this.#parts.host.registry;
    const { missing } = registry.view(this.#parts.agent.spec.plugins);
    if (missing.length === 0) return;
    throw new TrellisError(
      'UnknownPlugin',
      `Agent '${this.#parts.agent.spec.name}' lists plugins that are not installed: ${missing.map((m) => `'${m}'`).join(', ')}`,
      {
        hint: `Installed: ${[...registry.byName.keys()].join(', ') || 'none'}. Fix the agent's plugins list or install them`,
        details: { missing },
      },
    );
  }

  /** Loads the session on first use (`session.start`); nothing to wait for when neither the store nor a hook awaits. */
  #ready(): void | Promise<void> {
    return this.#parts.sync.ready((resumed) => {
      this.#seedHostContext();
      const registry = this.#parts.host.registry;
      const hooks = registry.view(this.#parts.agent.spec.plugins).hooks;
      return this.#parts.host.hooks.run(
        'session.start',
        { sessionId: this.id, resumed },
        { scope: new ContextScope(this.#parts.state, undefined, undefined), schema: registry, hooks },
      );
    });
  }

  async #cancelSuspended(cause: CancelCause): Promise<void> {
    let record: SuspensionRecord | undefined;
    try {
      record = parseSuspension(this.#parts.sync.suspension, this.id);
    } catch (error) {
      this.#parts.host.reportError(error, undefined, undefined, this.id);
    }
    if (!record) {
      this.#parts.sync.suspension = null;
      return;
    }
    await cancelSuspended(this.#activeParts(undefined), record, cause);
  }

  /** The agent that answers now: the one a handoff gave the session to, else the one that opened it. */
  get activeAgent(): string {
    const active = this.#parts.state.session.values[KERNEL_KEYS.activeAgent] as ActiveAgent | undefined;
    return active?.agent ?? this.#parts.agent.spec.name;
  }

  /** The session's parts with the active agent, and where a sub-agent's turn sits. */
  #activeParts(delegation: DelegationFrame | undefined): SessionParts {
    const active = this.#parts.state.session.values[KERNEL_KEYS.activeAgent] as ActiveAgent | undefined;
    const name = active?.agent ?? this.#parts.agent.spec.name;
    let agent: AgentBinding = this.#parts.agent;
    if (name !== this.#parts.agent.spec.name) {
      const found = this.#parts.host.agent?.(name);
      if (!found) {
        throw new TrellisError(
          'UnknownAgent',
          `Session '${this.id}' was handed over to agent '${name}', which this app does not have`,
          {
            hint: `Create it with app.agent({ name: '${name}', … }) before using the session in this process`,
          },
        );
      }
      agent = found;
    }
    // The turn runs delegation only when its agent delegates or a handoff gave it the session.
    const extension = delegationFor(agent.spec, active !== undefined);
    if (agent === this.#parts.agent && !delegation && extension === this.#parts.extension) return this.#parts;
    return { ...this.#parts, agent, delegation, extension };
  }

  #leased<T>(call: string, waitMs: number | undefined, ttlMs: number | undefined, work: () => Promise<T>): Promise<T> {
    // Refused whatever the store, before anything runs.
    const problem = waitForLeaseProblem(waitMs, `session.${call}`) ?? leaseTtlProblem(ttlMs, `session.${call}`);
    if (problem) return Promise.reject(problem);
    // A store without leases runs the work as it is: no holder or loss handler is made for it.
    const lease = leasesOf(this.#parts.host.store);
    if (!lease) return work();
    return withLease(
      lease,
      this.id,
      (this.#holder ??= leaseHolder()),
      waitMs,
      (held) => this.#parts.sync.holding(held, work),
      (error) => this.#parts.host.reportError(error, undefined, undefined, this.id),
      ttlMs ?? this.#parts.host.leaseTtlMs,
    );
  }

  #serialize<T>(work: () => T | Promise<T>): Promise<T> {
    this.#pending++;
    const run = this.#queue.then(work, work);
    // The queue's handler is attached first, so the count is down before the caller's own
    // handlers run; one promise for both, rather than a `finally` and a `catch`.
    this.#queue = run.then(this.#settled, this.#settled);
    return run;
  }

  readonly #settled = (): void => {
    this.#pending--;
  };
}

// Sealed: a plugin in the same process cannot patch Session's methods to capture sessions or transcripts (issue 34).
Object.freeze(Session.prototype);
Object.freeze(Session);

/** What is wrong with a turn key (`SendOptions.key`, `ResumeOptions.key`), as the error to reject with. */
function turnKeyProblem(key: unknown, where: string): TrellisError | undefined {
  if (key === undefined || (typeof key === 'string' && key.length > 0 && key.length <= 512)) return undefined;
  return new TrellisError(
    'InvalidOptions',
    `${where}: key must be a non-empty string of at most 512 characters, got ${typeof key === 'string' ? `${key.length} characters` : typeof key}`,
    {
      hint: "Pass the caller's id for the turn (a message id, a request id), or leave it out",
    },
  );
}

/** The queue of a session nothing ran on yet. */
const IDLE: Promise<unknown> = Promise.resolve();
