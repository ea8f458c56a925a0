import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * A module-resolution hook that appends every resolved URL to a file. Registered from a
 * `data:` URL, so it needs no file of its own and works for the compiled entries and for
 * the sources under ts-node alike.
 */
const RECORDER_HOOKS = `
import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(log, resolved.url + '\\n');
  return resolved;
}`;

/** The child: optionally registers the recorder, then times one `import()` of the entry. */
const CHILD = `
const [entry, log] = process.argv.slice(1);
if (log) (await import('node:module')).register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(RECORDER_HOOKS)}), { data: { log } });
const started = performance.now();
const cpu = process.cpuUsage();
await import(entry);
const ms = performance.now() - started;
const used = process.cpuUsage(cpu);
const cpuMs = (used.user + used.system) / 1000;
// CommonJS modules required from CommonJS (or through createRequire) never reach the hook.
const required = Object.keys((await import('node:module')).createRequire(import.meta.url).cache);
process.stdout.write(JSON.stringify({ ms, cpuMs, required }));
`;

/** How to run the child: extra node options (e.g. a TypeScript loader), working directory, environment. */
export interface ImportRunOptions {
  readonly execArgv?: readonly string[];
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly timeoutMs?: number;
}

/** One fresh process's import of an entry: how long `import()` took and which modules it loaded. */
export interface ImportProfile {
  /** Wall-clock time of the `import()`. */
  readonly ms: number;
  /** CPU time (user + system) the process spent in it: steadier than `ms` on a busy machine. */
  readonly cpuMs: number;
  readonly urls: readonly string[];
}

/**
 * Imports `entryUrl` in a fresh `node` process and measures the `import()` alone (not
 * node's own start-up). The URLs are every module in node's CommonJS cache and, with
 * `record`, every URL an ES module resolution returned (a hook that slows the import:
 * time and record in separate runs).
 */
export function profileImport(entryUrl: string, record: boolean, options: ImportRunOptions = {}): ImportProfile {
  const dir = record ? mkdtempSync(join(tmpdir(), 'trellis-imports-')) : undefined;
  const log = dir ? join(dir, 'urls.txt') : '';
  try {
    const args = [...(options.execArgv ?? []), '--input-type=module', '-e', CHILD, entryUrl, log];
    const run = spawnSync(process.execPath, args, {
      cwd: options.cwd,
      env: options.env,
      encoding: 'utf8',
      timeout: options.timeoutMs ?? 120_000,
    });
    if (run.status !== 0)
      throw new Error(`importing ${entryUrl} failed (exit ${run.status ?? run.signal}):\n${run.stderr}`);
    const { ms, cpuMs, required } = JSON.parse(run.stdout) as { ms: number; cpuMs: number; required: string[] };
    const resolved = log ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
    return { ms, cpuMs, urls: [...new Set([...resolved, ...required.map((path) => pathToFileURL(path).href)])] };
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

/** The npm packages among resolved URLs (`@scope/name` or `name`), sorted, each once. */
export function packagesIn(urls: readonly string[]): string[] {
  const names = new Set<string>();
  for (const url of urls) {
    const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (match) names.add(match[1]!);
  }
  return [...names].sort();
}

/**
 * The optional dependencies the root entry must not load: each is loaded by the model,
 * store or plugin that needs it, when that is used.
 */
export const HEAVY_PACKAGES: readonly RegExp[] = [
  /^prom-client$/,
  /^minisearch$/,
  /^better-sqlite3$/,
  /^@opentelemetry\/sdk-/,
  /^openai$/,
  /^@anthropic-ai\/sdk$/,
  /^pino$/,
  /^@modelcontextprotocol\/sdk$/,
  /^ajv$/,
  /^@nestjs\//,
  /^bullmq$/,
  /^ioredis$/,
  /^pg$/,
  /^hono$/,
  /^ai$/,
  /^@ai-sdk\//,
  /^@ag-ui\//,
  /^@a2a-js\//,
  /^express$/,
];
