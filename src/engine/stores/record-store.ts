import { TrellisError } from '../../errors/trellis-error.js';

/** One record: a JSON value under a key, with the time it was last written. */
export interface StoredRecord {
  readonly key: string;
  readonly value: unknown;
  /** ISO time of the last write. */
  readonly updatedAt: string;
}

/** Which records to delete: one subject's (all, or those whose key starts with `keyPrefix`), or by key prefix across subjects. */
export interface RecordSelector {
  readonly subject?: string;
  readonly keyPrefix?: string;
}

/**
 * An optional capability of a session store: records that outlive sessions, by namespace
 * (a plugin's name), subject (whom they are about, e.g. a user id) and key — what a
 * plugin keeps per user across sessions (working memory, recalled messages). Plugins reach
 * them only through `PluginHost.records`, bound to their own namespace.
 */
export interface RecordStore {
  getRecord(namespace: string, subject: string, key: string): Promise<StoredRecord | undefined>;
  /** Writes (or replaces) a record. */
  putRecord(namespace: string, subject: string, key: string, value: unknown): Promise<void>;
  /** A subject's records of a namespace, in key order. */
  listRecords(namespace: string, subject: string): Promise<readonly StoredRecord[]>;
  /** Deletes the records the selector names (at least one of its fields); answers how many. */
  deleteRecords(namespace: string, selector: RecordSelector): Promise<number>;
}

/** Whether a store keeps records. */
export function hasRecordStore(store: unknown): store is RecordStore {
  const s = store as Partial<RecordStore> | null | undefined;
  return (
    typeof s?.getRecord === 'function' &&
    typeof s.putRecord === 'function' &&
    typeof s.listRecords === 'function' &&
    typeof s.deleteRecords === 'function'
  );
}

/** The longest namespace, subject and key, in characters. */
export const RECORD_NAME_MAX = 512;
/** The largest value, as JSON text. */
export const RECORD_VALUE_MAX = 4 * 1024 * 1024;

/** Checks a namespace, subject or key: a non-empty string of at most {@link RECORD_NAME_MAX} characters, without NUL. */
export function assertRecordName(
  what: 'namespace' | 'subject' | 'key' | 'keyPrefix',
  value: unknown,
): asserts value is string {
  if (typeof value === 'string' && value.length > 0 && value.length <= RECORD_NAME_MAX && !value.includes('\u0000'))
    return;
  throw new TrellisError(
    'InvalidOptions',
    `A record ${what} is a non-empty string of at most ${RECORD_NAME_MAX} characters, got ${value === undefined ? 'none' : JSON.stringify(value).slice(0, 80)}`,
    {
      hint: 'Records are addressed by subject (e.g. the user id from app.user_id) and key',
    },
  );
}

/** A value as the JSON text a store keeps; refuses what JSON cannot hold and values over {@link RECORD_VALUE_MAX}. */
export function encodeRecordValue(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new TrellisError(
      'InvalidOptions',
      `A record value must be JSON: ${error instanceof Error ? error.message : String(error)}`,
      { hint: 'Store plain objects, arrays, strings, numbers and booleans' },
    );
  }
  if (text === undefined)
    throw new TrellisError('InvalidOptions', 'A record value must be JSON, not undefined or a function', {
      hint: 'Delete the record instead of writing undefined',
    });
  if (text.length > RECORD_VALUE_MAX)
    throw new TrellisError(
      'InvalidOptions',
      `A record value is ${text.length} characters of JSON, over the limit of ${RECORD_VALUE_MAX}`,
      { hint: 'Keep fewer or smaller entries per record, or split them over keys' },
    );
  return text;
}

/** Checks a delete selector: at least one field, each a record name. */
export function assertRecordSelector(selector: RecordSelector): void {
  if (selector?.subject === undefined && selector?.keyPrefix === undefined) {
    throw new TrellisError(
      'InvalidOptions',
      'Deleting records needs a subject or a keyPrefix (deleting every record is not a selector)',
      { hint: "e.g. records.delete({ subject: 'u-42' })" },
    );
  }
  if (selector.subject !== undefined) assertRecordName('subject', selector.subject);
  if (selector.keyPrefix !== undefined) assertRecordName('keyPrefix', selector.keyPrefix);
}
