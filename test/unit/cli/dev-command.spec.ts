import 'reflect-metadata';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Command } from 'commander';
import type { CliIo } from '../../../src/hosts/cli/cli-io.js';
import { registerDevCommand } from '../../../src/hosts/cli/commands/dev.command.js';
import { runCli } from '../../../src/hosts/cli/program.js';

let cwd: string;
beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-dev-cli-')));
});
afterEach(() => rmSync(cwd, { recursive: true, force: true }));

function fakeIo(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    write: (t) => void stdout.push(t),
    out: (l = '') => void stdout.push(`${l}\n`),
    err: (l) => void stderr.push(l),
    stdin: Readable.from(['']),
    cwd,
    env: {},
    exitCode: 0,
  };
}

describe('trellis dev', () => {
  it('prints its loopback URL, serves the sessions a `trellis run` stored with their recorded timeline, and stops on a signal', async () => {
    const runIo = fakeIo();
    const code = await runCli(['node', 'trellis', 'run', '--session', 'desk-1', 'How many orders are there?'], runIo);
    expect(runIo.stderr.filter((l) => l.startsWith('trellis:'))).toEqual([]);
    expect(code).toBe(0);

    const io = fakeIo();
    let stop!: (signal: string) => void;
    let printed!: (url: string) => void;
    const url = new Promise<string>((resolve) => (printed = resolve));
    io.out = (line = '') => {
      io.stdout.push(line);
      const match = /^trellis dev: (http:\/\/127\.0\.0\.1:\d+\/)$/.exec(line);
      if (match) printed(match[1]!);
    };
    const program = new Command('trellis').exitOverride();
    registerDevCommand(program, io, () => new Promise((resolve) => (stop = resolve)));
    const running = program.parseAsync(['node', 'trellis', 'dev', '--port', '0']);

    const base = await url;
    const sessions = (await (await fetch(`${base}api/sessions`)).json()) as {
      sessions: { id: string; status: string }[];
    };
    const events = (await (await fetch(`${base}api/sessions/desk-1/turns/0/events`)).json()) as {
      timeline: { rows: { kind: string }[] };
    };
    stop('SIGTERM');
    await running;

    expect(sessions.sessions.map((s) => s.id)).toEqual(['desk-1']);
    expect(events.timeline.rows.map((r) => r.kind)).toEqual(expect.arrayContaining(['round', 'model', 'tool']));
    expect(io.stderr.join('\n')).toContain('trellis dev: stopping (SIGTERM)');
    await expect(fetch(`${base}api/sessions`)).rejects.toThrow();
  });

  it('refuses --host beyond loopback without a token, before opening anything', async () => {
    const io = fakeIo();
    expect(await runCli(['node', 'trellis', 'dev', '--host', '0.0.0.0'], io)).toBe(2);
    expect(io.stderr.join('\n')).toMatch(/--host 0\.0\.0\.0 opens the page beyond this machine, so it needs --token/);
  });

  it('refuses a port that is not one', async () => {
    const io = fakeIo();
    expect(await runCli(['node', 'trellis', 'dev', '--port', 'eighty'], io)).toBe(2);
    expect(io.stderr.join('\n')).toMatch(/--port eighty is not a TCP port/);
  });
});
