import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { npm, npmAvailable, type NpmRun } from './support/npm.js';
import { writeOfflineLockfile } from './support/offline-lockfile.js';

/**
 * Done-when of "from zero to a tested plugin in your own project": pack Trellis as npm would
 * publish it (prepack builds dist/), scaffold a project with `trellis init`, install the
 * tarball into it from the local npm cache only, then run the project's own `npm test` and
 * `npx trellis run`. Slow (a build and an install): one suite, generous timeouts.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MINUTE = 60_000;
/** Left out of the copy that is packed: what the build makes or npm installs, and git's own. */
const NOT_COPIED = new Set(['node_modules', 'dist', '.git', '.trellis', 'coverage']);

const canPack = await npmAvailable();
if (!canPack) console.log('skipped: the install-from-tarball test needs npm, and npm cannot run here');

(canPack ? describe : describe.skip)('a project of your own, from the packed tarball', () => {
  let work: string;
  let tarball: string;
  let project: string;

  beforeAll(async () => {
    work = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-install-')));
    // Pack a copy, so its build never races other suites that build into this repo's dist/.
    const copy = join(work, 'trellis');
    mkdirSync(copy);
    for (const entry of readdirSync(ROOT).filter((e) => !NOT_COPIED.has(e)))
      cpSync(join(ROOT, entry), join(copy, entry), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
    const packed = await npm(['pack', '--pack-destination', work], copy, 10 * MINUTE);
    expect({ code: packed.code, stderr: packed.code === 0 ? '' : packed.stderr }).toEqual({ code: 0, stderr: '' });
    tarball = join(
      work,
      readdirSync(work).find((f) => f.endsWith('.tgz'))!,
    );

    project = join(work, 'my-agent');
    execFileSync(process.execPath, [join(copy, 'dist/src/hosts/cli/main.js'), 'init', project, '--trellis', tarball], {
      cwd: work,
    });
    writeOfflineLockfile(project, ROOT, tarball);
    // Install scripts off: better-sqlite3's would download or compile its binary; the one built for this repo is the same version.
    const installed = await npm(['install', '--offline', '--ignore-scripts'], project, 10 * MINUTE);
    expect(installed.stderr).not.toMatch(/ERR!|npm error/);
    expect(installed.code).toBe(0);
    const binary = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
    mkdirSync(join(project, binary, '..'), { recursive: true });
    copyFileSync(join(ROOT, binary), join(project, binary));
  }, 20 * MINUTE);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('ships dist/, the templates and the docs, built by prepack, and no sources', () => {
    const files = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).split('\n');

    for (const file of [
      'package/dist/index.js',
      'package/dist/index.d.ts',
      'package/dist/testing.js',
      'package/dist/src/hosts/cli/main.js',
      'package/templates/init/plugins/greeter.plugin.ts',
      'package/templates/typescript-loader/tsconfig.json',
      'package/docs/getting-started.md',
    ]) {
      expect(files).toContain(file);
    }
    expect(
      files.filter((f) => f.startsWith('package/src/') || f.endsWith('.map') || f.startsWith('package/test/')),
    ).toEqual([]);
  });

  it(
    "passes the project's own npm test, with no warnings",
    async () => {
      const run = await npm(['test'], project, 5 * MINUTE);

      expect(`${run.stdout}\n${run.stderr}`).toMatch(/Tests: +2 passed, 2 total/);
      expect(run.code).toBe(0);
      expect(run.stderr).not.toMatch(/warn/i);
    },
    6 * MINUTE,
  );

  it(
    'answers `npx trellis run` offline from the scaffolded config and plugin',
    async () => {
      const run = await npx(project, 'run', 'Greet Ada');

      expect(run.stderr).not.toMatch(/^trellis:/m);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('The greeter says: Hello Ada');
      expect(run.stdout).toMatch(/— completed · 2 rounds · 1 tool · \d+ tokens/);

      const listing = await npx(project, 'plugins');
      expect(listing.stdout).toContain('tool greeter.hello');
      expect(listing.stdout).toContain('requires: app.locale');
      expect(listing.stdout).toContain('middleware: RetryMiddleware');
    },
    3 * MINUTE,
  );

  it(
    'compiles against the published declarations: every entry resolves, and members marked @internal are not there',
    async () => {
      const dir = join(project, 'published-types');
      mkdirSync(dir);
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: '../tsconfig.json', include: ['check.ts'] }));
      const entries = Object.keys(
        (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }).exports,
      );
      writeFileSync(
        join(dir, 'check.ts'),
        [
          ...entries.map(
            (subpath, i) =>
              `import * as entry${i} from '${subpath === '.' ? 'trellis' : `trellis/${subpath.slice(2)}`}';`,
          ),
          `export const entries = [${entries.map((_, i) => `entry${i}`).join(', ')}];`,
          "import { Agent, Session, Trellis, ScriptedModel } from 'trellis';",
          "const session = Trellis.create().agent({ name: 'a', instructions: 'i', model: new ScriptedModel(['hi']) }).session('s');",
          'export const running: boolean = session.turnRunning;',
          '// @ts-expect-error internal',
          'session.busy;',
          '// @ts-expect-error internal',
          'session.release();',
          '// @ts-expect-error internal',
          'session.restate({});',
          '// @ts-expect-error a session is opened with agent.session(): no constructor without arguments',
          'export const session2 = new Session();',
          '// @ts-expect-error an agent is made with app.agent(): no constructor without arguments',
          'export const agent2 = new Agent();',
        ].join('\n'),
      );
      const run = await npm(['exec', '--offline', '--', 'tsc', '-p', 'published-types'], project, 2 * MINUTE);

      expect(`${run.stdout}${run.stderr}`).toBe('');
      expect(run.code).toBe(0);
    },
    3 * MINUTE,
  );

  it(
    'says in one line which peer dependency is missing',
    async () => {
      const peer = join(project, 'node_modules/class-validator');
      renameSync(peer, `${peer}.away`);
      try {
        const run = await npx(project, 'run', 'Greet Ada');
        expect(run.code).toBe(1);
        expect(run.stderr.trim()).toBe(
          'trellis: missing peer dependency class-validator; install it in your project: npm install class-validator',
        );
      } finally {
        renameSync(`${peer}.away`, peer);
      }
    },
    3 * MINUTE,
  );
});

function npx(project: string, ...args: string[]): Promise<NpmRun> {
  return npm(['exec', '--offline', '--', 'trellis', ...args], project, 2 * MINUTE);
}
