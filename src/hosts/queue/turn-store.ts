import type { SessionStore } from '../../../index.js';

/**
 * What a {@link TrellisWorker} needs of the session store the app uses: the lease (one
 * job per session at a time), cheap revision reads and loads (to recognise a turn that
 * already landed). `PostgresStore`, `SqliteStore` and `MemoryStore` all fit.
 */
export interface TurnStore extends Pick<SessionStore, 'acquireLease' | 'renewLease' | 'releaseLease' | 'load'> {
  /** A cheap revision read, when the store has one; otherwise the worker loads the session. */
  revision?(sessionId: string): Promise<number | undefined>;
  /**
   * Takes a lease and reads the session's revision in one round trip (`PostgresStore`):
   * the revision (0 for a session not stored) when taken, undefined when not.
   */
  acquireLeaseReadingRevision?(
    leaseKey: string,
    holder: string,
    ttlMs: number,
    sessionId: string,
  ): Promise<number | undefined>;
}

/** The stored revision of `sessionId` (0 when it does not exist yet), read as cheaply as the store allows. */
export async function storedRevision(store: TurnStore, sessionId: string): Promise<number> {
  const revision = store.revision ? await store.revision(sessionId) : (await store.load(sessionId))?.revision;
  return revision ?? 0;
}
