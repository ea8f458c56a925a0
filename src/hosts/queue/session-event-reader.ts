import type { Redis } from 'ioredis';
import { TrellisError } from '../../../index.js';
import type { ChannelSubscriber } from './channel-subscriber.js';
import { decodeEvent } from './event-codec.js';
import type { QueueNames } from './queue-connection.js';
import { isStreamId, streamIdAfter, type QueuedEvent } from './queued-event.js';

/** Where {@link SessionEventReader.watch} starts. */
export interface WatchOptions {
  /**
   * The id of the last event the caller saw (`QueuedEvent.id`, an SSE `Last-Event-ID`):
   * the events after it that the session's stream still keeps come first, then live ones,
   * none twice. `'0'` replays all it keeps. Absent: live events only.
   */
  readonly after?: string;
}

/**
 * The reading side of resumable event streams, for a {@link TurnQueue}. Watching a session
 * registers a reader (a key with a TTL of `graceMs`, renewed while watched, and an
 * announcement to running workers), so workers write its events to the session's stream;
 * a reader that disconnects keeps them written for `graceMs`, and on reconnecting with the
 * last id it saw gets what it missed, then live events.
 */
export class SessionEventReader {
  private readonly registered = new Map<string, { count: number; timer: NodeJS.Timeout; ready: Promise<unknown> }>();

  constructor(
    private readonly names: QueueNames,
    private readonly subscriber: ChannelSubscriber,
    private readonly commands: () => Redis,
    private readonly graceMs: number,
  ) {}

  /** Resolves once the subscription is confirmed, the reader registered and what was missed delivered. */
  async watch(
    sessionId: string,
    listener: (event: QueuedEvent) => void,
    options: WatchOptions = {},
  ): Promise<() => void> {
    const { after } = options;
    if (after !== undefined && !isStreamId(after)) {
      throw new TrellisError(
        'InvalidOptions',
        `Cannot watch session "${sessionId}" after "${String(after)}": not an event id`,
        {
          hint: "Pass the `id` of the last event seen (like 1733140000000-0), or '0' for all the stream keeps",
        },
      );
    }
    let last = after;
    let early: [string, string][] | undefined = [];
    const deliver = (id: string, text: string) => {
      if (last !== undefined && !streamIdAfter(id, last)) return;
      const event = decodeEvent(text);
      if (!event) return;
      last = id;
      listener({ ...event, id } as QueuedEvent);
    };
    // Subscribed before the replay is read: a live event that the replay also has is told by its id.
    const unlisten = await this.subscriber.listen(this.names.eventChannel(sessionId), (message) => {
      const cut = message.indexOf('\n');
      if (cut < 0) return;
      if (early) early.push([message.slice(0, cut), message.slice(cut + 1)]);
      else deliver(message.slice(0, cut), message.slice(cut + 1));
    });
    try {
      await this.register(sessionId);
      if (after !== undefined) {
        const entries = await this.commands().xrange(this.names.eventStream(sessionId), `(${after}`, '+');
        for (const [id, fields] of entries) deliver(id, fields[1] ?? '');
      }
    } catch (error) {
      unlisten();
      this.unregister(sessionId);
      throw new TrellisError(
        'StoreUnavailable',
        `Cannot watch the events of session "${sessionId}": ${error instanceof Error ? error.message : String(error)}`,
        { kind: 'system', retryable: true, cause: error },
      );
    }
    const pending = early;
    early = undefined;
    for (const [id, text] of pending) deliver(id, text);
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      unlisten();
      this.unregister(sessionId);
    };
  }

  /** Stops renewing every registration (they lapse after `graceMs`). */
  close(): void {
    for (const { timer } of this.registered.values()) clearInterval(timer);
    this.registered.clear();
  }

  private async register(sessionId: string): Promise<void> {
    const held = this.registered.get(sessionId);
    const key = this.names.readerKey(sessionId);
    if (held) {
      held.count++;
      await held.ready;
      return;
    }
    const timer = setInterval(
      () =>
        void this.commands()
          .pexpire(key, this.graceMs)
          .catch(() => undefined),
      Math.max(1, Math.floor(this.graceMs / 3)),
    );
    timer.unref();
    // The key first, then the announcement: a worker that checks before it hears of it.
    const ready = this.commands()
      .multi()
      .set(key, '1', 'PX', this.graceMs)
      .publish(this.names.readersChannel(), sessionId)
      .exec();
    this.registered.set(sessionId, { count: 1, timer, ready: ready.catch(() => undefined) });
    await ready;
  }

  /** The last watcher of a session stops renewing its key; it lapses after `graceMs`, so a reconnect within it misses nothing. */
  private unregister(sessionId: string): void {
    const held = this.registered.get(sessionId);
    if (!held || --held.count > 0) return;
    clearInterval(held.timer);
    this.registered.delete(sessionId);
  }
}
