import 'reflect-metadata';
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ScriptedModel, SqliteStore, Trellis, type ModelRequest } from '../../../index.js';
import type { AuditRecord } from '../../../stores.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { GatedNotesPlugin } from '../../fixtures/cli/gated-notes.plugin.js';
import { fakeCliIo } from '../../support/fake-cli-io.js';

const NOTES = fileURLToPath(new URL('../../fixtures/cli/gated-notes.plugin.ts', import.meta.url));
const TESTING = fileURLToPath(new URL('../../../testing.ts', import.meta.url));
const script = (request: ModelRequest) =>
  request.messages.at(-1)?.role === 'tool'
    ? `Done: ${request.messages.at(-1)!.content}`
    : { toolCalls: [{ name: 'notes.write', args: { text: request.messages.at(-1)!.content } }] };
const POLICY = { policies: [{ name: 'notes', tools: ['notes.*'], roles: ['editor'], requireReason: true }] };

let cwd: string;
/** The config reads `identity.json` each time it is loaded (ES modules are loaded once per process; its function runs each time). */
function writeConfig(identity: object | undefined) {
  writeFileSync(join(cwd, 'identity.json'), JSON.stringify(identity ?? null));
  writeFileSync(
    join(cwd, 'trellis.config.ts'),
    `import { readFileSync } from 'node:fs';
     import { ScriptedModel } from '${TESTING}';
     import { GatedNotesPlugin } from '${NOTES}';
     const script = ${script.toString()};
     export default () => {
       const identity = JSON.parse(readFileSync(new URL('./identity.json', import.meta.url), 'utf8'));
       return { agent: { name: 'noter' }, plugins: [GatedNotesPlugin], store: 'notes.db', model: new ScriptedModel(script),
         approvals: ${JSON.stringify(POLICY)}, ...(identity && { identity }) };
     };`,
  );
}

/** A session of the config's app waiting for `notes.write`, from another process's point of view. */
async function waitingCall(): Promise<string> {
  const store = SqliteStore.open(join(cwd, 'notes.db'));
  const app = Trellis.create({ store, approvals: POLICY });
  await app.install(GatedNotesPlugin);
  const asked = await app
    .agent({ name: 'noter', model: new ScriptedModel(script), instructions: '' })
    .session('c1')
    .send('buy milk');
  await app.stop();
  await store.close();
  return asked.suspended![0]!.callId;
}

async function cli(...args: string[]) {
  const io = fakeCliIo(cwd);
  const code = await runCli(['node', 'trellis', ...args], io);
  return { code, out: io.text(), err: io.stderr.join('\n') };
}

beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-audit-')));
  writeFileSync(join(cwd, 'package.json'), JSON.stringify({ type: 'module' }));
});
afterEach(() => rmSync(cwd, { recursive: true, force: true }));

describe('trellis resume decides as the configured identity; trellis audit export / verify', () => {
  it('refuses the OS user the policy does not know, then approves as the configured editor; the log exports and verifies', async () => {
    writeConfig(undefined);
    const callId = await waitingCall();
    const refused = await cli('resume', 'c1', '--approve', callId, '--reason', 'groceries');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/policy 'notes' allows roles editor; 'os:[^']+' has none/);

    writeConfig({ id: 'alice@example.com', roles: ['editor'] });
    const noReason = await cli('resume', 'c1', '--approve', callId);
    expect(noReason.code).toBe(1);
    expect(noReason.err).toContain('requires a reason');
    const approved = await cli('resume', 'c1', '--approve', callId, '--reason', 'groceries');
    expect(approved.code).toBe(0);
    expect(approved.out).toContain('Done: noted buy milk');

    const exported = await cli('audit', 'export');
    expect(exported.code).toBe(0);
    const records = exported.out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as AuditRecord);
    expect(
      records.map((r) => [
        r.seq,
        r.entry.outcome,
        r.entry.approver?.id.startsWith('os:') ? 'os' : r.entry.approver?.id,
      ]),
    ).toEqual([
      [1, 'refused', 'os'],
      [2, 'refused', 'alice@example.com'],
      [3, 'approved', 'alice@example.com'],
    ]);
    expect(records[2]!.entry).toMatchObject({
      tool: 'notes.write',
      callId,
      reason: 'groceries',
      policy: 'notes',
      approver: { roles: ['editor'] },
    });
    const verified = await cli('audit', 'verify');
    expect(verified.code).toBe(0);
    expect(verified.out).toContain(`ok: 3 records`);
    expect(verified.out).toContain(`head ${records[2]!.hash}`);

    expect((await cli('audit', 'export', '--out', 'audit.jsonl')).code).toBe(0);
    expect((await cli('audit', 'verify', '--file', 'audit.jsonl', '--head', records[2]!.hash)).code).toBe(0);
    // The export cut short: only the kept head tells.
    writeFileSync(
      join(cwd, 'short.jsonl'),
      readFileSync(join(cwd, 'audit.jsonl'), 'utf8').split('\n').slice(0, 2).join('\n'),
    );
    expect((await cli('audit', 'verify', '--file', 'short.jsonl')).code).toBe(0);
    const cut = await cli('audit', 'verify', '--file', 'short.jsonl', '--head', records[2]!.hash);
    expect(cut.code).toBe(1);
    expect(cut.err).toContain('removed from its end');

    // Someone with write access to the file drops the guard and rewrites who approved.
    const raw = new Database(join(cwd, 'notes.db'));
    raw.exec('DROP TRIGGER audit_log_no_update');
    raw
      .prepare('UPDATE audit_log SET entry = replace(entry, ?, ?) WHERE seq = 3')
      .run('alice@example.com', 'mallory@example.com');
    raw.close();
    const tampered = await cli('audit', 'verify');
    expect(tampered.code).toBe(1);
    expect(tampered.err).toContain('broken at record 3 of 3: its hash does not match its contents');
  });
});
