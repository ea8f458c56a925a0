import 'reflect-metadata';
import { ScriptedModel, Trellis, type SessionStore } from '../../../index.js';
import type { PostgresStore } from '../../../src/engine/stores/postgres-store.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService } from '../../support/services.js';
import { checkpointOf } from '../../support/session-store-contract.js';

const available = await haveService('postgres', 'PostgresStore deltas (loadSince)');
const schemas = available ? new PostgresSchemas() : undefined;

afterAll(async () => {
  await schemas?.dropAll();
});

/**
 * The store seen through a proxy that counts its whole loads and the rows of each delta it
 * answers (PostgresStore's methods are sealed, so they are wrapped, not patched).
 */
function counted(store: PostgresStore): { store: PostgresStore; seen: { loads: number; deltaRows: number[] } } {
  const seen = { loads: 0, deltaRows: [] as number[] };
  const wrapped = new Proxy(store, {
    get(target, name) {
      if (name === 'load') {
        return (id: string) => {
          seen.loads++;
          return target.load(id);
        };
      }
      if (name === 'loadSince') {
        return async (id: string, since: Parameters<PostgresStore['loadSince']>[1]) => {
          const delta = await target.loadSince(id, since);
          seen.deltaRows.push(
            delta === undefined || delta.unchanged
              ? 0
              : delta.transcript.length + delta.turns.length + (delta.steps?.length ?? 0),
          );
          return delta;
        };
      }
      const value: unknown = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: wrapped, seen };
}

(available ? describe : describe.skip)('PostgresStore.loadSince', () => {
  const opened: SessionStore[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });
  const open = async (schema?: string) => {
    const store = await schemas!.open(schema);
    opened.push(store);
    return store;
  };

  it('answers unchanged (and nothing else) at the stored revision, and only the rows added since otherwise', async () => {
    const store = await open();
    await store.checkpoint(checkpointOf('s1', 0, 0));
    await store.checkpoint(checkpointOf('s1', 1, 1));
    const full = (await store.load('s1'))!;

    await expect(
      store.loadSince('s1', { revision: full.revision, messages: full.transcript.length, turns: full.turns.length }),
    ).resolves.toEqual({ unchanged: true, revision: full.revision, createdAt: full.createdAt });
    await store.checkpoint(checkpointOf('s1', 2, 2));
    const after = (await store.load('s1'))!;
    const delta = await store.loadSince('s1', {
      revision: full.revision,
      messages: full.transcript.length,
      turns: full.turns.length,
    });

    expect(delta).toMatchObject({
      unchanged: false,
      revision: after.revision,
      state: after.state,
      suspension: after.suspension,
      createdAt: full.createdAt,
      messageCount: after.transcript.length,
    });
    if (!delta || delta.unchanged) throw new Error('expected a delta');
    expect([...full.transcript, ...delta.transcript]).toEqual(after.transcript);
    // The copy's last turn comes again (a resumed turn replaces its record), then the new one.
    expect(delta.turns.map((t) => t.index)).toEqual([1, 2]);
    await expect(store.loadSince('missing', { revision: 0, messages: 0, turns: 0 })).resolves.toBeUndefined();
    // A copy of a session created at another moment (erased and created again since) is told it moved, at the same revision.
    const other = await store.loadSince('s1', {
      revision: after.revision,
      messages: after.transcript.length,
      turns: after.turns.length,
      createdAt: '2000-01-01T00:00:00.000Z',
    });
    expect(other).toMatchObject({ unchanged: false, createdAt: full.createdAt });
    await expect(store.loadSince('bad\u0000id', { revision: 0, messages: 0, turns: 0 })).rejects.toMatchObject({
      code: 'InvalidOptions',
    });
  });

  it('gives the bytes of large parts back in a delta, as a whole load does', async () => {
    const { PART_INLINE_BYTES } = await import('../../../src/engine/stores/part-blobs.js');
    const store = await open();
    await store.checkpoint(checkpointOf('b1', 0, 0));
    const copy = (await store.load('b1'))!;
    const large = Buffer.alloc(PART_INLINE_BYTES + 1, 9).toString('base64');
    const image = { type: 'image' as const, data: large, mediaType: 'image/png' };
    await store.checkpoint(
      checkpointOf('b1', 1, 1, {
        append: [{ role: 'user', content: 'look', parts: [{ type: 'text', text: 'look' }, image] }],
      }),
    );

    const delta = await store.loadSince('b1', {
      revision: copy.revision,
      messages: copy.transcript.length,
      turns: copy.turns.length,
    });

    if (!delta || delta.unchanged) throw new Error('expected a delta');
    expect(delta.transcript).toHaveLength(1);
    expect(delta.transcript[0]!.parts).toEqual([{ type: 'text', text: 'look' }, image]);
  });

  it('a copy of a session that was erased and created again under its id is loaded again whole, never spliced', async () => {
    const schema = schemas!.next();
    const [a, b] = [counted(await open(schema)), counted(await open(schema))];
    const apps = [a, b].map(({ store }) => Trellis.create({ store }));
    const agents = apps.map((app) =>
      app.agent({
        name: 'echo',
        model: new ScriptedModel(async (r) => `echo ${r.messages.at(-1)!.content}`),
        instructions: 'Echo.',
      }),
    );
    const [first, second] = agents.map((agent) => agent.session('reused')) as [
      ReturnType<(typeof agents)[0]['session']>,
      ReturnType<(typeof agents)[0]['session']>,
    ];
    await first.send('secret-1');
    await first.send('secret-2');
    await a.store.delete('reused');
    // Another app starts a new conversation under the same id, as long as the erased one.
    for (const text of ['new-1', 'new-2', 'new-3']) await second.send(text);

    await first.send('new-4');

    const stored = (await a.store.load('reused'))!;
    expect(stored.transcript.map((m) => m.content)).toEqual([
      'new-1',
      'echo new-1',
      'new-2',
      'echo new-2',
      'new-3',
      'echo new-3',
      'new-4',
      'echo new-4',
    ]);
    expect(first.transcript).toEqual(stored.transcript);
    expect(JSON.stringify(first.transcript)).not.toContain('secret');
    for (const app of apps) await app.stop();
  });

  it('keeps the sessions of two apps in step by deltas: rows read per turn stay flat as the session grows', async () => {
    const schema = schemas!.next();
    const wrapped = [counted(await open(schema)), counted(await open(schema))];
    const stores = wrapped.map((w) => w.store) as [PostgresStore, PostgresStore];
    const counts = wrapped.map((w) => w.seen);
    const apps = stores.map((store) => Trellis.create({ store }));
    const agents = apps.map((app) =>
      app.agent({
        name: 'echo',
        model: new ScriptedModel(async (r) => `echo ${r.messages.at(-1)!.content}`),
        instructions: 'Echo.',
      }),
    );
    const sessions = agents.map((agent) => agent.session('hopping'));

    // The turns hop between the two apps, as queued turns hop between workers.
    for (let t = 0; t < 12; t++) await sessions[t % 2]!.send(`m${t}`);

    const loads = counts.map((c) => c.loads);
    const stored = (await stores[0].load('hopping'))!;
    expect(stored.transcript).toHaveLength(24);
    for (const session of sessions) {
      await session.pending();
      expect(session.transcript).toEqual(stored.transcript);
    }
    // Each app loaded the session whole once (its first use); after that only deltas: the other
    // app's one turn (2 messages, its turn record, the copy's last record) per catch-up.
    expect(loads).toEqual([1, 1]);
    const rows = counts.flatMap((c) => c.deltaRows.filter((n) => n > 0));
    expect(Math.max(...rows)).toBeLessThanOrEqual(4);
    for (const app of apps) await app.stop();
  });
});

(available ? describe : describe.skip)('PostgresStore.prune', () => {
  it('deletes sessions not written for the given days with their rows, keeps recent ones and one whose lease is held', async () => {
    const store = await schemas!.open();
    try {
      for (const id of ['old', 'held', 'recent']) await store.checkpoint(checkpointOf(id, 0, 0));
      await schemas!.admin.query(
        `UPDATE "${store.schema}".sessions SET updated_at = now() - interval '40 days' WHERE id IN ('old', 'held')`,
      );
      await store.acquireLease('held', 'worker-a', 60_000);

      await expect(store.prune(30)).resolves.toBe(1);

      await expect(store.load('old')).resolves.toBeUndefined();
      expect((await store.load('held'))?.turns).toHaveLength(1);
      expect((await store.load('recent'))?.turns).toHaveLength(1);
      const { rows } = await schemas!.admin.query(
        `SELECT COUNT(*)::int AS n FROM "${store.schema}".messages WHERE session_id = 'old'`,
      );
      expect(rows[0].n).toBe(0);
      await expect(store.prune(0)).rejects.toMatchObject({ code: 'InvalidOptions' });
    } finally {
      await store.close();
    }
  });
});

(available ? describe : describe.skip)(
  'PostgresStore.acquireLeaseReadingRevision (a queue worker taking a job)',
  () => {
    it('takes the lease and reads the revision in one statement; another holder gets undefined; a session not stored reads 0', async () => {
      const store = await schemas!.open();
      try {
        await store.checkpoint(checkpointOf('s1', 0, 0));
        await store.checkpoint(checkpointOf('s1', 1, 1));

        await expect(store.acquireLeaseReadingRevision('queue:turns:s1', 'w1', 10_000, 's1')).resolves.toBe(2);
        await expect(store.acquireLeaseReadingRevision('queue:turns:s1', 'w2', 10_000, 's1')).resolves.toBeUndefined();
        // The holder renews by taking it again; the lease was written as acquireLease writes it.
        await expect(store.acquireLeaseReadingRevision('queue:turns:s1', 'w1', 10_000, 's1')).resolves.toBe(2);
        await expect(store.acquireLease('queue:turns:s1', 'w2', 10_000)).resolves.toBe(false);
        await store.releaseLease('queue:turns:s1', 'w1');
        await expect(store.acquireLeaseReadingRevision('queue:turns:s1', 'w2', 10_000, 's1')).resolves.toBe(2);
        await expect(store.acquireLeaseReadingRevision('queue:turns:new', 'w1', 10_000, 'new')).resolves.toBe(0);
        // The session is written on as usual afterwards.
        await expect(store.checkpoint(checkpointOf('s1', 2, 2))).resolves.toBe(3);
        await expect(store.acquireLeaseReadingRevision('queue:turns:s1', 'w1', 0, 's1')).rejects.toMatchObject({
          code: 'InvalidOptions',
        });
      } finally {
        await store.close();
      }
    });
  },
);
