import { existsSync } from 'node:fs';
import { describeError } from '../errors/describe-error.js';
import { SqliteStore } from './sqlite-store.js';
import { staleLeases } from './stale-leases.js';

/** What {@link repairSqliteStore} did, one sentence each; `refused` when it could not open the store to repair it. */
export interface RepairReport {
  readonly path: string;
  readonly actions: readonly string[];
  readonly refused?: string;
}

/**
 * Repairs what is safe to repair in a SQLite session store (`trellis doctor --repair`): clears
 * leases that hold a session for nothing or for a process of this machine that is gone (see
 * `staleLeases`; each only while the same holder still has it). Opens the file for writing,
 * which migrates an older one first. Damage it cannot repair safely is left as it is, for
 * `diagnoseSqliteStore` to report with its way out.
 */
export async function repairSqliteStore(path: string): Promise<RepairReport> {
  if (!existsSync(path)) return { path, actions: [] };
  let store: SqliteStore;
  try {
    store = new SqliteStore({ path });
  } catch (error) {
    return { path, actions: [], refused: `cannot open the store to repair it: ${describeError(error)}` };
  }
  const actions: string[] = [];
  try {
    for (const { lease, why } of staleLeases(await store.listLeases())) {
      if (await store.clearLease(lease.sessionId, lease.holder)) actions.push(`cleared a lease: ${why}`);
    }
  } finally {
    await store.close();
  }
  return { path, actions };
}
