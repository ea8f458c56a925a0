import type pg from 'pg';
import { TrellisError } from '../../errors/trellis-error.js';
import { postgresError, type PostgresTarget } from '../stores/postgres-errors.js';
import { quoteIdentifier } from '../stores/postgres-migrations.js';
import type { BudgetCounter } from './budget-counter.js';

/** Options of {@link PostgresBudgetCounter.open}. */
export interface PostgresBudgetCounterOptions {
  /** The host's pool (the one a `PostgresStore` was opened with serves); the counter never ends it. */
  readonly pool: pg.Pool;
  /** The schema of its `budget_counts` table, created when missing. Default `trellis`, beside the store's tables. */
  readonly schema?: string;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Budget counts in PostgreSQL, shared by every worker on the database without Redis: one
 * upsert (`INSERT … ON CONFLICT DO UPDATE … RETURNING`) per spend, atomic however many
 * workers count at once. Its table (`budget_counts`) sits in the store's schema.
 *
 * @example
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const store = await PostgresStore.open({ pool });
 * Trellis.create({ store, budgets: { counter: await PostgresBudgetCounter.open({ pool }), limits } });
 */
export class PostgresBudgetCounter implements BudgetCounter {
  #adds = 0;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly table: string,
    private readonly target: PostgresTarget,
  ) {}

  /** Creates the table when missing (under an advisory lock, so workers starting together do not race). */
  static async open(options: PostgresBudgetCounterOptions): Promise<PostgresBudgetCounter> {
    const schema = options.schema ?? 'trellis';
    if (!SCHEMA_NAME.test(schema)) {
      throw new TrellisError('InvalidOptions', `"${schema}" is not a usable PostgreSQL schema name for budget counts`, {
        hint: 'Use letters, digits and underscores, starting with a letter or underscore',
        details: { schema },
      });
    }
    if (typeof options.pool?.connect !== 'function')
      throw new TrellisError('InvalidOptions', 'PostgresBudgetCounter.open() needs { pool }: a pg Pool', {
        hint: 'Pass the pool your PostgresStore uses',
      });
    const table = `${quoteIdentifier(schema)}.budget_counts`;
    const target: PostgresTarget = { server: 'a host-supplied pool', schema };
    try {
      const client = await options.pool.connect();
      try {
        await client.query('BEGIN');
        await client.query("SELECT pg_advisory_xact_lock(hashtext('trellis.budget_counts'))");
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(schema)}`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${table} (key text NOT NULL, window_start bigint NOT NULL, count double precision NOT NULL, expires_at bigint NOT NULL, PRIMARY KEY (key, window_start))`,
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    } catch (error) {
      throw postgresError(error, 'create the budget counts table', target);
    }
    return new PostgresBudgetCounter(options.pool, table, target);
  }

  async add(key: string, amount: number, windowMs: number, now: number): Promise<number> {
    const windowStart = Math.floor(now / windowMs) * windowMs;
    try {
      if (amount === 0) {
        const { rows } = await this.pool.query<{ count: number }>(
          `SELECT count FROM ${this.table} WHERE key = $1 AND window_start = $2`,
          [key, windowStart],
        );
        return rows[0]?.count ?? 0;
      }
      // Expired windows go now and then, not on every add.
      if (++this.#adds % 256 === 1) await this.pool.query(`DELETE FROM ${this.table} WHERE expires_at < $1`, [now]);
      const { rows } = await this.pool.query<{ count: number }>(
        `INSERT INTO ${this.table} AS b (key, window_start, count, expires_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (key, window_start) DO UPDATE SET count = b.count + EXCLUDED.count RETURNING count`,
        [key, windowStart, amount, windowStart + 2 * windowMs],
      );
      return rows[0]!.count;
    } catch (error) {
      throw postgresError(error, 'count a budget', this.target);
    }
  }
}
