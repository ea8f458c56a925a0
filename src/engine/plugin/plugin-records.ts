/** One of a plugin's records, as `PluginRecords` hands it back. */
export interface PluginRecord<T = unknown> {
  readonly key: string;
  readonly value: T;
  /** ISO time of the last write. */
  readonly updatedAt: string;
}

/**
 * A plugin's own records in the app's session store, outliving sessions: JSON values by
 * subject (whom a record is about, e.g. the user id a hook read from `app.user_id`) and key.
 * Bound to the plugin's name, so no plugin reads or deletes another's. Kept in the store's
 * `records` table (SQLite, PostgreSQL) or in memory (`MemoryStore`, or an app with no store).
 * A plugin holding user data here erases it in `onErase`.
 */
export interface PluginRecords {
  get<T = unknown>(subject: string, key: string): Promise<PluginRecord<T> | undefined>;
  /** Writes or replaces a record; the value must be JSON (at most 4 MiB of it). */
  put(subject: string, key: string, value: unknown): Promise<void>;
  /** A subject's records, in key order. */
  list<T = unknown>(subject: string): Promise<readonly PluginRecord<T>[]>;
  /** Deletes one subject's records (or those whose key starts with `keyPrefix`), or by key prefix across subjects; answers how many. */
  delete(selector: { readonly subject?: string; readonly keyPrefix?: string }): Promise<number>;
}
