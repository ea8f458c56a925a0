import type { Observable } from 'rxjs';
import type { Agent } from '../../../../index.js';
import type { TrellisEvent } from '../../../../index.js';
import type { AppDescription } from '../../../../index.js';
import type { Approver, SessionStore } from '../../../../index.js';
import type { TurnEventRecorder } from '../recording/turn-event-recorder.js';

/** What `trellis dev` needs of the app: its event stream and what is installed (a `Trellis` is one). */
export interface DevApp {
  readonly events$: Observable<TrellisEvent>;
  describe(): AppDescription;
}

/** What the dev server runs over. */
export interface DevServerOptions {
  readonly app: DevApp;
  /** The agent whose sessions the page opens, sends to and resumes. */
  readonly agent: Agent;
  /** The store sessions are listed and read from (the app's store). */
  readonly store: SessionStore;
  /** Session context given to every session the page opens (like the CLI config's `context`). */
  readonly context?: Readonly<Record<string, unknown>>;
  /** Required when `host` is not a loopback address; then every request must carry it. */
  readonly token?: string;
  /**
   * Who decides the calls approved or rejected on the page: the holder of its token (or, on
   * loopback without one, the person at this machine). `trellis dev` passes the CLI's
   * identity. Approval policies check it; the audit log records it.
   */
  readonly approver?: Approver;
  /** Bind address; default `127.0.0.1`. */
  readonly host?: string;
  /** Port; default 4477, `0` for any free port. */
  readonly port?: number;
  /** Told about turn events the store refused to keep. */
  readonly onError?: (error: unknown) => void;
  /**
   * A recorder the host already runs on this app (the CLI keeps one for every command);
   * the server reads live turns from it and leaves it running on close. Without one, the
   * server records while it runs.
   */
  readonly recorder?: TurnEventRecorder;
}
