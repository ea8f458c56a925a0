import 'reflect-metadata';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ScriptedModel, SqliteStore, Trellis } from '../../../index.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { BillingPlugin } from '../../fixtures/governance/billing.plugin.js';
import { fakeCliIo } from '../../support/fake-cli-io.js';

const BILLING = fileURLToPath(new URL('../../fixtures/governance/billing.plugin.ts', import.meta.url));

let cwd: string;
beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-erase-cli-')));
  writeFileSync(join(cwd, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(
    join(cwd, 'trellis.config.ts'),
    `import { BillingPlugin } from '${BILLING}';\nexport default { plugins: [BillingPlugin], store: 'e.db' };`,
  );
});
afterEach(() => rmSync(cwd, { recursive: true, force: true }));

async function cli(...args: string[]) {
  const io = fakeCliIo(cwd);
  const code = await runCli(['node', 'trellis', ...args], io);
  return { code, out: io.text(), err: io.stderr.join('\n') };
}

describe('trellis sessions erase', () => {
  it("erases one user's sessions and keeps the others; refuses a call without a selector or with a bad age", async () => {
    const store = SqliteStore.open(join(cwd, 'e.db'));
    const app = Trellis.create({ store });
    await app.install(BillingPlugin);
    const agent = app.agent({ name: 'trellis', model: new ScriptedModel(['hi', 'hi', 'hi']), instructions: '' });
    await agent.session('a1', { context: { 'app.user_id': 'u1' } }).send('one');
    await agent.session('a2', { context: { 'app.user_id': 'u1' } }).send('two');
    await agent.session('b1', { context: { 'app.user_id': 'u2' } }).send('three');
    await app.stop();
    await store.close();

    const erased = await cli('sessions', 'erase', '--user', 'u1');
    expect(erased.code).toBe(0);
    expect(erased.out).toMatch(/Erased 2 sessions: (a1, a2|a2, a1)\./);
    expect((await cli('sessions')).out).toContain('b1');
    expect((await cli('sessions')).out).not.toContain('a1');
    expect((await cli('sessions', 'erase', '--user', 'u1')).out).toContain('Nothing to erase');
    expect((await cli('sessions', 'erase')).code).toBe(2);
    expect((await cli('sessions', 'erase', '--older-than', 'a while')).code).toBe(2);
    expect((await cli('sessions', 'erase', '--older-than', '0s')).out).toContain('Erased 1 session: b1.');
  });
});

describe('trellis sessions prune', () => {
  it('is for a PostgreSQL store: on SQLite it says so and how to delete a session instead', async () => {
    const pruned = await cli('sessions', 'prune', '--older-than', '30');
    expect(pruned.code).toBe(1);
    expect(pruned.err).toContain('Pruning is for the PostgreSQL store');
    expect(pruned.err).toContain('trellis sessions delete <id>');
  });
});
