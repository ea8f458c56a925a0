import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_COMMANDS, invocation, runnableCommands } from '../../../src/hosts/cli/invocation.js';
import { buildProgram } from '../../../src/hosts/cli/program.js';
import { fakeCliIo } from '../../support/fake-cli-io.js';

/** The commands the CLI prints start the way the user runs it, so they run as printed. */
describe('invocation: how the printed commands start', () => {
  let dir: string;
  beforeEach(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-invocation-')));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const project = (files: Record<string, string>): string => {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    return dir;
  };

  it('under npx (npm exec): npx trellis', () => {
    expect(invocation({ npm_command: 'exec', npm_lifecycle_event: 'npx' }, '/x/node_modules/.bin/trellis', dir)).toBe(
      'npx trellis',
    );
  });

  it("under a project's `trellis` npm script (a clone's npm run trellis): npm run trellis --", () => {
    expect(
      invocation({ npm_command: 'run', npm_lifecycle_event: 'trellis' }, '/clone/dist/src/hosts/cli/main.js', dir),
    ).toBe('npm run trellis --');
  });

  it('a trellis on the PATH (a global install): trellis', () => {
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'trellis'), '');
    chmodSync(join(bin, 'trellis'), 0o755);
    expect(invocation({ PATH: `/usr/bin:${bin}` }, join(bin, 'trellis'), dir)).toBe('trellis');
  });

  it('in a project with trellis installed, or in a clone of Trellis: npx trellis, from any folder inside it', () => {
    const installed = project({
      'package.json': '{"name":"my-agent"}',
      'node_modules/.bin/trellis': '',
      'plugins/x.ts': '',
    });
    expect(
      invocation({}, join(installed, 'node_modules/trellis/dist/src/hosts/cli/main.js'), join(installed, 'plugins')),
    ).toBe('npx trellis');
    rmSync(join(installed, 'node_modules'), { recursive: true });
    writeFileSync(join(installed, 'package.json'), '{"name":"trellis","bin":{"trellis":"dist/src/hosts/cli/main.js"}}');
    expect(invocation({}, join(installed, 'dist/src/hosts/cli/main.js'), installed)).toBe('npx trellis');
  });

  it('elsewhere, plain node with the script: relative inside the folder, absolute outside, quoted when it needs it', () => {
    const elsewhere = project({ 'package.json': '{"name":"other"}' });
    expect(invocation({}, join(elsewhere, 'tools/cli/main.js'), elsewhere)).toBe('node tools/cli/main.js');
    expect(invocation({}, '/opt/trellis/dist/src/hosts/cli/main.js', elsewhere)).toBe(
      'node /opt/trellis/dist/src/hosts/cli/main.js',
    );
    expect(invocation({}, "/opt/it's here/main.js", elsewhere)).toBe(`node '/opt/it'\\''s here/main.js'`);
  });

  it('rewrites the trellis commands a hint names, and nothing else', () => {
    expect(runnableCommands('trellis: No session x. List sessions with: trellis sessions', 'npx trellis')).toBe(
      'trellis: No session x. List sessions with: npx trellis sessions',
    );
    expect(runnableCommands('check it with `trellis doctor`, then trellis resume q1', 'npx trellis')).toBe(
      'check it with `npx trellis doctor`, then npx trellis resume q1',
    );
    expect(runnableCommands('List sessions with: trellis sessions', 'trellis')).toBe(
      'List sessions with: trellis sessions',
    );
    expect(runnableCommands('see npx trellis sessions show q1', 'npx trellis')).toBe(
      'see npx trellis sessions show q1',
    );
    expect(runnableCommands('(see trellis run --help)', 'node dist/src/hosts/cli/main.js')).toBe(
      '(see node dist/src/hosts/cli/main.js run --help)',
    );
    expect(runnableCommands('Verify it with: trellis audit verify --head abc', 'npx trellis')).toBe(
      'Verify it with: npx trellis audit verify --head abc',
    );
    expect(runnableCommands('then trellis contract diff old.json new.json', 'npx trellis')).toBe(
      'then npx trellis contract diff old.json new.json',
    );
  });

  it('knows every command the CLI has, so a hint naming any of them is rewritten', () => {
    const names = buildProgram(fakeCliIo(process.cwd())).commands.map((c) => c.name());
    expect([...CLI_COMMANDS].sort()).toEqual([...names].sort());
  });
});
