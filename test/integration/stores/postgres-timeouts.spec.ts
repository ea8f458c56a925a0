import pg from 'pg';
import { PostgresStore } from '../../../src/engine/stores/postgres-store.js';
import { TrellisError } from '../../../src/errors/trellis-error.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { POSTGRES_URL, haveService } from '../../support/services.js';
import { checkpointOf } from '../../support/session-store-contract.js';

const available = await haveService('postgres', 'PostgresStore lock and statement timeouts');
const schemas = available ? new PostgresSchemas() : undefined;

afterAll(async () => {
  await schemas?.dropAll();
});

(available ? describe : describe.skip)('PostgresStore: a checkpoint never waits forever', () => {
  it('a checkpoint behind a row lock held elsewhere fails within lockTimeoutMs with a retryable StoreFailed', async () => {
    const schema = schemas!.next();
    const store = await PostgresStore.open({ url: POSTGRES_URL, schema, maxConnections: 2, lockTimeoutMs: 300 });
    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    try {
      await store.checkpoint(checkpointOf('s1', 0, 0));
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM "${schema}".sessions WHERE id = 's1' FOR UPDATE`);
      const started = Date.now();
      const error = await store.checkpoint(checkpointOf('s1', 1, 1)).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      const waited = Date.now() - started;
      expect(TrellisError.is(error, 'StoreFailed')).toBe(true);
      expect((error as TrellisError).retryable).toBe(true);
      expect((error as TrellisError).details).toMatchObject({ driverCode: '55P03' });
      expect(waited).toBeLessThan(5_000);
      await holder.query('ROLLBACK');
      // Once the lock is gone the same checkpoint lands.
      expect(await store.checkpoint(checkpointOf('s1', 1, 1))).toBe(2);
    } finally {
      await holder.end();
      await store.close();
    }
  }, 20_000);

  it("on a host's pool (whose connections set no timeouts) the one-statement checkpoint and step write are bounded too", async () => {
    const schema = schemas!.next();
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
    const store = await PostgresStore.open({ pool, schema, lockTimeoutMs: 300 });
    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    try {
      await store.checkpoint(checkpointOf('s1', 0, 0));
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM "${schema}".sessions WHERE id = 's1' FOR UPDATE`);
      for (const write of [
        () => store.checkpoint(checkpointOf('s1', 1, 1)),
        () => store.appendSteps({ sessionId: 's1', agent: 'support', expectedRevision: 1, steps: [{ kind: 'x' }] }),
      ]) {
        const started = Date.now();
        const error = await write().then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(TrellisError.is(error, 'StoreFailed')).toBe(true);
        expect((error as TrellisError).details).toMatchObject({ driverCode: '55P03' });
        expect(Date.now() - started).toBeLessThan(5_000);
      }
      await holder.query('ROLLBACK');
      expect(await store.checkpoint(checkpointOf('s1', 1, 1))).toBe(2);
      // The host's connections keep the host's settings.
      const { rows } = await pool.query<{ lock_timeout: string }>('SHOW lock_timeout');
      expect(rows[0]!.lock_timeout).toBe('0');
    } finally {
      await holder.end();
      await store.close();
      await pool.end();
    }
  }, 20_000);

  it("a host's pool made with both timeouts keeps its own values: its checkpoint goes alone and fails at the pool's lock_timeout", async () => {
    const schema = schemas!.next();
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 2, lock_timeout: 300, statement_timeout: 10_000 });
    // The store's own bound would be 5 s: the 300 ms seen is the pool's, so no SET LOCAL ran.
    const store = await PostgresStore.open({ pool, schema });
    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    try {
      await store.checkpoint(checkpointOf('s1', 0, 0));
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM "${schema}".sessions WHERE id = 's1' FOR UPDATE`);
      const started = Date.now();
      const error = await store.checkpoint(checkpointOf('s1', 1, 1)).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect((error as TrellisError).details).toMatchObject({ driverCode: '55P03' });
      expect(Date.now() - started).toBeLessThan(3_000);
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
      await store.close();
      await pool.end();
    }
  }, 20_000);

  it('the defaults bound both waits, and bad values are refused', async () => {
    const schema = schemas!.next();
    const store = await PostgresStore.open({ url: POSTGRES_URL, schema, maxConnections: 1 });
    try {
      expect(store.timeouts).toEqual({ lockTimeoutMs: 5_000, statementTimeoutMs: 30_000 });
    } finally {
      await store.close();
    }
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      const error = await PostgresStore.open({ url: POSTGRES_URL, schema, lockTimeoutMs: bad }).then(
        (opened) => opened.close(),
        (caught: unknown) => caught,
      );
      expect(TrellisError.is(error, 'InvalidOptions')).toBe(true);
    }
  });
});
