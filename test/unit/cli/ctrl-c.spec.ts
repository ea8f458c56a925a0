import 'reflect-metadata';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { CliIo } from '../../../src/hosts/cli/cli-io.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { SqliteStore } from '../../../index.js';

let cwd: string;

beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-ctrl-c-')));
  // A model that answers after 30 s unless its signal aborts: a turn that only Ctrl-C ends quickly.
  writeFileSync(
    join(cwd, 'trellis.config.mjs'),
    `export default {
      plugins: [],
      agent: { name: 'slow', instructions: 'Be slow.' },
      model: {
        name: 'slow-model',
        call(request) {
          return new Promise((resolve, reject) => {
            const timer = setTimeout(() => resolve({ text: 'late', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 }, model: 'slow-model', finishReason: 'stop' }), 30000);
            request.signal?.addEventListener('abort', () => { clearTimeout(timer); reject(request.signal.reason); }, { once: true });
          });
        },
      },
    };`,
  );
});

afterEach(() => rmSync(cwd, { recursive: true, force: true }));

interface InterruptIo extends CliIo {
  readonly stdout: string[];
  readonly stderr: string[];
  press(): void;
  readonly exits: number[];
  readonly listeners: Set<() => void>;
}

function interruptIo(): InterruptIo {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const listeners = new Set<() => void>();
  const exits: number[] = [];
  return {
    stdout,
    stderr,
    listeners,
    exits,
    write: (t) => void stdout.push(t),
    out: (l = '') => void stdout.push(`${l}\n`),
    err: (l) => void stderr.push(l),
    stdin: Readable.from(['']),
    cwd,
    env: {},
    exitCode: 0,
    onInterrupt: (handler) => {
      listeners.add(handler);
      return () => void listeners.delete(handler);
    },
    exitNow: (code) => void exits.push(code),
    press: () => {
      for (const handler of [...listeners]) handler();
    },
  };
}

async function pressWhenRunning(io: InterruptIo, times: number): Promise<void> {
  while (io.listeners.size === 0) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 100));
  for (let i = 0; i < times; i++) io.press();
}

describe('Ctrl-C in the CLI', () => {
  it('the first cancels the running turn through its signal and waits for it: exit 130, the session stays usable', async () => {
    const io = interruptIo();
    const started = Date.now();
    const [code] = await Promise.all([
      runCli(['node', 'trellis', 'run', '-s', 'c1', 'hello'], io),
      pressWhenRunning(io, 1),
    ]);

    expect(Date.now() - started).toBeLessThan(20_000);
    expect(code).toBe(130);
    expect(io.stderr).toContain('Cancelling the turn… (press Ctrl-C again to exit at once)');
    expect(io.stdout.join('')).toMatch(/— cancelled ·/);
    expect(io.exits).toEqual([]);
    expect(io.listeners.size).toBe(0);
    // A cancelled turn appends nothing, and the store is not left locked or half-written.
    const store = new SqliteStore({ path: join(cwd, '.trellis', 'trellis.db'), readonly: true });
    try {
      const session = await store.load('c1');
      expect(session?.transcript ?? []).toEqual([]);
    } finally {
      await store.close();
    }
  }, 30_000);

  it('the second exits at once with 130', async () => {
    const io = interruptIo();
    await Promise.all([runCli(['node', 'trellis', 'run', 'hello'], io), pressWhenRunning(io, 2)]);
    expect(io.exits).toEqual([130]);
    expect(io.stderr).toContain('Exiting now.');
  }, 30_000);
});
