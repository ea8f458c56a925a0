import { redactText } from '../redaction/redactor.js';
import { describeError } from './describe-error.js';

const TRELLIS_ERROR = Symbol.for('trellis.error');

/**
 * Every error code, as the keys of one interface: a closed union of the codes the kernel,
 * its hosts and the built-in plugins raise. A plugin package (or an application) that
 * needs codes of its own adds them by declaration merging, so they are checked like the
 * kernel's (the SQL report desk example declares its `Sql*` codes this way):
 *
 * @example
 * declare module 'trellis' { interface TrellisErrorCodes { OrderLocked: true } }
 */
export interface TrellisErrorCodes {
  InvalidPlugin: true;
  DuplicatePlugin: true;
  DuplicateRegistration: true;
  MissingDependency: true;
  DependentPlugin: true;
  UnknownPlugin: true;
  InvalidConfig: true;
  InvalidOptions: true;
  LoadFailed: true;
  MissingContext: true;
  ContextAccess: true;
  UnknownStateKey: true;
  StaleState: true;
  UnknownEffect: true;
  UnknownAction: true;
  PhaseLoopExceeded: true;
  HookFailed: true;
  HookResultNotAllowed: true;
  GateConflict: true;
  EffectFailed: true;
  ToolInput: true;
  ToolOutput: true;
  ToolFailed: true;
  ToolTimeout: true;
  ToolNotFound: true;
  AuthDenied: true;
  /** A host API was called without a signed-in caller (the sessions API's principal). */
  Unauthenticated: true;
  RateLimited: true;
  Interrupted: true;
  Rejected: true;
  ModelFailed: true;
  /** The model declined to answer (OpenAI's `refusal`, Anthropic's `stop_reason: "refusal"`): the turn ends `failed`. */
  ModelRefused: true;
  /** A typed turn's answer did not validate against its `output` DTO, repair rounds included: the turn ends `failed`. */
  OutputInvalid: true;
  Cancelled: true;
  SessionBusy: true;
  SessionNotFound: true;
  InvalidCheckpoint: true;
  InvalidDecision: true;
  /** An approval policy refused a decision (role, reason, quorum): nothing of the resume was applied. */
  ApprovalRefused: true;
  /** The audit log's hash chain does not hold: a record was changed, removed, inserted or reordered. */
  AuditBroken: true;
  /** A plugin's contract changed in a breaking way without a major version bump (`trellis contract diff`). */
  BreakingChange: true;
  /** A plugin's or owner's budget is spent (`Trellis.create({ budgets })`): the call did not run. */
  BudgetExceeded: true;
  NotStarted: true;
  UnsupportedSchema: true;
  Blocked: true;
  Skipped: true;
  ReplyCancelled: true;
  Failed: true;
  EmbeddingFailed: true;
  SummaryFailed: true;
  InsufficientCredits: true;
  Unreadable: true;
  NoModel: true;
  KernelAccess: true;
  /** An eval dataset (JSONL) or baseline cannot be read, or a case is malformed. */
  InvalidDataset: true;
  /** Cases of an eval failed (`trellis eval` without a baseline). */
  EvalFailed: true;
  /** An eval fell below its baseline by more than the threshold (`trellis eval --baseline`). */
  EvalRegressed: true;
  /** A session store's server cannot be reached, or refused the connection (retryable). */
  StoreUnavailable: true;
  /** A session store's server failed a statement. */
  StoreFailed: true;
  /** A queued turn names an agent the worker does not run. */
  UnknownAgent: true;
  /** A queued turn failed on a worker with an error that carried no Trellis code. */
  TurnFailed: true;
  /** A queued turn failed; read from the job record, which keeps only the message. */
  QueuedTurnFailed: true;
  /**
   * Redis lost a queued turn's job (a restart without persistence) and the session store has
   * no turn under its job id: no worker will run it. Enqueue it again with the same key.
   */
  QueuedTurnLost: true;
  /** A queued turn gave no result within the caller's bound (`waitMs`); it is still queued or running. */
  QueuedTurnTimeout: true;
  /** A queued turn cut off by a dying (or stalled) worker `maxCrashes` times: parked, not run again. */
  PoisonTurn: true;
  /** An agent would call itself through its sub-agents (A → B → A). */
  DelegationLoop: true;
  /** A delegation would nest sub-agents deeper than `maxDelegationDepth`. */
  DelegationDepth: true;
  /** A sub-agent's turn ended without a reply (failed, blocked, cancelled, max rounds). */
  DelegationFailed: true;
  ExportExists: true;
  ExportRefused: true;
  StoreFull: true;
  StoreBusy: true;
  StoreReadonly: true;
  StoreCorrupt: true;
  StoreSchema: true;
  StoreIO: true;
  /**
   * A write of a turn was refused because the session's lease no longer names the writer:
   * it lapsed (a pause, a partition) and another worker took the session over. Nothing of
   * the write landed; the new holder goes on with the turn.
   */
  LeaseLost: true;
  /** A message part is malformed (no data, no name, not base64). */
  InvalidContent: true;
  /** An image or file part has a media type that no provider adapter maps. */
  UnsupportedMediaType: true;
  /** An image or file part is over its size limit. */
  ContentTooLarge: true;
}

/** A code of {@link TrellisErrorCodes}. */
export type TrellisErrorCode = keyof TrellisErrorCodes;

/** `user`: the caller or a plugin author can fix it. `system`: a fault outside their code. */
export type TrellisErrorKind = 'user' | 'system';

export interface TrellisErrorOptions {
  /** What to do about it; appended to the message. */
  readonly hint?: string;
  readonly kind?: TrellisErrorKind;
  /** Whether trying the same thing again may succeed (network faults, rate limits). */
  readonly retryable?: boolean;
  readonly details?: Readonly<Record<string, unknown>>;
  readonly cause?: unknown;
}

/**
 * The one error family of Trellis. `code` discriminates; `TrellisError.is(e, code?)` works
 * across module copies because it checks a `Symbol.for` brand rather than `instanceof`.
 *
 * @example
 * if (TrellisError.is(err, 'MissingContext')) console.log(err.details.key);
 */
export class TrellisError extends Error {
  readonly [TRELLIS_ERROR] = true;
  readonly code: TrellisErrorCode;
  readonly kind: TrellisErrorKind;
  readonly retryable: boolean;
  readonly hint: string | undefined;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: TrellisErrorCode, message: string, options: TrellisErrorOptions = {}) {
    // Messages reach models, logs and terminals: secret-shaped values never do.
    // One full stop between message and hint, also when the message ends with its own (a vendor's "Connection error.").
    super(
      redactText(options.hint ? `${message.replace(/\.+\s*$/, '')}. ${options.hint}` : message),
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = new.target.name;
    this.code = code;
    this.kind = options.kind ?? 'user';
    this.retryable = options.retryable ?? false;
    this.hint = options.hint;
    this.details = options.details ?? {};
  }

  static is(value: unknown, code?: TrellisErrorCode): value is TrellisError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[TRELLIS_ERROR] === true &&
      (code === undefined || (value as TrellisError).code === code)
    );
  }

  /** The shape a model sees when a tool call fails. */
  toToolError(): { code: TrellisErrorCode; message: string; retryable: boolean } {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }
}

/** Wraps anything thrown into a `TrellisError`, keeping one that already is. */
export function asTrellisError(
  error: unknown,
  code: TrellisErrorCode,
  message?: string,
  options: TrellisErrorOptions = {},
): TrellisError {
  if (TrellisError.is(error)) return error;
  const text = describeError(error);
  return new TrellisError(code, message ? `${message}: ${text}` : text, { kind: 'system', ...options, cause: error });
}
