import 'reflect-metadata';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { runCli } from '../../../src/hosts/cli/program.js';
import { describeError, errorLines } from '../../../src/hosts/cli/cli-errors.js';
import { cliCwd, processIo } from '../../../src/hosts/cli/cli-io.js';
import { TrellisError } from '../../../src/errors/trellis-error.js';
import { PassThrough, Writable } from 'node:stream';
import { modelFromEnv } from '../../../index.js';
import { fakeCliIo, type FakeCliIo } from '../../support/fake-cli-io.js';

let cwd: string;

beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-cli-')));
});

afterEach(() => rmSync(cwd, { recursive: true, force: true }));

const fakeIo = (input = ''): FakeCliIo => fakeCliIo(cwd, input);

const cli = (io: FakeCliIo, ...args: string[]) => runCli(['node', 'trellis', ...args], io);

describe('trellis CLI (in process)', () => {
  it.each(['run', 'chat', 'plugins', 'sessions', 'resume'])('prints help for `%s` and exits 0', async (command) => {
    const io = fakeIo();

    expect(await cli(io, command, '--help')).toBe(0);
    expect(io.stdout.join('')).toContain(`Usage: trellis ${command}`);
  });

  it.each([
    [['frobnicate'], 2, /^trellis: unknown command 'frobnicate'/],
    [['run'], 2, /^trellis: missing required argument 'message'/],
    [
      ['resume', 's1'],
      2,
      /^trellis: resume needs at least one --approve <callId>, --reject <callId>, --edit <callId>=<json>, --retry <callId> or --skip <callId>/,
    ],
    [
      ['resume', 'nope', '--approve', 'call_1'],
      1,
      /^trellis: No session 'nope' in .*List sessions with: trellis sessions$/,
    ],
    [['sessions', 'show', 'nope'], 1, /^trellis: No session 'nope' in /],
    [
      ['sessions', 'foo'],
      2,
      /^trellis: 'foo' is not a sessions command: sessions takes list, show <id>, delete <id>, erase --user <id> or prune --older-than <days>\. To see that session: trellis sessions show foo$/,
    ],
    [['run', '--bogus', 'hi'], 2, /^trellis: unknown option '--bogus' \(see trellis run --help\)$/],
    [
      ['sessions', 'show', 'x', '--bogus'],
      2,
      /^trellis: unknown option '--bogus' \(see trellis sessions show --help\)$/,
    ],
    [['frobnicate', '--x'], 2, /^trellis: unknown command 'frobnicate' \(see trellis --help\)$/],
  ])('`trellis %j` fails with exit %d and one line on stderr', async (args, code, message) => {
    const io = fakeIo();

    expect(await cli(io, ...args)).toBe(code);
    expect(io.stderr).toHaveLength(1);
    expect(io.stderr[0]).toMatch(message);
  });

  it('writes the commands in its errors the way it was run, once (npx trellis)', async () => {
    const io = { ...fakeIo(), command: 'npx trellis' };

    expect(await cli(io, 'sessions', 'foo')).toBe(2);
    expect(await cli(io, 'run', '--bogus', 'x')).toBe(2);
    expect(await cli(io, 'resume', 'nope', '--approve', 'call_1')).toBe(1);

    expect(io.stderr[0]).toMatch(/To see that session: npx trellis sessions show foo$/);
    expect(io.stderr[1]).toBe("trellis: unknown option '--bogus' (see npx trellis run --help)");
    expect(io.stderr[2]).toMatch(/List sessions with: npx trellis sessions$/);
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
    expect(io.stderr).toEqual([
      `trellis: ${join(cwd, 'trellis.config.json')} is invalid:`,
      expect.stringMatching(/^ {2}- unknown field 'agent\.tools' \(known: /),
      '  - store must be a file path or a postgres:// URL',
      '  See docs/cli.md for the fields',
    ]);
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
    expect(asked.stderr[0]).toMatch(
      /^note: no trellis\.config\.\{ts,js,mjs,json\} in .*; running the SQL report desk example, which writes .* under .*\.trellis/,
    );
    expect(asked.stderr[1]).toBe(
      "note: no OPENAI_API_KEY or ANTHROPIC_API_KEY; using the example's scripted model (offline, canned answers)",
    );

    const approved = fakeIo();
    expect(await cli(approved, 'resume', 'e1', '--approve', callId)).toBe(0);
    expect(approved.stdout.join('')).toContain(`Saved 3 rows to ${join(cwd, '.trellis/exports/top-customers.csv')}.`);
    expect(existsSync(join(cwd, '.trellis/exports/top-customers.csv'))).toBe(true);

    const shown = fakeIo();
    expect(await cli(shown, 'sessions', 'show', 'e1')).toBe(0);
    expect(shown.stdout.join('')).toContain(`tool export.csv (${callId})`);
  });

  it('approves an export in a folder that has one already: the example picks a free file name', async () => {
    // What `npm start` leaves behind: top-customers.csv exists, and export.csv never replaces a file unasked.
    mkdirSync(join(cwd, '.trellis/exports'), { recursive: true });
    writeFileSync(join(cwd, '.trellis/exports/top-customers.csv'), 'kept\n');

    const asked = fakeIo();
    expect(await cli(asked, 'run', '-s', 'q1', 'Please export that list as a CSV file.')).toBe(0);
    expect(asked.stdout.join('')).toContain('"filename": "top-customers-2.csv"');
    const callId = /--approve (call_\w+)/.exec(asked.stdout.join(''))![1]!;
    const approved = fakeIo();
    expect(await cli(approved, 'resume', 'q1', '--approve', callId)).toBe(0);

    expect(approved.stdout.join('')).toContain(`Saved 3 rows to ${join(cwd, '.trellis/exports/top-customers-2.csv')}.`);
    expect(readFileSync(join(cwd, '.trellis/exports/top-customers.csv'), 'utf8')).toBe('kept\n');
  });
});

describe('trellis CLI: decisions and warnings (in process)', () => {
  async function suspended(session: string): Promise<string> {
    const asked = fakeIo();
    expect(await cli(asked, 'run', '-s', session, 'export the top customers as csv')).toBe(0);
    return /--approve (call_\w+)/.exec(asked.stdout.join(''))![1]!;
  }

  it('warns on stderr, naming the calls, when a new message cancels the calls a session waits for', async () => {
    const callId = await suspended('w1');
    const io = fakeIo();

    expect(await cli(io, 'run', '-s', 'w1', 'Who are our best customers?')).toBe(0);
    expect(io.stderr).toContain(
      `warning: session w1 was waiting for approval of export.csv (${callId}); this new message cancels it (to decide instead: trellis resume w1 --approve/--reject <callId>)`,
    );
  });

  it('says nothing of cancelled calls when the session waits for none', async () => {
    const io = fakeIo();
    expect(await cli(io, 'run', '-s', 'w2', 'Who are our best customers?')).toBe(0);
    expect(io.stderr.join('\n')).not.toContain('warning:');
  });

  it('refuses to approve and reject the same call, in one line, before running anything', async () => {
    const io = fakeIo();
    expect(await cli(io, 'resume', 's1', '--approve', 'call_1', '--reject', 'call_1')).toBe(2);
    expect(io.stderr).toEqual([
      'trellis: The same call cannot be both approved and rejected: call_1. Give each call one decision',
    ]);
  });

  it.each([
    [['--edit', 'call_1={limit:5}'], /^trellis: --edit call_1: the arguments are not valid JSON \(/],
    [['--edit', 'call_1=[1]'], /^trellis: --edit call_1: the arguments must be a JSON object, got an array/],
    [['--edit', '{"a":1}'], /^trellis: --edit takes <callId>=<json>/],
    [
      ['--edit', 'call_1={}', '--approve', 'call_1'],
      /^trellis: The same call cannot be both approved and edited: call_1/,
    ],
  ])('refuses a bad --edit %j in one line', async (flags, message) => {
    const io = fakeIo();
    expect(await cli(io, 'resume', 's1', ...flags)).toBe(2);
    expect(io.stderr).toHaveLength(1);
    expect(io.stderr[0]).toMatch(message);
  });

  it('passes --edit arguments on as an edit decision', async () => {
    const callId = await suspended('ed');
    const io = fakeIo();

    // The example's export only allows approve/reject: the kernel's answer shows the edit reached it.
    expect(await cli(io, 'resume', 'ed', '--edit', `${callId}={"filename":"edited.csv"}`)).toBe(1);
    expect(io.stderr.at(-1)).toMatch(
      new RegExp(`^trellis: Call '${callId}' \\(export\\.csv\\) does not allow 'edit'; allowed: approve, reject`),
    );
  });

  it('answers a decision on an already-decided call with "nothing to do" and exit 0, running nothing', async () => {
    const callId = await suspended('r1');
    expect(await cli(fakeIo(), 'resume', 'r1', '--reject', callId)).toBe(0);
    const io = fakeIo();

    expect(await cli(io, 'resume', 'r1', '--approve', callId)).toBe(0);
    expect(io.stdout.join('')).toBe(`Nothing to do: ${callId} was already decided (see trellis sessions show r1)\n`);
    expect(io.stderr).toEqual([]);
    expect(existsSync(join(cwd, '.trellis/exports/top-customers.csv'))).toBe(false);
  });

  it('refuses a call id the session never had, naming what it waits for', async () => {
    const callId = await suspended('r2');
    const io = fakeIo();

    expect(await cli(io, 'resume', 'r2', '--approve', 'call_nope')).toBe(1);
    expect(io.stderr).toEqual([
      `trellis: Session r2 has no call call_nope; it waits for ${callId}. See its calls with: trellis sessions show r2`,
    ]);
  });

  it('lists the config file names in --help as docs/cli.md does (.ts, .js, .mjs, .json)', async () => {
    const io = fakeIo();
    expect(await cli(io, '--help')).toBe(0);
    expect(io.stdout.join('')).toContain('trellis.config.ts, .js, .mjs or .json');
  });

  it('refuses a user config with no model and no key instead of using the example model', async () => {
    writeFileSync(join(cwd, 'trellis.config.json'), JSON.stringify({ agent: { name: 'mine' } }));
    const io = fakeIo();

    expect(await cli(io, 'run', 'hi')).toBe(1);
    expect(io.stdout).toEqual([]);
    expect(io.stderr).toEqual([
      expect.stringMatching(
        /^trellis: No model to run with: .*Set OPENAI_API_KEY or ANTHROPIC_API_KEY, or set model in a \.ts\/\.js config/,
      ),
    ]);
  });

  it('checks plugin entries, context and providers in the config', async () => {
    writeFileSync(
      join(cwd, 'trellis.config.json'),
      JSON.stringify({ plugins: [{ path: './a.js', module: 'b', colour: 1 }, 5], context: ['x'], providers: [] }),
    );
    const io = fakeIo();

    expect(await cli(io, 'plugins')).toBe(1);
    const err = io.stderr.join('\n');
    expect(err).toContain("unknown field 'plugins[0].colour'");
    expect(err).toContain('plugins[0] needs exactly one of path, module or plugin (got path, module)');
    expect(err).toContain('plugins[1] must be a module path, a plugin class, or { path | module | plugin, config }');
    expect(err).toContain('context must be an object');
    expect(err).toContain('providers can only be given in a .ts or .js config');
  });
});

describe('error formatting', () => {
  it('describes whatever was thrown, never throwing itself', () => {
    const nullProto = Object.assign(Object.create(null) as object, {
      [Symbol.for('nodejs.util.inspect.custom')]: () => 'plugins/bad.ts(1,18): error TS1109: Expression expected.',
    });
    const throwingMessage = Object.defineProperty(new Error('x'), 'message', {
      get: () => {
        throw new Error('boom');
      },
    });
    const throwingToString = {
      toString: () => {
        throw new Error('boom');
      },
    };

    expect(() => String(nullProto)).toThrow('Cannot convert object to primitive value');
    expect(describeError(nullProto)).toBe('plugins/bad.ts(1,18): error TS1109: Expression expected.');
    expect(describeError(Object.create(null))).toBe('[object Object]');
    expect(typeof describeError(throwingMessage)).toBe('string');
    expect(typeof describeError(throwingToString)).toBe('string');
    expect(describeError(Symbol('s'))).toBe('Symbol(s)');
    expect(describeError(new Error('plain'))).toBe('plain');
    expect(errorLines(nullProto)).toEqual(['trellis: plugins/bad.ts(1,18): error TS1109: Expression expected.']);
  });

  it('prints a multi-line kernel error as its lines: the first after trellis:, the rest indented, the hint last', () => {
    const error = new TrellisError('InvalidConfig', "Plugin 'w' config is invalid:\n- units: bad\n- days: worse", {
      hint: 'Fix it',
    });

    expect(errorLines(error)).toEqual([
      "trellis: Plugin 'w' config is invalid:",
      '  - units: bad',
      '  - days: worse',
      '  Fix it',
    ]);
    expect(errorLines(new TrellisError('SessionNotFound', 'No session x', { hint: 'List them' }))).toEqual([
      'trellis: No session x. List them',
    ]);
  });
});

describe('process io', () => {
  it('stops writing quietly once stdout is a closed pipe (EPIPE)', async () => {
    const stdout = new Writable({
      write: (_chunk, _enc, done) => done(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' })),
    });
    const io = processIo({ stdout, stderr: new PassThrough(), stdin: Readable.from([]) }, {}, cwd);

    io.out('one');
    await new Promise((resolve) => setImmediate(resolve));
    expect(() => io.out('two')).not.toThrow();
  });

  it('works in the folder npm was started from (INIT_CWD) only when run by npm in its package root', () => {
    expect(cliCwd({}, '/pkg')).toBe('/pkg');
    expect(cliCwd({ INIT_CWD: '/home/me/proj', npm_package_json: '/pkg/package.json' }, '/pkg')).toBe('/home/me/proj');
    expect(cliCwd({ INIT_CWD: '/home/me/proj' }, '/pkg')).toBe('/home/me/proj');
    expect(cliCwd({ INIT_CWD: '/home/me/proj', npm_package_json: '/pkg/package.json' }, '/tmp/elsewhere')).toBe(
      '/tmp/elsewhere',
    );
  });
});

describe('modelFromEnv', () => {
  it('prefers OPENAI_API_KEY with its base URL and TRELLIS_MODEL, then ANTHROPIC_API_KEY, else none', () => {
    expect(
      modelFromEnv({
        OPENAI_API_KEY: 'k',
        OPENAI_BASE_URL: 'http://localhost:11434/v1',
        TRELLIS_MODEL: 'llama3.1',
        ANTHROPIC_API_KEY: 'a',
      })?.label,
    ).toBe('openai:llama3.1 (OPENAI_API_KEY, OPENAI_BASE_URL=http://localhost:11434/v1)');
    expect(modelFromEnv({ ANTHROPIC_API_KEY: 'a' })?.model.name).toBe('anthropic:claude-sonnet-4-5');
    expect(modelFromEnv({})).toBeUndefined();
  });

  it('refuses a model of the other vendor than the only key set, saying which key it needs', () => {
    expect(() => modelFromEnv({ ANTHROPIC_API_KEY: 'a', TRELLIS_MODEL: 'gpt-4o-mini' })).toThrow(
      "The model 'gpt-4o-mini' (from TRELLIS_MODEL) is an OpenAI model, but the only key set is ANTHROPIC_API_KEY, which calls the other vendor. Set OPENAI_API_KEY to use gpt-4o-mini, or name a model of the key's vendor (e.g. claude-sonnet-4-5)",
    );
    expect(() => modelFromEnv({ OPENAI_API_KEY: 'k', TRELLIS_MODEL: 'claude-sonnet-4-5' }, 'the config')).toThrow(
      /'claude-sonnet-4-5' \(from the config\) is an Anthropic model.*Set ANTHROPIC_API_KEY/,
    );
    // Both keys: the model's name picks the vendor; an OpenAI-compatible endpoint may serve any name.
    expect(
      modelFromEnv({ OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'a', TRELLIS_MODEL: 'claude-sonnet-4-5' })?.model.name,
    ).toBe('anthropic:claude-sonnet-4-5');
    expect(
      modelFromEnv({
        OPENAI_API_KEY: 'k',
        OPENAI_BASE_URL: 'http://localhost:4000/v1',
        TRELLIS_MODEL: 'claude-sonnet-4-5',
      })?.model.name,
    ).toBe('openai:claude-sonnet-4-5');
  });

  it('flags the mismatch in the CLI before any turn runs: a config naming gpt-4o-mini with only an Anthropic key', async () => {
    writeFileSync(join(cwd, 'trellis.config.json'), JSON.stringify({ model: 'gpt-4o-mini' }));
    const io = { ...fakeIo(), env: { ANTHROPIC_API_KEY: 'a' } };

    expect(await cli(io, 'run', 'hello')).toBe(1);
    expect(io.stderr.join('\n')).toMatch(
      /^trellis: The model 'gpt-4o-mini' \(from the model of .*trellis\.config\.json\) is an OpenAI model/m,
    );
  });
});
