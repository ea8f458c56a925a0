import type { ChatMessage, PendingApproval } from '../../../../index.js';
import { TrellisError } from '../../../../index.js';
import { redactSecrets } from '../../../../plugin.js';
import { canLogTurnEvents, type StoredTurnEvents } from '../../../../stores.js';
import type { TurnEventRecorder } from '../recording/turn-event-recorder.js';
import { buildTimeline, type MiddlewareOf } from '../timeline/turn-timeline.js';
import type { SessionRow } from '../views/sessions-page.js';
import type { SessionView } from '../views/session-page.js';
import type { DevServerOptions } from './dev-host.js';
import { redactedView, secretFieldsOf } from './redacted-view.js';

/** The sessions list shows at most this many, newest first. */
const MAX_LISTED = 200;

/**
 * Reads what the pages show from the public surface only: the store's `list`/`load`/
 * `turnEvents`, the recorder's live turns, and `session.pending()`.
 */
export class SessionReader {
  /** Sessions with a send or resume in flight from this server. */
  readonly busy = new Set<string>();

  constructor(
    private readonly options: DevServerOptions,
    private readonly recorder: TurnEventRecorder,
  ) {}

  /** Whether a turn of `sessionId` runs now (here, or seen live on the event stream). */
  running(sessionId: string): boolean {
    return this.busy.has(sessionId) || this.recorder.live(sessionId) !== undefined;
  }

  async sessions(): Promise<SessionRow[]> {
    const { store } = this.options;
    const summaries = (await store.list()).slice(0, MAX_LISTED);
    return Promise.all(
      summaries.map(async (s) => {
        const last = this.running(s.id) ? undefined : (await store.load(s.id))?.turns.at(-1);
        const status = this.running(s.id) ? 'running' : s.suspended ? 'suspended' : (last?.status ?? 'new');
        return { id: s.id, agent: s.agent, turns: s.turns, updatedAt: s.updatedAt, status };
      }),
    );
  }

  async session(id: string): Promise<SessionView> {
    const { store } = this.options;
    const stored = await store.load(id);
    const traces = canLogTurnEvents(store);
    const middlewareOf = this.middlewareOf();
    const running = this.running(id);
    const live = this.recorder.live(id);
    const turns = await Promise.all(
      (stored?.turns ?? []).map(async (record) => {
        const { events, dropped } = await this.turnEvents(id, record.index);
        return { record, timeline: buildTimeline(events, middlewareOf), dropped };
      }),
    );
    let liveView: SessionView['live'];
    if (live) {
      // A resumed turn: what was recorded before it suspended, then what happens now.
      const before = turns.find((t) => t.record.index === live.turn)
        ? (await this.turnEvents(id, live.turn)).events
        : [];
      liveView = { turn: live.turn, timeline: buildTimeline([...before, ...live.events], middlewareOf) };
    }
    const last = stored?.turns.at(-1);
    const waiting = stored && !running && stored.suspension ? await this.waiting(id) : undefined;
    const pending = waiting?.pending ?? [];
    const status = running ? 'running' : pending.length > 0 ? 'suspended' : (last?.status ?? 'new');
    // A suspended turn's messages (the user's, the model's call) are the session's to show, not yet the store's transcript.
    const view = {
      id,
      agent: stored?.agent,
      status,
      transcript: waiting?.transcript ?? stored?.transcript ?? [],
      turns,
      live: liveView,
      pending,
      traces,
    };
    return redactedView(view, secretFieldsOf(this.options.app.describe()));
  }

  /** A turn's recorded events (redacted when they were emitted, and again here), or none when the store keeps none. */
  async turnEvents(id: string, turn: number): Promise<StoredTurnEvents> {
    const { store } = this.options;
    return canLogTurnEvents(store)
      ? (redactSecrets(await store.turnEvents(id, turn)) as StoredTurnEvents)
      : { events: [], dropped: 0 };
  }

  /** Middleware chain names per tool, from what is installed now. */
  middlewareOf(): MiddlewareOf {
    const chains = new Map(
      this.options.app.describe().plugins.flatMap((p) => p.tools.map((t) => [t.name, t.middleware] as const)),
    );
    return (tool) => chains.get(tool) ?? [];
  }

  /**
   * The parked calls, and the transcript with the suspended turn's messages; a session of
   * another agent has no calls this server can decide on.
   */
  private async waiting(
    id: string,
  ): Promise<{ readonly pending: readonly PendingApproval[]; readonly transcript?: readonly ChatMessage[] }> {
    try {
      const session = this.options.agent.session(id, { context: this.options.context });
      const pending = await session.pending();
      return { pending, transcript: [...session.transcript, ...session.pendingMessages] };
    } catch (error) {
      if (TrellisError.is(error, 'SessionNotFound')) return { pending: [] };
      throw error;
    }
  }
}
