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

function importInChild(entry: string): ImportProfile {
  const url = pathToFileURL(join(PROJECT_ROOT, entry)).href;
  return profileImport(url, true, { execArgv: TS_NODE_ARGS, cwd: PROJECT_ROOT, env: tsNodeEnv(), timeoutMs: CHILD_TIMEOUT_MS });
}

const heavyIn = (profile: ImportProfile): string[] => packagesIn(profile.urls).filter((name) => HEAVY_PACKAGES.some((pattern) => pattern.test(name)));

describe('importing an entry loads no heavy optional package', () => {
  // index.ts loads plugin.ts too (the built-ins import it), so one import covers both entries.
  it('the root entry (and with it trellis/plugin)', () => {
    const profile = importInChild('index.ts');
    // The recording saw the import: the kernel's own dependencies are there, from the sources.
    expect(packagesIn(profile.urls)).toEqual(expect.arrayContaining(['inversify', 'rxjs']));
    expect(profile.urls.some((url) => url.endsWith('/src/app/trellis.ts'))).toBe(true);
    expect(profile.urls).toContain(pathToFileURL(join(PROJECT_ROOT, 'plugin.ts')).href);
    expect(profile.urls.filter((url) => url.startsWith(pathToFileURL(join(PROJECT_ROOT, 'dist')).href))).toEqual([]);
    expect(heavyIn(profile)).toEqual([]);
  }, CHILD_TIMEOUT_MS * 1.5);

  it('while using one loads it: opening a SqliteStore brings better-sqlite3 (which the recording sees)', () => {
    const profile = importInChild('test/unit/architecture/support/open-sqlite-store.ts');
    expect(heavyIn(profile)).toEqual(['better-sqlite3']);
  }, CHILD_TIMEOUT_MS * 1.5);
});
