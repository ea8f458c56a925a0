import type { SessionStore } from '../../src/engine/stores/session-store.js';
import { describeSessionStore } from './session-store-contract.js';
import { describeConcurrencyContract } from './store-concurrency-contract.js';
import { describeLeaseContract } from './session-lease-contract.js';
import { describeStepJournalContract } from './step-journal-contract.js';
import { describeContentPartsContract } from './content-parts-contract.js';

/**
 * How the conformance suite reaches one store implementation. Every test opens a fresh,
 * empty store and disposes of it afterwards.
 */
export interface StoreHarness {
  /** A new, empty store. */
  open(): SessionStore | Promise<SessionStore>;
  /**
   * A second handle on the same data, opened as another process would (its own file
   * handle, its own connection pool). Defaults to the same object, for stores that live
   * in one process only.
   */
  sibling?(store: SessionStore): SessionStore | Promise<SessionStore>;
  /** Closes and removes what `open` made. Default `store.close()`. */
  dispose?(store: SessionStore): Promise<void>;
  /**
   * Opens a store over data whose schema ledger names a version newer than this code
   * knows; the suite expects it to reject. Omit for stores without a schema.
   */
  openFutureSchema?(): Promise<unknown>;
}

/**
 * The store conformance suite: the checkpoint contract, the lease, concurrent writers and
 * readers, the step journal, and the schema ledger, run against one implementation. Every store Trellis
 * ships (and any added later) runs all of it.
 *
 * @example
 * describeStoreConformance('MemoryStore', { open: () => new MemoryStore() });
 */
export function describeStoreConformance(name: string, harness: StoreHarness): void {
  const dispose = harness.dispose ?? ((store: SessionStore) => store.close());
  describeSessionStore(name, () => harness.open(), dispose);
  describeLeaseContract(name, harness.open.bind(harness), dispose);
  describeConcurrencyContract(name, harness, dispose);
  describeStepJournalContract(name, harness, dispose);
  describeContentPartsContract(name, harness, dispose);
}
