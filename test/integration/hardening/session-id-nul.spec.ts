import { MemoryStore, ScriptedModel, SqliteStore, Trellis, TrellisError, type SessionStore } from '../../../index.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService } from '../../support/services.js';

/** What every door to a session does with an id holding a NUL: PostgreSQL refuses one, so everything does. */
const BAD_IDS = ['a\u0000b', '\u0000'];

async function refusalOf(work: () => unknown): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  return undefined;
}

function checkpointOf(sessionId: string) {
  return { sessionId, expectedRevision: 0, transcript: [], state: {}, turn: undefined } as never;
}

async function expectStoreRefuses(store: SessionStore): Promise<void> {
  for (const id of BAD_IDS) {
    const doors: [string, () => unknown][] = [
      ['load', () => store.load(id)],
      ['checkpoint', () => store.checkpoint(checkpointOf(id))],
      ['delete', () => store.delete(id)],
      ['acquireLease', () => store.acquireLease(id, 'holder', 10_000)],
    ];
    for (const [door, work] of doors) {
      const error = await refusalOf(work);
      expect([door, TrellisError.is(error) ? error.code : String(error)]).toEqual([door, 'InvalidOptions']);
      expect((error as Error).message).toContain('NUL');
    }
  }
}

describe('a NUL in a session id is refused everywhere, as PostgreSQL refuses it', () => {
  it('agent.session refuses it before anything runs', () => {
    const app = Trellis.create();
    const agent = app.agent({ name: 'a', model: new ScriptedModel(['ok']), instructions: 'x' });
    for (const id of BAD_IDS) {
      let error: unknown;
      try {
        agent.session(id);
      } catch (caught) {
        error = caught;
      }
      expect(TrellisError.is(error, 'InvalidOptions')).toBe(true);
    }
  });

  it('MemoryStore refuses it at every door', async () => {
    await expectStoreRefuses(new MemoryStore());
  });

  it('SqliteStore refuses it at every door', async () => {
    const store = new SqliteStore({ path: ':memory:' });
    try {
      await expectStoreRefuses(store);
    } finally {
      await store.close?.();
    }
  });

  it('PostgresStore refuses it at every door with the same error', async () => {
    if (!(await haveService('postgres', 'PostgresStore NUL ids'))) return;
    const schemas = new PostgresSchemas();
    const store = await schemas.open();
    try {
      await expectStoreRefuses(store);
    } finally {
      await store.close();
      await schemas.dropAll();
    }
  });
});
