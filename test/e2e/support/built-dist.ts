import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** A build that takes longer than this is taken for dead, and its lock for stale. */
export const BUILD_TIMEOUT_MS = 240_000;
const LOCK = join(tmpdir(), `trellis-dist-build-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}.lock`);
const STAMP = join(ROOT, 'dist', '.built-for-test-run');

/**
 * Builds dist/ with tsc, as a user's `npm run build` would — once per jest run, however many
 * suites ask and in however many workers: the first takes a lock and builds, the others wait
 * for it and find the run's id stamped in dist/. Outside a jest run's global setup (one file
 * run on its own), it always builds.
 */
export async function buildDist(): Promise<void> {
  const run = process.env.TRELLIS_TEST_RUN;
  if (run !== undefined && stampedFor(run)) return;
  await lock();
  try {
    if (run !== undefined && stampedFor(run)) return;
    await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      { cwd: ROOT, timeout: BUILD_TIMEOUT_MS },
    );
    if (run !== undefined) writeFileSync(STAMP, run);
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

function stampedFor(run: string): boolean {
  return existsSync(STAMP) && readFileSync(STAMP, 'utf8') === run;
}

async function lock(): Promise<void> {
  for (;;) {
    try {
      mkdirSync(LOCK);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const held = statSync(LOCK, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > BUILD_TIMEOUT_MS) rmSync(LOCK, { recursive: true, force: true });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
