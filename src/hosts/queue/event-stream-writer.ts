import type { Redis } from 'ioredis';
import type { TrellisEvent } from '../../../index.js';
import type { ChannelSubscriber } from './channel-subscriber.js';
import { encodeEvent } from './event-codec.js';
import type { QueueNames } from './queue-connection.js';
import type { QueuedEventMeta } from './queued-event.js';

/** How long a worker keeps a session's event stream, when told to keep every session's (`TrellisWorkerOptions.eventRetention`). */
export interface EventRetention {
  /** How long a session's stream outlives its last event, in milliseconds. */
  readonly ms: number;
  /** Entries kept per session at most (trimmed approximately, `XADD MAXLEN ~`). Default 1000. */
  readonly maxLen?: number;
}

/** Entries a session's stream keeps at most, unless `eventRetention.maxLen` says otherwise. */
export const DEFAULT_STREAM_MAX_LEN = 1000;
/** How long a stream written for a registered reader outlives its last event, without `eventRetention`. */
export const READER_STREAM_TTL_MS = 5 * 60_000;

/*
 * One round trip per event: the entry (capped), the stream's expiry, and the live copy for
 * subscribed readers (`<entry id>\n<event JSON>`), so a reader can tell which entries it has.
 * KEYS[1] stream; ARGV[1] max length, ARGV[2] ttl ms, ARGV[3] event JSON, ARGV[4] channel.
 */
const APPEND_EVENT = `
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[4], id .. '\\n' .. ARGV[3])
return id`;

type EventRedis = Redis & {
  trellisAppendEvent(stream: string, maxLen: number, ttlMs: number, event: string, channel: string): Promise<string>;
};

/**
 * The worker's side of resumable event streams. A turn's events go to the session's capped
 * Redis Stream (and, live, to its channel) only while someone reads them: a reader registered
 * when the turn started (its key exists), or one that announces itself while the turn runs,
 * or always when `eventRetention` is set. A turn nobody reads sends Redis one `EXISTS`.
 */
export class EventStreamWriter {
  private readonly redis: EventRedis;
  /** The turns running here, by session: a reader's announcement opens their streams. */
  private readonly running = new Map<string, Set<TurnEvents>>();
  private stopListening: (() => void) | undefined;

  constructor(
    private readonly names: QueueNames,
    publisher: Redis,
    private readonly subscriber: ChannelSubscriber,
    private readonly retention: EventRetention | undefined,
  ) {
    publisher.defineCommand('trellisAppendEvent', { numberOfKeys: 1, lua: APPEND_EVENT });
    this.redis = publisher as EventRedis;
  }

  /** Listens for readers' announcements. */
  async start(): Promise<void> {
    this.stopListening = await this.subscriber.listen(this.names.readersChannel(), (sessionId) => {
      for (const turn of this.running.get(sessionId) ?? []) turn.open();
    });
  }

  /** Where one attempt of run `run` (a job id) sends the events of `sessionId`; `close()` it when the turn ends. */
  forTurn(sessionId: string, run: string): TurnEvents {
    const turn = new TurnEvents(
      run,
      (text) => this.append(sessionId, text),
      () => this.forget(sessionId, turn),
    );
    let turns = this.running.get(sessionId);
    if (!turns) this.running.set(sessionId, (turns = new Set()));
    // Registered before the check: a reader announcing itself meanwhile is heard either way.
    turns.add(turn);
    if (this.retention) turn.open();
    else {
      this.redis.exists(this.names.readerKey(sessionId)).then(
        (readers) => (readers > 0 ? turn.open() : turn.unread()),
        () => turn.unread(),
      );
    }
    return turn;
  }

  /** Stops listening for readers; the subscriber connection is its owner's to close. */
  close(): void {
    this.stopListening?.();
    this.stopListening = undefined;
    this.running.clear();
  }

  private append(sessionId: string, text: string): void {
    const maxLen = this.retention?.maxLen ?? DEFAULT_STREAM_MAX_LEN;
    const ttl = this.retention?.ms ?? READER_STREAM_TTL_MS;
    // Fire and forget, in order on one connection: a lost event never fails the turn.
    this.redis
      .trellisAppendEvent(this.names.eventStream(sessionId), maxLen, ttl, text, this.names.eventChannel(sessionId))
      .catch(() => undefined);
  }

  private forget(sessionId: string, turn: TurnEvents): void {
    const turns = this.running.get(sessionId);
    if (turns?.delete(turn) && turns.size === 0) this.running.delete(sessionId);
  }
}

/**
 * The events of one attempt of a run, numbered 1, 2, 3 …: held while the worker asks
 * whether anyone reads (then written in order, or dropped), written while someone does.
 */
export class TurnEvents {
  private seq = 0;
  private state: 'deciding' | 'open' | 'unread' = 'deciding';
  private ended = false;
  private held: string[] = [];

  constructor(
    private readonly run: string,
    private readonly write: (text: string) => void,
    private readonly done: () => void,
  ) {}

  emit(event: TrellisEvent): void {
    if (this.ended) return;
    const seq = ++this.seq;
    if (this.state === 'unread') return;
    const numbered: TrellisEvent & Omit<QueuedEventMeta, 'id'> = { ...event, run: this.run, seq };
    const text = encodeEvent(numbered);
    if (this.state === 'open') this.write(text);
    else this.held.push(text);
  }

  /** Someone reads: what was held goes out, then every event as it comes. */
  open(): void {
    if (this.state === 'open') return;
    this.state = 'open';
    for (const text of this.held.splice(0)) this.write(text);
  }

  /** Nobody reads (yet): held events are dropped, and so are later ones until a reader announces itself. */
  unread(): void {
    if (this.state !== 'deciding') return;
    this.state = 'unread';
    this.held = [];
  }

  /** The turn ended: no more events. One that ended before the answer came keeps what it holds for that answer. */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.done();
  }
}
