import type { Decision, PendingApproval, Session, TrellisEvent, TurnResult } from '../../index.js';

/**
 * What a protocol host needs of a session: a `HostedSession` of the Nest module has it as it
 * is (its turns then run in process or on the worker queue, as the module says), and
 * {@link streamable} makes one of a kernel `Session`.
 */
export interface TurnSession {
  readonly id: string;
  send(message: string, options: { readonly signal?: AbortSignal; readonly context?: Readonly<Record<string, unknown>> }): Promise<TurnResult>;
  resume(options: { readonly decisions: readonly Decision[]; readonly signal?: AbortSignal; readonly context?: Readonly<Record<string, unknown>> }): Promise<TurnResult>;
  pending(): Promise<readonly PendingApproval[]>;
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
export async function runWatched(session: TurnSession, action: TurnAction, listener: TurnListener, options: { readonly signal?: AbortSignal; readonly context?: Readonly<Record<string, unknown>> } = {}): Promise<void> {
  let stop: (() => void) | undefined;
  try {
    stop = await session.watch((event) => listener.event(event));
    const run = action.kind === 'send' ? session.send(action.message, options) : session.resume({ decisions: action.decisions, ...options });
    listener.result(await run);
  } catch (error) {
    listener.error(error);
  } finally {
    stop?.();
  }
}
