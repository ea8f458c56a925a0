import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore, SqliteStore, type SessionStore } from 'trellis';
import { canKeepCredentials, CREDENTIAL_LIMITS, type CredentialStore } from 'trellis/stores';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService } from '../../support/services.js';

/** What every store that keeps credentials promises. */
function credentialContract(
  open: () => Promise<SessionStore & CredentialStore>,
  reopen?: () => Promise<SessionStore & CredentialStore>,
) {
  it('keeps, replaces and forgets a value by owner and name; other owners and names are apart', async () => {
    const store = await open();
    expect(canKeepCredentials(store)).toBe(true);
    expect(await store.loadCredential('mcp:ledger', 'tokens')).toBeUndefined();
    await store.saveCredential('mcp:ledger', 'tokens', '{"access_token":"a1"}');
    await store.saveCredential('mcp:ledger', 'client', '{"client_id":"c1"}');
    await store.saveCredential('mcp:tickets', 'tokens', '{"access_token":"t1"}');
    await store.saveCredential('mcp:ledger', 'tokens', '{"access_token":"a2"}');
    expect(await store.loadCredential('mcp:ledger', 'tokens')).toBe('{"access_token":"a2"}');
    expect(await store.loadCredential('mcp:ledger', 'client')).toBe('{"client_id":"c1"}');
    expect(await store.loadCredential('mcp:tickets', 'tokens')).toBe('{"access_token":"t1"}');
    await store.deleteCredential('mcp:ledger', 'tokens');
    await store.deleteCredential('mcp:ledger', 'never-kept');
    expect(await store.loadCredential('mcp:ledger', 'tokens')).toBeUndefined();
    expect(await store.loadCredential('mcp:ledger', 'client')).toBe('{"client_id":"c1"}');
    if (reopen) {
      await store.close?.();
      const again = await reopen();
      expect(await again.loadCredential('mcp:tickets', 'tokens')).toBe('{"access_token":"t1"}');
      await again.close?.();
    }
  });

  it('refuses an empty or long key and a large value, naming the key and never the value', async () => {
    const store = await open();
    await expect(store.saveCredential('', 'tokens', 'x')).rejects.toMatchObject({ code: 'InvalidOptions' });
    await expect(store.loadCredential('mcp:a', 'n'.repeat(CREDENTIAL_LIMITS.maxKeyLength + 1))).rejects.toMatchObject({
      code: 'InvalidOptions',
    });
    const big = `secret-${'v'.repeat(CREDENTIAL_LIMITS.maxValueBytes)}`;
    const error = (await store.saveCredential('mcp:a', 'tokens', big).catch((e: unknown) => e)) as Error;
    expect(error).toMatchObject({ code: 'InvalidOptions', message: expect.stringContaining('mcp:a/tokens') });
    expect(error.message).not.toContain('secret-');
    await store.close?.();
  });
}

describe('credentials in MemoryStore', () => {
  credentialContract(async () => new MemoryStore());
});

describe('credentials in SqliteStore (kept in the file)', () => {
  let dir: string;
  beforeEach(() => void (dir = mkdtempSync(join(tmpdir(), 'trellis-cred-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  credentialContract(
    async () => SqliteStore.open(join(dir, 'store.db')),
    async () => SqliteStore.open(join(dir, 'store.db')),
  );
});

const postgres = await haveService('postgres', 'credentials in PostgresStore');

(postgres ? describe : describe.skip)('credentials in PostgresStore (kept in the schema)', () => {
  const schemas = new PostgresSchemas();
  let schema: string;
  beforeEach(() => void (schema = schemas.next()));
  afterAll(() => schemas.dropAll());
  credentialContract(
    () => schemas.open(schema),
    () => schemas.open(schema),
  );
});
