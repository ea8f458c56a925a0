import 'reflect-metadata';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { CliIo } from '../../../src/cli/cli-io.js';
import { runCli } from '../../../src/cli/program.js';
import { modelFromEnv } from '../../../src/cli/model-from-env.js';

interface FakeIo extends CliIo {
  readonly stdout: string[];
  readonly stderr: string[];
}

let cwd: string;

beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-cli-')));
});

afterEach(() => rmSync(cwd, { recursive: true, force: true }));

function fakeIo(input = ''): FakeIo {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    write: (text) => void stdout.push(text),
    out: (line = '') => void stdout.push(`${line}\n`),
    err: (line) => void stderr.push(line),
    stdin: Readable.from([input]),
    cwd,
    env: {},
    exitCode: 0,
  };
}

const cli = (io: FakeIo, ...args: string[]) => runCli(['node', 'trellis', ...args], io);

describe('trellis CLI (in process)', () => {
  it.each(['run', 'chat', 'plugins', 'sessions', 'resume'])('prints help for `%s` and exits 0', async (command) => {
    const io = fakeIo();

    expect(await cli(io, command, '--help')).toBe(0);
    expect(io.stdout.join('')).toContain(`Usage: trellis ${command}`);
  });

  it.each([
    [['frobnicate'], 2, /^trellis: unknown command 'frobnicate'/],
    [['run'], 2, /^trellis: missing required argument 'message'/],
    [['resume', 's1'], 2, /^trellis: resume needs at least one --approve <callId> or --reject <callId>/],
    [['resume', 'nope', '--approve', 'call_1'], 1, /^trellis: No session 'nope' in .*List sessions with: trellis sessions$/],
    [['sessions', 'show', 'nope'], 1, /^trellis: No session 'nope' in /],
  ])('`trellis %j` fails with exit %d and one line on stderr', async (args, code, message) => {
    const io = fakeIo();

    expect(await cli(io, ...args)).toBe(code);
    expect(io.stderr).toHaveLength(1);
    expect(io.stderr[0]).toMatch(message);
  });

  it('says there are no sessions yet without creating a store', async () => {
    const io = fakeIo();

    expect(await cli(io, 'sessions')).toBe(0);
    expect(io.stdout.join('')).toMatch(/^No sessions yet \(.*trellis\.db does not exist\)/);
  });

  it('names the config file and the problem when the config is invalid', async () => {
    writeFileSync(join(cwd, 'trellis.config.json'), JSON.stringify({ agent: { name: 'x', tools: [] }, store: 5 }));
    const io = fakeIo();

    expect(await cli(io, 'plugins')).toBe(1);
    expect(io.stderr).toEqual([expect.stringMatching(/trellis\.config\.json is invalid: unknown field 'agent\.tools' .*; store must be a file path/)]);
  });

  it('refuses a config whose plugins path does not exist', async () => {
    writeFileSync(join(cwd, 'trellis.config.json'), JSON.stringify({ plugins: './missing' }));
    const io = fakeIo();

    expect(await cli(io, 'plugins')).toBe(1);
    expect(io.stderr[0]).toMatch(/Plugin path .*missing does not exist/);
  });

  it('runs a turn and resumes it from a second CLI invocation on the same store', async () => {
    const asked = fakeIo();
    expect(await cli(asked, 'run', '-s', 'e1', 'export the top customers as csv')).toBe(0);
    const out = asked.stdout.join('');
    const callId = /--approve (call_\w+)/.exec(out)![1]!;
    expect(asked.stderr[0]).toMatch(/uses the SQL report desk's scripted model/);

    const approved = fakeIo();
    expect(await cli(approved, 'resume', 'e1', '--approve', callId)).toBe(0);
    expect(approved.stdout.join('')).toContain(`Saved 3 rows to ${join(cwd, '.trellis/exports/top-customers.csv')}.`);
    expect(existsSync(join(cwd, '.trellis/exports/top-customers.csv'))).toBe(true);

    const shown = fakeIo();
    expect(await cli(shown, 'sessions', 'show', 'e1')).toBe(0);
    expect(shown.stdout.join('')).toContain(`tool export.csv (${callId})`);
  });
});

describe('modelFromEnv', () => {
  it('prefers OPENAI_API_KEY with its base URL and TRELLIS_MODEL, then ANTHROPIC_API_KEY, else none', () => {
    expect(modelFromEnv({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'http://localhost:11434/v1', TRELLIS_MODEL: 'llama3.1', ANTHROPIC_API_KEY: 'a' })?.label).toBe(
      'openai:llama3.1 (OPENAI_API_KEY, OPENAI_BASE_URL=http://localhost:11434/v1)',
    );
    expect(modelFromEnv({ ANTHROPIC_API_KEY: 'a' })?.model.name).toBe('anthropic:claude-sonnet-4-5');
    expect(modelFromEnv({})).toBeUndefined();
  });
});
