import { redactText } from '../redaction/redactor.js';
import { describeError } from './describe-error.js';

const TRELLIS_ERROR = Symbol.for('trellis.error');

/** Every code the kernel raises; plugins may add their own (e.g. `InsufficientCredits`). */
export type TrellisErrorCode =
  | 'InvalidPlugin'
  | 'DuplicatePlugin'
  | 'DuplicateRegistration'
  | 'MissingDependency'
  | 'DependentPlugin'
  | 'UnknownPlugin'
  | 'InvalidConfig'
  | 'InvalidOptions'
  | 'LoadFailed'
  | 'MissingContext'
  | 'ContextAccess'
  | 'UnknownStateKey'
  | 'StaleState'
  | 'UnknownEffect'
  | 'UnknownAction'
  | 'PhaseLoopExceeded'
  | 'HookFailed'
  | 'HookResultNotAllowed'
  | 'GateConflict'
  | 'EffectFailed'
  | 'ToolInput'
  | 'ToolOutput'
  | 'ToolFailed'
  | 'ToolTimeout'
  | 'ToolNotFound'
  | 'AuthDenied'
  | 'RateLimited'
  | 'Interrupted'
  | 'Rejected'
  | 'ModelFailed'
  | 'Cancelled'
  | 'SessionBusy'
  | 'SessionNotFound'
  | 'InvalidCheckpoint'
  | 'InvalidDecision'
  | 'NotStarted'
  | 'UnsupportedSchema'
  | 'StoreFull'
  | 'StoreBusy'
  | 'StoreReadonly'
  | 'StoreCorrupt'
  | 'StoreSchema'
  | 'StoreIO'
  | 'StoreFailed';

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
  readonly code: TrellisErrorCode | (string & {});
  readonly kind: TrellisErrorKind;
  readonly retryable: boolean;
  readonly hint: string | undefined;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: TrellisErrorCode | (string & {}), message: string, options: TrellisErrorOptions = {}) {
    // Messages reach models, logs and terminals: secret-shaped values never do.
    super(redactText(options.hint ? `${message}. ${options.hint}` : message), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.kind = options.kind ?? 'user';
    this.retryable = options.retryable ?? false;
    this.hint = options.hint;
    this.details = options.details ?? {};
  }

  static is(value: unknown, code?: TrellisErrorCode | (string & {})): value is TrellisError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[TRELLIS_ERROR] === true &&
      (code === undefined || (value as TrellisError).code === code)
    );
  }

  /** The shape a model sees when a tool call fails. */
  toToolError(): { code: string; message: string; retryable: boolean } {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }
}

/** Wraps anything thrown into a `TrellisError`, keeping one that already is. */
export function asTrellisError(error: unknown, code: TrellisErrorCode, message?: string, options: TrellisErrorOptions = {}): TrellisError {
  if (TrellisError.is(error)) return error;
  const text = describeError(error);
  return new TrellisError(code, message ? `${message}: ${text}` : text, { kind: 'system', ...options, cause: error });
}
