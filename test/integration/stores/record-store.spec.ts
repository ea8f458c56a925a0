import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore, Plugin, SqliteStore, Trellis, TrellisError, type SessionStore } from '../../../index.js';
import type { PluginHost, PluginRecords } from '../../../plugin.js';
import type { RecordStore } from '../../../stores.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService } from '../../support/services.js';

type Store = RecordStore & SessionStore;

/** What every store's records must do. */
function describeRecords(label: string, open: () => Promise<Store>): void {
  describe(`records of ${label}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(() => store.close());

    it('puts, gets, replaces and lists by subject in key order, values as JSON', async () => {
      await store.putRecord('memory.working', 'u1', 'b', { n: 1 });
      await store.putRecord('memory.working', 'u1', 'a', ['x', 2, true, null]);
      await store.putRecord('memory.working', 'u2', 'a', 'theirs');
      await store.putRecord('memory.working', 'u1', 'b', { n: 2, nested: { ok: true } });
      expect((await store.getRecord('memory.working', 'u1', 'b'))?.value).toEqual({ n: 2, nested: { ok: true } });
      expect(await store.getRecord('memory.working', 'u1', 'zz')).toBeUndefined();
      const listed = await store.listRecords('memory.working', 'u1');
      expect(listed.map((r) => [r.key, r.value])).toEqual([
        ['a', ['x', 2, true, null]],
        ['b', { n: 2, nested: { ok: true } }],
      ]);
      expect(Date.parse(listed[0]!.updatedAt)).toBeGreaterThan(Date.now() - 60_000);
      // Another namespace sees nothing of these.
      expect(await store.listRecords('memory.recall', 'u1')).toEqual([]);
      expect(await store.getRecord('memory.recall', 'u1', 'a')).toBeUndefined();
    });

    it('deletes by subject, by key prefix across subjects, or both; a prefix is literal (% and _ are characters)', async () => {
      for (const [subject, key] of [
        ['u1', 's-a-1'],
        ['u1', 's-a-2'],
        ['u1', 's-b-1'],
        ['u2', 's-a-1'],
        ['u2', 's_%-1'],
        ['u3', 'other'],
      ])
        await store.putRecord('ns', subject!, key!, 1);
      await store.putRecord('another', 'u1', 's-a-1', 1);
      expect(await store.deleteRecords('ns', { keyPrefix: 's_%' })).toBe(1);
      expect(await store.deleteRecords('ns', { keyPrefix: 's-a-' })).toBe(3);
      expect((await store.listRecords('ns', 'u1')).map((r) => r.key)).toEqual(['s-b-1']);
      expect(await store.deleteRecords('ns', { subject: 'u1' })).toBe(1);
      expect(await store.deleteRecords('ns', { subject: 'u3', keyPrefix: 'oth' })).toBe(1);
      expect(await store.listRecords('another', 'u1')).toHaveLength(1);
      await expect(store.deleteRecords('ns', {})).rejects.toThrow(/needs a subject or a keyPrefix/);
    });

    it('refuses bad names and values that are not JSON or too big', async () => {
      const refused = (work: Promise<unknown>) =>
        work.then(
          () => 'accepted',
          (e: unknown) => (TrellisError.is(e, 'InvalidOptions') ? 'refused' : String(e)),
        );
      expect(await refused(store.putRecord('ns', '', 'k', 1))).toBe('refused');
      expect(await refused(store.putRecord('ns', 'u', 'k\u0000', 1))).toBe('refused');
      expect(await refused(store.putRecord('ns', 'u', 'k', undefined))).toBe('refused');
      expect(await refused(store.putRecord('ns', 'u', 'k', { big: 'x'.repeat(4 * 1024 * 1024) }))).toBe('refused');
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      expect(await refused(store.putRecord('ns', 'u', 'k', cyclic))).toBe('refused');
      expect(await store.listRecords('ns', 'u')).toEqual([]);
    });
  });
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-records-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

describeRecords('MemoryStore', async () => new MemoryStore());
describeRecords('SqliteStore', async () => SqliteStore.open(join(dir, `r${files++}.db`)));

const pg = await haveService('postgres', 'records of PostgresStore');
if (pg) {
  const schemas = new PostgresSchemas();
  afterAll(() => schemas.dropAll());
  describeRecords('PostgresStore', () => schemas.open());
}

describe("a plugin's records", () => {
  let seen: PluginRecords[] = [];
  @Plugin({ name: 'alpha', version: '1.0.0' })
  class Alpha {
    onInstall(host: PluginHost) {
      seen.push(host.records);
    }
  }
  @Plugin({ name: 'beta', version: '1.0.0' })
  class Beta {
    onInstall(host: PluginHost) {
      seen.push(host.records);
    }
  }
  beforeEach(() => {
    seen = [];
  });

  it("are its own: another plugin reads and deletes none of them, and they outlive the app in the store's file", async () => {
    const path = join(dir, 'plugins.db');
    const app = Trellis.create({ store: SqliteStore.open(path) });
    await app.install(Alpha);
    await app.install(Beta);
    const [alpha, beta] = seen;
    await alpha!.put('u1', 'working', { notes: 'likes tea' });
    expect(await beta!.get('u1', 'working')).toBeUndefined();
    expect(await beta!.list('u1')).toEqual([]);
    expect(await beta!.delete({ subject: 'u1' })).toBe(0);
    expect(Object.isFrozen(alpha)).toBe(true);
    await app.stop();

    const again = Trellis.create({ store: SqliteStore.open(path) });
    await again.install(Alpha);
    expect((await seen[2]!.get('u1', 'working'))?.value).toEqual({ notes: 'likes tea' });
    await again.stop();
  });

  it('live in memory for an app without a store, and fail with a clear error on a store that keeps none', async () => {
    const bare = Trellis.create();
    await bare.install(Alpha);
    await seen[0]!.put('u', 'k', 1);
    expect((await seen[0]!.get('u', 'k'))?.value).toBe(1);
    const plain = new MemoryStore();
    const noRecords = Object.create(plain, { getRecord: { value: undefined } }) as SessionStore;
    const app = Trellis.create({ store: noRecords });
    await app.install(Beta);
    await expect(seen[1]!.get('u', 'k')).rejects.toThrow(/keeps records, and the session store .* keeps none/);
  });
});
