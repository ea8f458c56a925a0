import pg from 'pg';
import { PostgresStore } from '../../src/engine/stores/postgres-store.js';
import { POSTGRES_URL } from './services.js';

/**
 * Unique PostgreSQL schemas for one test run, so suites running in parallel on the shared
 * server never see each other's sessions; `dropAll()` removes every schema it handed out.
 */
export class PostgresSchemas {
  readonly prefix = `trellis_t${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  readonly admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
  private count = 0;

  /** A schema name no other run uses (the schema itself is created by the store). */
  next(): string {
    return `${this.prefix}_${this.count++}`;
  }

  /** A fresh store in a fresh schema, over its own pool. */
  open(schema: string = this.next()): Promise<PostgresStore> {
    return PostgresStore.open({ url: POSTGRES_URL, schema, maxConnections: 4 });
  }

  async drop(schema: string): Promise<void> {
    await this.admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }

  /** Drops every schema of this run, then ends the admin pool. */
  async dropAll(): Promise<void> {
    const { rows } = await this.admin.query<{ nspname: string }>(
      'SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)',
      [this.prefix],
    );
    for (const { nspname } of rows) await this.drop(nspname);
    await this.admin.end();
  }
}
