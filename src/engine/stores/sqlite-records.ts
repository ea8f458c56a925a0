import type Database from 'better-sqlite3';
import { StoredRowDecoder } from './checkpoint-codec.js';
import {
  assertRecordName,
  assertRecordSelector,
  encodeRecordValue,
  type RecordSelector,
  type RecordStore,
  type StoredRecord,
} from './record-store.js';
import { guardStore } from './sqlite-errors.js';

/** {@link RecordStore} over the `records` table of a SQLite store's file. */
export class SqliteRecords implements RecordStore {
  private statements: ReturnType<typeof prepare> | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly path: string,
    private readonly assertWritable: (operation: string) => void,
  ) {}

  async getRecord(namespace: string, subject: string, key: string): Promise<StoredRecord | undefined> {
    check(namespace, subject, key);
    const row = guardStore('read a record', this.path, () => this.sql().get.get(namespace, subject, key)) as
      Row | undefined;
    return row && decode(row, namespace);
  }

  async putRecord(namespace: string, subject: string, key: string, value: unknown): Promise<void> {
    check(namespace, subject, key);
    this.assertWritable('write a record');
    const text = encodeRecordValue(value);
    guardStore('write a record', this.path, () =>
      this.sql().put.run(namespace, subject, key, text, new Date().toISOString()),
    );
  }

  async listRecords(namespace: string, subject: string): Promise<readonly StoredRecord[]> {
    assertRecordName('namespace', namespace);
    assertRecordName('subject', subject);
    const rows = guardStore('list records', this.path, () => this.sql().list.all(namespace, subject)) as Row[];
    return rows.map((row) => decode(row, namespace));
  }

  async deleteRecords(namespace: string, selector: RecordSelector): Promise<number> {
    assertRecordName('namespace', namespace);
    assertRecordSelector(selector);
    this.assertWritable('delete records');
    const subject = selector.subject ?? null;
    const prefix = selector.keyPrefix ?? null;
    return guardStore(
      'delete records',
      this.path,
      () => this.sql().delete.run(namespace, subject, subject, prefix, prefix, prefix).changes,
    );
  }

  /** Prepared on first use: a file opened read-only at an older schema never needs them. */
  private sql(): ReturnType<typeof prepare> {
    return (this.statements ??= guardStore('prepare its record statements', this.path, () => prepare(this.db)));
  }
}

interface Row {
  readonly key: string;
  readonly value: string;
  readonly updated_at: string;
}

function prepare(db: Database.Database) {
  return {
    get: db.prepare('SELECT key, value, updated_at FROM records WHERE namespace = ? AND subject = ? AND key = ?'),
    put: db.prepare(
      'INSERT INTO records (namespace, subject, key, value, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, subject, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
    ),
    list: db.prepare('SELECT key, value, updated_at FROM records WHERE namespace = ? AND subject = ? ORDER BY key'),
    // A prefix compared with substr, never LIKE: keys may hold % and _.
    delete: db.prepare(
      'DELETE FROM records WHERE namespace = ? AND (? IS NULL OR subject = ?) AND (? IS NULL OR substr(key, 1, length(?)) = ?)',
    ),
  };
}

function decode(row: Row, namespace: string): StoredRecord {
  return {
    key: row.key,
    value: new StoredRowDecoder(`(records of ${namespace})`, 'file').parse(row.value, `records.value (${row.key})`),
    updatedAt: row.updated_at,
  };
}

function check(namespace: string, subject: string, key: string): void {
  assertRecordName('namespace', namespace);
  assertRecordName('subject', subject);
  assertRecordName('key', key);
}
