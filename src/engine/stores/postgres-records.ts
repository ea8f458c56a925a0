import { StoredRowDecoder } from './checkpoint-codec.js';
import {
  assertRecordName,
  assertRecordSelector,
  encodeRecordValue,
  type RecordSelector,
  type RecordStore,
  type StoredRecord,
} from './record-store.js';

/** How the records run a statement: the store's own query, with its error mapping. */
export type PostgresQuery = <R extends Record<string, unknown>>(
  operation: string,
  text: string,
  values: unknown[],
) => Promise<{ rows: R[]; rowCount: number | null }>;

/** {@link RecordStore} over the `records` table of a PostgreSQL store's schema. */
export class PostgresRecords implements RecordStore {
  private readonly sql: ReturnType<typeof statements>;

  /** `schema` is already quoted. */
  constructor(
    private readonly query: PostgresQuery,
    schema: string,
  ) {
    this.sql = statements(schema);
  }

  async getRecord(namespace: string, subject: string, key: string): Promise<StoredRecord | undefined> {
    check(namespace, subject, key);
    const { rows } = await this.query<Row>('read a record', this.sql.get, [namespace, subject, key]);
    return rows[0] && decode(rows[0], namespace);
  }

  async putRecord(namespace: string, subject: string, key: string, value: unknown): Promise<void> {
    check(namespace, subject, key);
    await this.query('write a record', this.sql.put, [namespace, subject, key, encodeRecordValue(value)]);
  }

  async listRecords(namespace: string, subject: string): Promise<readonly StoredRecord[]> {
    assertRecordName('namespace', namespace);
    assertRecordName('subject', subject);
    const { rows } = await this.query<Row>('list records', this.sql.list, [namespace, subject]);
    return rows.map((row) => decode(row, namespace));
  }

  async deleteRecords(namespace: string, selector: RecordSelector): Promise<number> {
    assertRecordName('namespace', namespace);
    assertRecordSelector(selector);
    const { rowCount } = await this.query('delete records', this.sql.delete, [
      namespace,
      selector.subject ?? null,
      selector.keyPrefix ?? null,
    ]);
    return rowCount ?? 0;
  }
}

interface Row extends Record<string, unknown> {
  readonly key: string;
  readonly value: string;
  readonly updated_at: string;
}

function statements(s: string) {
  const at = `to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at`;
  return {
    get: `SELECT key, value, ${at} FROM ${s}.records WHERE namespace = $1 AND subject = $2 AND key = $3`,
    put: `INSERT INTO ${s}.records (namespace, subject, key, value) VALUES ($1, $2, $3, $4)
          ON CONFLICT (namespace, subject, key) DO UPDATE SET value = EXCLUDED.value, updated_at = clock_timestamp()`,
    list: `SELECT key, value, ${at} FROM ${s}.records WHERE namespace = $1 AND subject = $2 ORDER BY key COLLATE "C"`,
    // A prefix compared with left(), never LIKE: keys may hold % and _.
    delete: `DELETE FROM ${s}.records WHERE namespace = $1 AND ($2::text IS NULL OR subject = $2) AND ($3::text IS NULL OR left(key, length($3)) = $3)`,
  };
}

function decode(row: Row, namespace: string): StoredRecord {
  return {
    key: row.key,
    value: new StoredRowDecoder(`(records of ${namespace})`, 'database').parse(row.value, `records.value (${row.key})`),
    updatedAt: row.updated_at,
  };
}

function check(namespace: string, subject: string, key: string): void {
  assertRecordName('namespace', namespace);
  assertRecordName('subject', subject);
  assertRecordName('key', key);
}
