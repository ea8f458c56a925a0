import type { Decision, PendingApproval, Session, SessionAccess, TrellisEvent, TurnResult } from '../../../index.js';

/** What a protocol host passes with a turn: its cancel signal, the request's host context, and the caller's checked access. */
export interface TurnOptions {
  readonly signal?: AbortSignal;
  readonly context?: Readonly<Record<string, unknown>>;
  /** The caller and the owner their access was checked against: the kernel checks it again under the session's lease. */
  readonly access?: SessionAccess;
}

/**
 * What a protocol host needs of a session: a `HostedSession` of the Nest module has it as it
 * is (its turns then run in process or on the worker queue, as the module says), and
 * {@link streamable} makes one of a kernel `Session`.
 */
export interface TurnSession {
  readonly id: string;
  send(message: string, options: TurnOptions): Promise<TurnResult>;
  resume(options: TurnOptions & { readonly decisions: readonly Decision[] }): Promise<TurnResult>;
  pending(): Promise<readonly PendingApproval[]>;
  /** The session's owner and whether it has messages or waiting calls, without waiting behind its running turn. */
  ownerNow(): Promise<{ readonly owner: string | undefined; readonly opened: boolean }>;
  /** Calls `listener` with each turn event; resolves once no event of a turn started afterwards can be missed. */
  watch(listener: (event: TrellisEvent) => void): Promise<() => void>;
}

/** A kernel session as a {@link TurnSession}: its turns run in this process. */
export function streamable(session: Session): TurnSession {
  return {
    id: session.id,
    send: (message, options) => session.send(message, options),
    resume: (options) => session.resume(options),
    pending: () => session.pending(),
    ownerNow: async () => {
      // A turn running here has claimed its owner already: no need to wait behind it.
      if (session.turnRunning) return { owner: session.owner, opened: true };
      const pending = await session.pending();
      return { owner: session.owner, opened: session.transcript.length > 0 || pending.length > 0 };
    },
    watch: async (listener) => {
      const subscription = session.events$.subscribe(listener);
      return () => subscription.unsubscribe();
    },
  };
}

/** What a protocol host asks a session to do with one request: a new message, or decisions on waiting calls. */
export type TurnAction =
  | { readonly kind: 'send'; readonly message: string }
  | { readonly kind: 'resume'; readonly decisions: readonly Decision[] };

/** What {@link runWatched} reports, in order: the turn's events, then its result or the error it ended with. */
export interface TurnListener {
  event(event: TrellisEvent): void;
  result(result: TurnResult): void;
  error(error: unknown): void;
}

/**
 * Runs the action on the session with its events watched from before the turn starts, so
 * none is missed; the listener gets every event, then the result (or the error). Resolves
 * when the listener has had the last word.
 */
export async function runWatched(
  session: TurnSession,
  action: TurnAction,
  listener: TurnListener,
  options: TurnOptions = {},
): Promise<void> {
  let stop: (() => void) | undefined;
  try {
    stop = await session.watch((event) => listener.event(event));
    const run =
      action.kind === 'send'
        ? session.send(action.message, options)
        : session.resume({ decisions: action.decisions, ...options });
    listener.result(await run);
  } catch (error) {
    listener.error(error);
  } finally {
    stop?.();
  }
}
