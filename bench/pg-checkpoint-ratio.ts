/**
 * The cost of one PostgresStore checkpoint of an 8-message turn against the floor of any
 * durable write on the same server: one single-row INSERT, committed, on the same
 * connection (a pool of one, shared by the store and the baseline). The two are measured
 * interleaved in pairs, so a neighbour's load falls on both alike. Part of `npm run bench:scale`.
 */
import pg from 'pg';
import { PostgresStore } from '../index.js';
import { quantile, round } from './stats.js';

export interface CheckpointRatio {
  /** Microseconds, p50 and p99. */
  readonly checkpointUs: { readonly p50: number; readonly p99: number };
  readonly insertUs: { readonly p50: number; readonly p99: number };
  /** checkpoint p50 / insert p50. */
  readonly ratio: number;
  /** Statements the checkpoint sent, counted by pg_stat_statements-free means: the client's own query calls. */
  readonly statementsPerCheckpoint: number;
}

export async function checkpointRatio(url: string, schema: string, pairs = 400): Promise<CheckpointRatio> {
  // Bounded as the store's own pool is, so the checkpoint goes as one statement, not in a SET LOCAL transaction.
  const pool = new pg.Pool({ connectionString: url, max: 1, lock_timeout: 5_000, statement_timeout: 30_000 });
  let statements = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    statements++;
    return query(...args);
  };
  const store = await PostgresStore.open({ pool, schema });
  await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}".bench_rows (id bigserial PRIMARY KEY, body text NOT NULL)`);
  const checkpoints: number[] = [];
  const inserts: number[] = [];
  const sessions = 20;
  let checkpointStatements = 0;
  for (let i = 0; i < pairs; i++) {
    const append = Array.from({ length: 8 }, (_, m) => ({
      role: m % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content: `message ${m} of turn ${i} `.repeat(4),
    }));
    const before = statements;
    const t0 = performance.now();
    await store.checkpoint({
      sessionId: `c${i % sessions}`,
      agent: 'bench',
      expectedRevision: Math.floor(i / sessions),
      state: { 'memory.turns': i },
      append,
      turn: {
        index: Math.floor(i / sessions),
        input: `question ${i}`,
        status: 'completed',
        reply: 'ok',
        rounds: 4,
        toolCalls: 3,
        usage: {},
        startedAt: new Date().toISOString(),
        endedAt: new Date().toISOString(),
      },
      suspension: null,
    });
    checkpoints.push((performance.now() - t0) * 1000);
    checkpointStatements += statements - before;
    const t1 = performance.now();
    await pool.query(`INSERT INTO "${schema}".bench_rows (body) VALUES ($1)`, [`row ${i}`]);
    inserts.push((performance.now() - t1) * 1000);
  }
  await store.close();
  await pool.end();
  const summary = (xs: number[]) => {
    const sorted = xs.slice(10).sort((a, b) => a - b);
    return { p50: Math.round(quantile(sorted, 0.5)), p99: Math.round(quantile(sorted, 0.99)) };
  };
  const checkpointUs = summary(checkpoints);
  const insertUs = summary(inserts);
  return {
    checkpointUs,
    insertUs,
    ratio: round(checkpointUs.p50 / insertUs.p50, 2),
    statementsPerCheckpoint: checkpointStatements / pairs,
  };
}
