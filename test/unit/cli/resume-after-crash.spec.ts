import 'reflect-metadata';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ScriptedModel, SqliteStore, Trellis, type ModelRequest, type SessionStore } from '../../../index.js';
import type { SessionCheckpoint, StepAppend } from '../../../stores.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { GatedNotesPlugin } from '../../fixtures/cli/gated-notes.plugin.js';
import { fakeCliIo } from '../../support/fake-cli-io.js';

const NOTES = fileURLToPath(new URL('../../fixtures/cli/gated-notes.plugin.ts', import.meta.url));
const TESTING = fileURLToPath(new URL('../../../testing.ts', import.meta.url));
const script = (request: ModelRequest) =>
  request.messages.at(-1)?.role === 'tool'
    ? `Done: ${request.messages.at(-1)!.content}`
    : { toolCalls: [{ name: 'notes.write', args: { text: request.messages.at(-1)!.content } }] };

let cwd: string;
beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-crash-')));
  writeFileSync(join(cwd, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(
    join(cwd, 'trellis.config.ts'),
    `import { ScriptedModel } from '${TESTING}';
     import { GatedNotesPlugin } from '${NOTES}';
     const script = ${script.toString()};
     export default { agent: { name: 'noter' }, plugins: [GatedNotesPlugin], store: 'notes.db', model: new ScriptedModel(script) };`,
  );
});
afterEach(() => rmSync(cwd, { recursive: true, force: true }));

/** The same store file, whose writes (checkpoints and journal steps) stop working after `failAfter` more, as a killed process's would. */
function dyingStore(path: string): SessionStore & { failAfter: number } {
  const real = SqliteStore.open(path);
  const state = { failAfter: Infinity };
  return new Proxy(real, {
    get(target, prop) {
      if (prop === 'failAfter') return state.failAfter;
      if (prop === 'checkpoint') {
        return (checkpoint: SessionCheckpoint) => {
          if (state.failAfter-- <= 0) return Promise.reject(new Error('killed'));
          return target.checkpoint(checkpoint);
        };
      }
      if (prop === 'appendSteps') {
        return (append: StepAppend) => {
          if (state.failAfter-- <= 0) return Promise.reject(new Error('killed'));
          return target.appendSteps(append);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
    set(_, prop, value) {
      if (prop !== 'failAfter') return false;
      state.failAfter = value as number;
      return true;
    },
  }) as unknown as SessionStore & { failAfter: number };
}

describe('trellis resume after a crash cut an approved call off mid-run', () => {
  it('sessions show offers --retry/--skip, --approve is refused by the kernel, --retry runs the call again', async () => {
    // A process approves the call, the tool runs, and the process dies before the result is saved.
    const store = dyingStore(join(cwd, 'notes.db'));
    const app = Trellis.create({ store });
    await app.install(GatedNotesPlugin);
    const session = app.agent({ name: 'noter', model: new ScriptedModel(script), instructions: '' }).session('c1');
    const asked = await session.send('buy milk');
    const callId = asked.suspended![0]!.callId;
    store.failAfter = 2; // the claim and `started` are saved; the result is not
    await expect(session.resume({ decisions: [{ callId, decision: 'approve' }] })).rejects.toThrow('killed');
    await app.stop();
    await store.close?.();

    const shown = fakeCliIo(cwd);
    expect(await runCli(['node', 'trellis', 'sessions', 'show', 'c1'], shown)).toBe(0);
    expect(shown.stdout.join('')).toContain(
      `cut off mid-run (it may or may not have run): trellis resume c1 --retry ${callId}   (or --skip ${callId}`,
    );

    const approved = fakeCliIo(cwd);
    expect(await runCli(['node', 'trellis', 'resume', 'c1', '--approve', callId], approved)).toBe(1);
    expect(approved.stderr.join('\n')).toContain(`does not allow 'approve'; allowed: retry, skip`);

    const retried = fakeCliIo(cwd);
    expect(await runCli(['node', 'trellis', 'resume', 'c1', '--retry', callId], retried)).toBe(0);
    expect(retried.stdout.join('')).toContain('Done: noted buy milk');

    const again = fakeCliIo(cwd);
    expect(await runCli(['node', 'trellis', 'resume', 'c1', '--retry', callId], again)).toBe(0);
    expect(again.stdout.join('')).toContain(`Nothing to do: ${callId} was already decided`);
  }, 60_000);
});
