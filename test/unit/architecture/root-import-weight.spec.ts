import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { HEAVY_PACKAGES, packagesIn, profileImport, type ImportProfile } from '../../../bench/import-profile.js';
import { PROJECT_ROOT, TS_NODE_ARGS, tsNodeEnv } from '../../support/ts-node-child.js';

/**
 * Importing Trellis stays light: the optional heavy packages (model vendors' SDKs, the
 * SQLite driver, prom-client, minisearch, pino, OpenTelemetry SDKs) load only when the
 * model, store or plugin that needs them is used. Each entry is imported in a fresh node
 * process (the sources, through ts-node) that records every module it resolves.
 */
const CHILD_TIMEOUT_MS = 120_000;

function importInChild(entry: string, env: NodeJS.ProcessEnv = {}): ImportProfile {
  const url = pathToFileURL(join(PROJECT_ROOT, entry)).href;
  return profileImport(url, true, {
    execArgv: TS_NODE_ARGS,
    cwd: PROJECT_ROOT,
    env: tsNodeEnv(env),
    timeoutMs: CHILD_TIMEOUT_MS,
  });
}

const heavyIn = (profile: ImportProfile): string[] =>
  packagesIn(profile.urls).filter((name) => HEAVY_PACKAGES.some((pattern) => pattern.test(name)));

describe('importing an entry loads no heavy optional package', () => {
  // index.ts loads plugin.ts too (the built-ins import it), so one import covers both entries.
  it(
    'the root entry (and with it trellis/plugin)',
    () => {
      const profile = importInChild('index.ts');
      // The recording saw the import: the kernel's own dependencies are there, from the sources.
      expect(packagesIn(profile.urls)).toEqual(expect.arrayContaining(['inversify', 'rxjs']));
      expect(profile.urls.some((url) => url.endsWith('/src/app/trellis.ts'))).toBe(true);
      expect(profile.urls).toContain(pathToFileURL(join(PROJECT_ROOT, 'plugin.ts')).href);
      expect(profile.urls.filter((url) => url.startsWith(pathToFileURL(join(PROJECT_ROOT, 'dist')).href))).toEqual([]);
      expect(heavyIn(profile)).toEqual([]);
    },
    CHILD_TIMEOUT_MS * 1.5,
  );

  it(
    "the kernel's other entries and every built-in plugin family (trellis/models, /stores, /governance, /host, /plugins/<name>)",
    () => {
      const profile = importInChild('test/unit/architecture/support/import-entries.ts');
      // The recording saw the imports: a file of each built-in family is there.
      for (const family of [
        'middleware',
        'permissions',
        'content-safety',
        'billing',
        'reflection',
        'memory',
        'retrieval',
        'observation',
      ]) {
        expect(profile.urls).toContain(pathToFileURL(join(PROJECT_ROOT, `plugins/${family}/index.ts`)).href);
      }
      expect(profile.urls).toContain(pathToFileURL(join(PROJECT_ROOT, 'governance.ts')).href);
      expect(heavyIn(profile)).toEqual([]);
    },
    CHILD_TIMEOUT_MS * 1.5,
  );

  it(
    'while using one loads it: opening a SqliteStore brings better-sqlite3 (which the recording sees)',
    () => {
      const profile = importInChild('test/unit/architecture/support/open-sqlite-store.ts');
      expect(heavyIn(profile)).toEqual(['better-sqlite3']);
    },
    CHILD_TIMEOUT_MS * 1.5,
  );
});

describe('the trellis CLI loads what a command needs', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'trellis-cli-imports-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs the command lines in one fresh process (support/run-cli.ts): what each printed, and what the process loaded. */
  function cliInChild(runs: string[][]): {
    profile: ImportProfile;
    printed: { args: string[]; code: number; stdout: string; stderr: string[] }[];
  } {
    const out = join(dir, 'printed.json');
    const profile = importInChild('test/unit/architecture/support/run-cli.ts', {
      TRELLIS_TEST_CLI_RUNS: JSON.stringify(runs),
      TRELLIS_TEST_CLI_CWD: dir,
      TRELLIS_TEST_CLI_OUT: out,
    });
    return { profile, printed: JSON.parse(readFileSync(out, 'utf8')) };
  }

  it(
    "--help, --version and a command's --help load no SQLite driver (better-sqlite3) and no logger (pino): the example that brings one is not loaded",
    () => {
      const { profile, printed } = cliInChild([['--help'], ['--version'], ['run', '--help']]);

      expect(printed.map((p) => [p.args.join(' '), p.code])).toEqual([
        ['--help', 0],
        ['--version', 0],
        ['run --help', 0],
      ]);
      expect(printed[0]!.stdout).toContain('Usage: trellis');
      expect(printed[2]!.stdout).toContain('Usage: trellis run');
      expect(packagesIn(profile.urls)).not.toContain('better-sqlite3');
      expect(packagesIn(profile.urls)).not.toContain('pino');
      expect(profile.urls.filter((url) => url.includes('/examples/'))).toEqual([]);
    },
    CHILD_TIMEOUT_MS * 1.5,
  );

  it(
    'a command that runs the example (no config) still loads it, and better-sqlite3 with it (which the recording sees)',
    () => {
      const { profile, printed } = cliInChild([['plugins']]);

      expect(printed[0]).toMatchObject({ code: 0, stdout: expect.stringContaining('tool db.search') });
      expect(profile.urls.some((url) => url.endsWith('/examples/sql-report-desk/desk-app.ts'))).toBe(true);
      expect(packagesIn(profile.urls)).toContain('better-sqlite3');
    },
    CHILD_TIMEOUT_MS * 1.5,
  );
});
