/** How many sessions an agent keeps open in memory, and for how long without use. */
export interface SessionRetention {
  /** Open sessions kept per agent; the least recently used idle one is dropped past it. Default 10,000. */
  readonly maxOpen: number;
  /** A session not used for this long is dropped when sessions are next opened. Default 30 minutes. */
  readonly idleMs: number;
}

export const DEFAULT_RETENTION: SessionRetention = { maxOpen: 10_000, idleMs: 30 * 60_000 };

interface Entry<S> {
  readonly session: S;
  usedAt: number;
}

/**
 * The sessions an agent has open, least recently used first. Dropping one forgets its live
 * state only: with a store, the next `agent.session(id)` loads it again; a session with a
 * turn running is never dropped.
 */
export class OpenSessions<S extends { readonly busy: boolean }> {
  readonly #entries = new Map<string, Entry<S>>();

  constructor(
    private readonly retention: SessionRetention,
    private readonly drop: (id: string, session: S) => void,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  get(id: string): S | undefined {
    const entry = this.#entries.get(id);
    if (!entry) return undefined;
    // Re-insert: a Map iterates in insertion order, so the front is the least recently used.
    this.#entries.delete(id);
    entry.usedAt = Date.now();
    this.#entries.set(id, entry);
    return entry.session;
  }

  add(id: string, session: S): void {
    this.#entries.set(id, { session, usedAt: Date.now() });
    this.#evict();
  }

  delete(id: string): void {
    this.#entries.delete(id);
  }

  #evict(): void {
    const idleBefore = Date.now() - this.retention.idleMs;
    let excess = this.#entries.size - this.retention.maxOpen;
    for (const [id, entry] of this.#entries) {
      const idle = entry.usedAt < idleBefore;
      if (excess <= 0 && !idle) break;
      if (entry.session.busy) continue;
      this.#entries.delete(id);
      this.drop(id, entry.session);
      excess--;
    }
  }
}
