import pg from 'pg';
import { PostgresStore } from '../../../src/engine/stores/postgres-store.js';
import { POSTGRES_MIGRATIONS } from '../../../src/engine/stores/postgres-migrations.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { POSTGRES_URL, haveService } from '../../support/services.js';
import { checkpointOf, exchange, rejection } from '../../support/session-store-contract.js';
import { describeStoreConformance } from '../../support/store-conformance.js';

const available = await haveService('postgres', 'PostgresStore conformance and driver tests');
const LATEST = POSTGRES_MIGRATIONS.at(-1)!.version;
const schemas = available ? new PostgresSchemas() : undefined;

afterAll(async () => {
  await schemas?.dropAll();
});

if (available)
  describeStoreConformance('PostgresStore', {
    open: () => schemas!.open(),
    sibling: (store) => schemas!.open((store as PostgresStore).schema),
    dispose: async (store) => {
      await store.close();
      await schemas!.drop((store as PostgresStore).schema);
    },
    openFutureSchema: async () => {
      const schema = schemas!.next();
      await (await schemas!.open(schema)).close();
      await schemas!.admin.query(
        `INSERT INTO "${schema}".schema_migrations (version, name) VALUES ($1, 'from-the-future')`,
        [LATEST + 1],
      );
      return schemas!.open(schema);
    },
  });

(available ? describe : describe.skip)('PostgresStore', () => {
  const opened: PostgresStore[] = [];
  const open = async (schema?: string) => {
    const store = await schemas!.open(schema);
    opened.push(store);
    return store;
  };

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  describe('migrations', () => {
    it('creates the schema and records every migration once, even when instances start together', async () => {
      const schema = schemas!.next();

      await Promise.all(Array.from({ length: 5 }, () => open(schema)));

      const { rows } = await schemas!.admin.query(
        `SELECT version, name FROM "${schema}".schema_migrations ORDER BY version`,
      );
      expect(rows).toEqual(POSTGRES_MIGRATIONS.map(({ version, name }) => ({ version, name })));
    });

    it('says the tables are missing, with a way out, when the schema was dropped under it', async () => {
      const store = await open();
      await schemas!.drop(store.schema);

      const error = await rejection(store.load('s1'));

      expect(error.code).toBe('UnsupportedSchema');
      expect(error.message).toMatch(/tables are missing/);
      expect(error.message).toMatch(/PostgresStore\.open\(\)/);
      expect(error.details).toMatchObject({ operation: 'load a session', schema: store.schema, driverCode: '42P01' });
    });
  });

  describe('checkpoint atomicity inside the database', () => {
    it('rolls the whole checkpoint back when a statement fails halfway, and reports a StoreFailed', async () => {
      const store = await open();
      await store.checkpoint(checkpointOf('s1', 0, 0));
      const before = await store.load('s1');
      // The turn row is written after the session row and the messages: fail it.
      await schemas!.admin.query(`
        CREATE FUNCTION "${store.schema}".refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$;
        CREATE TRIGGER refuse BEFORE INSERT ON "${store.schema}".turns FOR EACH ROW EXECUTE FUNCTION "${store.schema}".refuse();`);

      const error = await rejection(store.checkpoint(checkpointOf('s1', 1, 1)));

      expect(error.code).toBe('StoreFailed');
      expect(error.message).toMatch(/disk on fire/);
      expect(error.details).toMatchObject({ operation: 'checkpoint a session', driverCode: 'P0001' });
      expect(await store.load('s1')).toEqual(before);
      await expect(store.revision('s1')).resolves.toBe(1);
    });
  });

  describe('values', () => {
    it('keeps text that jsonb would refuse or change: NUL characters, lone surrogates, key order, -0', async () => {
      const store = await open();
      const content = 'nul:\u0000 lone:\ud800 emoji:🙂';
      const state = { z: 1, a: { y: [1, 'two', null], b: -0 } };

      await store.checkpoint(checkpointOf('s1', 0, 0, { state, append: [{ role: 'user', content }] }));

      const loaded = (await store.load('s1'))!;
      expect(loaded.transcript).toEqual([{ role: 'user', content }]);
      expect(Object.keys(loaded.state)).toEqual(['z', 'a']);
      expect(loaded.state).toEqual({ z: 1, a: { y: [1, 'two', null], b: 0 } });
    });

    it('refuses a damaged row on load, naming the session and the column', async () => {
      const store = await open();
      await store.checkpoint(checkpointOf('s1', 0, 0));
      await schemas!.admin.query(`UPDATE "${store.schema}".messages SET message = '{"role": 1}' WHERE seq = 1`);

      const error = await rejection(store.load('s1'));

      expect(error.code).toBe('InvalidCheckpoint');
      expect(error.message).toMatch(
        /Stored session "s1" cannot be read: messages\.message \(seq 1\) is not a chat message/,
      );
      expect(error.message).toMatch(/The database was changed outside Trellis/);
    });
  });

  describe('pools', () => {
    it('borrows a pool the host passes in and leaves it open on close', async () => {
      const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
      const schema = schemas!.next();
      try {
        const store = await PostgresStore.open({ pool, schema });
        await store.checkpoint(checkpointOf('s1', 0, 0));
        await store.close();

        const { rows } = await pool.query(`SELECT COUNT(*)::int AS n FROM "${schema}".messages`);
        expect(rows[0].n).toBe(exchange(0).length);
        expect((await rejection(store.load('s1'))).message).toMatch(/was closed/);
      } finally {
        await pool.end();
      }
    });

    it('ends a pool it made: a closed store refuses work with StoreUnavailable', async () => {
      const store = await schemas!.open();
      await store.close();
      await store.close();

      const error = await rejection(store.acquireLease('s1', 'worker-a', 1000));

      expect(error.code).toBe('StoreUnavailable');
      expect(error.message).toMatch(/Open a new store/);
    });
  });

  describe('bad options and unreachable servers', () => {
    it('reports an unreachable server as retryable StoreUnavailable, without the password', async () => {
      const error = await rejection(
        PostgresStore.open({ url: 'postgres://postgres:sekret@127.0.0.1:1/test', schema: 'nowhere' }),
      );

      expect(error.code).toBe('StoreUnavailable');
      expect(error.retryable).toBe(true);
      expect(error.message).toMatch(/127\.0\.0\.1:1\/test/);
      expect(error.message).toMatch(/Check that the server is running/);
      expect(error.message).not.toMatch(/sekret/);
    });

    it.each([
      ['a schema name that needs quoting', { url: POSTGRES_URL, schema: 'x"; DROP TABLE y; --' }],
      ['neither pool nor url', {}],
      ['a URL that is not one', { url: 'not a url' }],
      ['zero connections', { url: POSTGRES_URL, maxConnections: 0 }],
    ])('refuses %s with InvalidOptions', async (_, options) => {
      const error = await rejection(PostgresStore.open(options as never));

      expect(error.code).toBe('InvalidOptions');
    });
  });
});

describe('PostgresStore: large part bytes by reference', () => {
  it('keeps bytes over PART_INLINE_BYTES out of the messages row, in part_blobs', async () => {
    if (!schemas) return;
    const { PART_INLINE_BYTES } = await import('../../../src/engine/stores/part-blobs.js');
    const { checkpointOf } = await import('../../support/session-store-contract.js');
    const store = await schemas.open();
    const large = Buffer.alloc(PART_INLINE_BYTES + 1, 7).toString('base64');
    await store.checkpoint(
      checkpointOf('b1', 0, 0, {
        append: [
          {
            role: 'user',
            content: '',
            parts: [{ type: 'file', data: large, mediaType: 'application/pdf', name: 'big.pdf' }],
          },
        ],
      }),
    );
    const { rows } = await schemas.admin.query(
      `SELECT message::text AS message FROM "${store.schema}".messages WHERE session_id = 'b1'`,
    );
    expect(rows[0].message).not.toContain(large.slice(0, 1000));
    expect(rows[0].message).toContain('"blob":"sha256-');
    const blobs = await schemas.admin.query(
      `SELECT COUNT(*)::int AS n FROM "${store.schema}".part_blobs WHERE session_id = 'b1'`,
    );
    expect(blobs.rows[0].n).toBe(1);
    expect((await store.load('b1'))!.transcript[0]!.parts).toEqual([
      { type: 'file', data: large, mediaType: 'application/pdf', name: 'big.pdf' },
    ]);
    await store.close();
  });
});

describe('PostgresStore: prepared statements of long schema names', () => {
  it('two stores whose 63-character schema names differ only at the end share one connection of a host pool', async () => {
    if (!schemas) return;
    // Names of prepared statements are cut at 63 characters: had they carried the schema whole, these would collide.
    const base = schemas.next();
    const [a, b] = ['a', 'b'].map((end) => `${base}_${'x'.repeat(62 - base.length - 1)}${end}`) as [string, string];
    expect(a).toHaveLength(63);
    const pool = new pg.Pool({
      connectionString: POSTGRES_URL,
      max: 1,
      lock_timeout: 5_000,
      statement_timeout: 30_000,
    });
    const stores = [await PostgresStore.open({ pool, schema: a }), await PostgresStore.open({ pool, schema: b })];
    try {
      for (const [i, store] of stores.entries()) {
        await store.checkpoint(checkpointOf(`s${i}`, 0, 0));
        await expect(store.loadSince(`s${i}`, { revision: 0, messages: 0, turns: 0 })).resolves.toMatchObject({
          unchanged: false,
          revision: 1,
        });
      }
      expect(await stores[1]!.load('s0')).toBeUndefined();
    } finally {
      for (const store of stores) await store.close();
      await pool.end();
    }
  });
});
