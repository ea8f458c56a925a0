import type { SessionStore } from '../../index.js';

/**
 * What a {@link TrellisWorker} needs of the session store the app uses: the lease (one
 * job per session at a time), cheap revision reads and loads (to recognise a turn that
 * already landed). `PostgresStore`, `SqliteStore` and `MemoryStore` all fit.
 */
export interface TurnStore extends Pick<SessionStore, 'acquireLease' | 'renewLease' | 'releaseLease' | 'load'> {
  revision(sessionId: string): Promise<number | undefined>;
}
