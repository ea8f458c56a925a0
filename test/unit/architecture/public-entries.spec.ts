import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Built-in plugins and the example are written against the public entries a third-party
 * author would use (`trellis/plugin`, `trellis`), never against the kernel's files; and
 * `plugin.ts` points only into the kernel, so the built-ins importing it (while the root
 * `index.ts` re-exports the built-ins) close no import circle.
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Every module specifier of a TypeScript source: static imports and re-exports (type-only too) and dynamic `import()`. */
function specifiers(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/gms)) found.push(m[1]!);
  for (const m of source.matchAll(/^\s*import\s+'([^']+)'/gm)) found.push(m[1]!);
  for (const m of source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) found.push(m[1]!);
  return found;
}

function sourcesUnder(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(ROOT, folder, file));
}

/** Where a relative specifier lands, as a path from the project root; `undefined` for packages. */
function target(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  return relative(ROOT, resolve(dirname(file), specifier)).split(sep).join('/');
}

/** The imports of the files under `folders` that break `rule`, as `file -> specifier`. */
function violations(folders: readonly string[], rule: (file: string, specifier: string) => boolean): string[] {
  return folders.flatMap((folder) =>
    sourcesUnder(folder).flatMap((file) =>
      specifiers(readFileSync(file, 'utf8'))
        .filter((specifier) => rule(file, specifier))
        .map((specifier) => `${relative(ROOT, file)} -> ${specifier}`),
    ),
  );
}

const intoKernel = (file: string, specifier: string): boolean => /^(src|decorators|index\.ts|index\.js|plugin\.[jt]s|testing\.[jt]s|eval\.[jt]s)(\/|$)/.test(target(file, specifier) ?? '');

describe('the root entry', () => {
  it('has every value trellis/plugin has, as the same binding', async () => {
    const plugin = (await import('../../../plugin.js')) as Record<string, unknown>;
    const root = (await import('../../../index.js')) as Record<string, unknown>;

    expect(Object.keys(plugin).filter((name) => root[name] !== plugin[name])).toEqual([]);
  });
});

describe('the specifier scanner', () => {
  it('finds static, type-only, multi-line, re-exported and dynamic imports', () => {
    const source = [
      "import 'reflect-metadata';",
      "import type { A } from '../../src/a.js';",
      'import {',
      '  B,',
      "} from '../../decorators/index.js';",
      "export { C } from './c.js';",
      "const d = await import('minisearch');",
    ].join('\n');
    expect(specifiers(source)).toEqual(['../../src/a.js', '../../decorators/index.js', './c.js', 'reflect-metadata', 'minisearch']);
  });
});

describe('built-in plugins and the example use the public entries', () => {
  it('no file under plugins/ or examples/ imports src/, decorators/ or a root entry file by path', () => {
    expect(violations(['plugins', 'examples'], intoKernel)).toEqual([]);
  });

  it("no built-in plugin imports the root 'trellis' entry, which re-exports the built-ins", () => {
    expect(violations(['plugins'], (_, specifier) => specifier === 'trellis')).toEqual([]);
  });

  it('the built-ins do import trellis/plugin (the scan sees them)', () => {
    const users = sourcesUnder('plugins').filter((file) => specifiers(readFileSync(file, 'utf8')).includes('trellis/plugin'));
    expect(users.length).toBeGreaterThan(15);
  });

  it('plugin.ts points only into src/ and decorators/ (and packages), never at index.ts or plugins/', () => {
    const file = join(ROOT, 'plugin.ts');
    const bad = specifiers(readFileSync(file, 'utf8')).filter((specifier) => {
      const to = target(file, specifier);
      return specifier.startsWith('trellis') || (to !== undefined && !/^(src|decorators)\//.test(to));
    });
    expect(bad).toEqual([]);
  });
});

describe('hosts drive the kernel through the public entry', () => {
  /** Kernel helpers a host may still use by path: pure functions with no kernel state. */
  const ALLOWED = new Set(['src/validation/json-schema-validator.js', 'src/validation/schema-summary.js', 'src/errors/describe-error.js']);
  const kernelFolders = /^src\/(agent|app|hooks|context|state|plugin|tools|stores|models|errors|validation|events|contract)\//;

  it.each(['src/nestjs', 'src/queue', 'src/mcp', 'src/dev', 'src/ai-sdk', 'src/ag-ui', 'src/a2a', 'src/ui-turns', 'src/eval'])('%s imports kernel files only through index.ts', (folder) => {
    const bad = violations([folder], (file, specifier) => {
      const to = target(file, specifier);
      return to !== undefined && kernelFolders.test(to) && !ALLOWED.has(to);
    });
    expect(bad).toEqual([]);
  });

  /**
   * The CLI is a host like the others, held to a closed list: besides its own files it may
   * import by path only the dev page it serves (`src/dev`, a host without an entry of its
   * own), the local-server helpers (`src/net`: pure, no kernel imports), the example it runs
   * when there is no config, and the pure helpers above. The kernel, the built-ins and the
   * other hosts it reaches through the package's entries (`trellis/queue` and `trellis/mcp` by `import()`).
   */
  const cliReachesIn = (file: string, specifier: string): boolean => {
    const to = target(file, specifier);
    if (to === undefined) return false;
    const entry = /^(index|plugin|testing|queue|mcp|nestjs|eval)\.js$/.test(to);
    return !entry && !/^src\/(cli|dev|net)\//.test(to) && !to.startsWith('examples/sql-report-desk/') && !ALLOWED.has(to);
  };

  it('src/cli imports the kernel only through the public entries', () => {
    expect(violations(['src/cli'], cliReachesIn)).toEqual([]);
  });

  it('the CLI rule refuses a kernel, built-in, decorator or other host file and admits the entries (the scan sees them)', () => {
    const file = join(ROOT, 'src/cli/commands/run.command.ts');
    const refused = ['../../app/trellis.js', '../../agent/call-journal.js', '../../stores/sqlite-doctor.js', '../../../plugins/middleware/logger.js', '../../../decorators/index.js', '../../queue/turn-queue.js', '../../mcp/client/mcp-server-spec.js', '../../redaction/redactor.js'];
    const admitted = ['../../../index.js', '../../../plugin.js', '../../../queue.js', '../../../mcp.js', '../cli-app.js', '../../dev/dev-server.js', '../../net/loopback.js', '../../validation/schema-summary.js', 'commander'];
    expect(refused.filter((specifier) => !cliReachesIn(file, specifier))).toEqual([]);
    expect(admitted.filter((specifier) => cliReachesIn(file, specifier))).toEqual([]);
    const users = sourcesUnder('src/cli').filter((f) => specifiers(readFileSync(f, 'utf8')).some((specifier) => target(f, specifier) === 'index.js'));
    expect(users.length).toBeGreaterThan(15);
  });

  it('src/nestjs loads the queue (BullMQ, ioredis) only through import(), when the queue option is set', () => {
    const valueImports = (source: string) => [...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+'([^']+)'/gms)].map((m) => m[1]!);
    const queueish = (file: string, specifier: string) => /^(bullmq|ioredis)$/.test(specifier) || /^(queue\.[jt]s|src\/queue\/)/.test(target(file, specifier) ?? '');
    const files = sourcesUnder('src/nestjs');
    const eager = files.flatMap((file) => valueImports(readFileSync(file, 'utf8')).filter((s) => queueish(file, s)).map((s) => `${relative(ROOT, file)} -> ${s}`));
    const lazy = files.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].filter((m) => queueish(file, m[1]!)));
    expect(eager).toEqual([]);
    // The scan sees the lazy loads, so it would see an eager one.
    expect(lazy.length).toBeGreaterThanOrEqual(2);
  });

  it('src/nestjs loads the ai package (trellis/ai-sdk) only through import(), when a chat request comes', () => {
    const valueImports = (source: string) => [...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+'([^']+)'/gms)].map((m) => m[1]!);
    const aiish = (file: string, specifier: string) => /^(ai|@ai-sdk\/.*)$/.test(specifier) || /^(ai-sdk\.[jt]s|src\/ai-sdk\/)/.test(target(file, specifier) ?? '');
    const files = sourcesUnder('src/nestjs');
    const eager = files.flatMap((file) => valueImports(readFileSync(file, 'utf8')).filter((s) => aiish(file, s)).map((s) => `${relative(ROOT, file)} -> ${s}`));
    const lazy = files.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].filter((m) => aiish(file, m[1]!)));
    expect(eager).toEqual([]);
    expect(lazy.length).toBeGreaterThanOrEqual(1);
  });

  it('src/cli loads trellis/queue, trellis/mcp and the dev server (BullMQ, ioredis, the MCP SDK, hono) only through import(), in the commands that use them', () => {
    const valueImports = (source: string) => [...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+'([^']+)'/gms)].map((m) => m[1]!);
    const heavy = (file: string, specifier: string) =>
      /^(bullmq|ioredis|@modelcontextprotocol\/|hono|@hono\/)/.test(specifier) || /^((queue|mcp)\.[jt]s|src\/dev\/dev-server\.[jt]s)$/.test(target(file, specifier) ?? '');
    const files = sourcesUnder('src/cli');
    const eager = files.flatMap((file) => valueImports(readFileSync(file, 'utf8')).filter((s) => heavy(file, s)).map((s) => `${relative(ROOT, file)} -> ${s}`));
    const lazy = files.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].filter((m) => heavy(file, m[1]!)));
    expect(eager).toEqual([]);
    expect(lazy.length).toBeGreaterThanOrEqual(6);
  });

  it('src/cli loads the SQL report desk example (its SQLite database, better-sqlite3) only through import(), when it runs it', () => {
    const valueImports = (source: string) => [...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+'([^']+)'/gms)].map((m) => m[1]!);
    const example = (file: string, specifier: string) => specifier === 'better-sqlite3' || (target(file, specifier) ?? '').startsWith('examples/');
    const files = sourcesUnder('src/cli');
    const eager = files.flatMap((file) => valueImports(readFileSync(file, 'utf8')).filter((s) => example(file, s)).map((s) => `${relative(ROOT, file)} -> ${s}`));
    const lazy = files.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].filter((m) => example(file, m[1]!)));
    expect(eager).toEqual([]);
    // The scan sees the lazy loads, so it would see an eager one.
    expect(lazy.length).toBeGreaterThanOrEqual(2);
  });

  it('the kernel imports no host', () => {
    const hosts = /^src\/(cli|nestjs|queue|mcp|dev|ai-sdk|ag-ui|a2a|ui-turns)\//;
    const kernel = ['src/agent', 'src/app', 'src/hooks', 'src/context', 'src/state', 'src/plugin', 'src/tools', 'src/stores', 'src/models', 'src/errors', 'src/validation', 'src/events', 'src/contract'];
    expect(violations(kernel, (file, specifier) => hosts.test(target(file, specifier) ?? ''))).toEqual([]);
  });

  it('the root entries index.ts, plugin.ts and testing.ts import no host', () => {
    const hosts = /^src\/(cli|nestjs|queue|mcp|dev|ai-sdk|ag-ui|a2a|ui-turns)\//;
    const bad = ['index.ts', 'plugin.ts', 'testing.ts'].flatMap((name) => {
      const file = join(ROOT, name);
      return specifiers(readFileSync(file, 'utf8')).filter((specifier) => hosts.test(target(file, specifier) ?? '')).map((specifier) => `${name} -> ${specifier}`);
    });
    expect(bad).toEqual([]);
  });
});
