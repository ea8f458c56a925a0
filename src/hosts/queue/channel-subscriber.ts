import type { Redis } from 'ioredis';

type Listener = (message: string) => void;

/**
 * One Redis subscriber connection shared by every channel an instance listens to, with
 * listeners counted per channel: the channel is subscribed while anyone listens.
 */
export class ChannelSubscriber {
  private readonly listeners = new Map<string, Set<Listener>>();

  constructor(private readonly redis: Redis) {
    redis.on('message', (channel: string, message: string) => {
      for (const listener of this.listeners.get(channel) ?? []) listener(message);
    });
  }

  /** Resolves once Redis confirmed the subscription; call the returned function to stop. */
  async listen(channel: string, listener: Listener): Promise<() => void> {
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
    }
    set.add(listener);
    if (set.size === 1) await this.redis.subscribe(channel);
    return () => {
      const current = this.listeners.get(channel);
      if (!current?.delete(listener) || current.size > 0) return;
      this.listeners.delete(channel);
      this.redis.unsubscribe(channel).catch(() => undefined);
    };
  }

  /** Drops the connection without a goodbye (for a Redis that does not answer). */
  disconnect(): void {
    this.redis.disconnect();
  }

  async close(): Promise<void> {
    this.listeners.clear();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
