import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Built-in plugins and the example are written against the public entries a third-party
 * author would use (`trellis/plugin`, `trellis`, `trellis/plugins/<name>`), never against the
 * kernel's files; and the kernel's entries other than the root (`plugin.ts`, `models.ts`,
 * `stores.ts`, `governance.ts`, `host.ts`) point only into the kernel, so the built-ins
 * importing `trellis/plugin` (while the root `index.ts` re-exports the built-in middleware)
 * close no import circle.
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
  return relative(ROOT, resolve(dirname(file), specifier))
    .split(sep)
    .join('/');
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

/** The entry files at the top of the project, each a subpath of the package (`host.ts` is `trellis/host`). */
const ENTRY_FILES = [
  'index',
  'plugin',
  'testing',
  'models',
  'stores',
  'governance',
  'host',
  'queue',
  'nestjs',
  'mcp',
  'ai-sdk',
  'ag-ui',
  'a2a',
  'eval',
];
/** The entries of the kernel besides the root: each points only into src/ and decorators/. */
const KERNEL_ENTRIES = ['plugin.ts', 'models.ts', 'stores.ts', 'governance.ts', 'host.ts'];

const intoKernel = (file: string, specifier: string): boolean =>
  /^(src|decorators)(\/|$)/.test(target(file, specifier) ?? '') ||
  ENTRY_FILES.some((entry) => new RegExp(`^${entry}\\.[jt]s$`).test(target(file, specifier) ?? ''));

describe('the entries', () => {
  it('a name two entries share is the same binding in both (the root, trellis/plugin, the kernel entries, the built-ins)', async () => {
    const modules: Record<string, Record<string, unknown>> = {
      trellis: await import('../../../index.js'),
      'trellis/plugin': await import('../../../plugin.js'),
      'trellis/models': await import('../../../models.js'),
      'trellis/stores': await import('../../../stores.js'),
      'trellis/governance': await import('../../../governance.js'),
      'trellis/host': await import('../../../host.js'),
      'trellis/testing': await import('../../../testing.js'),
      'trellis/plugins/middleware': await import('../../../plugins/middleware/index.js'),
    };
    const first = new Map<string, [string, unknown]>();
    const differing: string[] = [];
    let shared = 0;
    for (const [entry, exports] of Object.entries(modules)) {
      for (const [name, value] of Object.entries(exports)) {
        const seen = first.get(name);
        if (seen === undefined) first.set(name, [entry, value]);
        else if (seen[1] !== value) differing.push(`${name}: ${seen[0]} and ${entry}`);
        else shared++;
      }
    }
    expect(differing).toEqual([]);
    // The scan compares something: the root shares the decorators with trellis/plugin, the middleware with its family.
    expect(shared).toBeGreaterThan(25);
  });

  it("package.json's exports, tsconfig paths and jest's moduleNameMapper name the same entries, each a file that exists", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, { types: string; import: string }>;
    };
    const tsconfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')) as {
      compilerOptions: { paths: Record<string, string[]> };
    };
    const fromExports = Object.entries(pkg.exports).map(([subpath, target]) => {
      expect(target.types).toBe(target.import.replace(/\.js$/, '.d.ts'));
      return [
        subpath === '.' ? 'trellis' : `trellis/${subpath.slice(2)}`,
        target.import.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'),
      ];
    });
    const fromPaths = Object.entries(tsconfig.compilerOptions.paths).map(([name, [file]]) => [
      name,
      file!.replace(/^\.\//, ''),
    ]);
    expect(Object.fromEntries(fromPaths)).toEqual(Object.fromEntries(fromExports));
    for (const [, file] of fromExports) expect(statSync(join(ROOT, file!)).isFile()).toBe(true);
    // Every top-level entry file is exported, and jest maps each subpath to its source.
    expect(
      fromExports
        .filter(([, file]) => !file!.includes('/'))
        .map(([, file]) => file!.replace(/\.ts$/, ''))
        .sort(),
    ).toEqual([...ENTRY_FILES].sort());
    const jest = readFileSync(join(ROOT, 'jest.config.ts'), 'utf8');
    for (const [name] of fromExports)
      expect(jest).toMatch(name!.startsWith('trellis/plugins/') ? "'^trellis/plugins/([a-z-]+)$'" : `'^${name}$'`);
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
    expect(specifiers(source)).toEqual([
      '../../src/a.js',
      '../../decorators/index.js',
      './c.js',
      'reflect-metadata',
      'minisearch',
    ]);
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
    const users = sourcesUnder('plugins').filter((file) =>
      specifiers(readFileSync(file, 'utf8')).includes('trellis/plugin'),
    );
    expect(users.length).toBeGreaterThan(15);
  });

  it.each(KERNEL_ENTRIES)(
    '%s points only into src/ and decorators/ (and packages), never at index.ts or plugins/',
    (name) => {
      const file = join(ROOT, name);
      const bad = specifiers(readFileSync(file, 'utf8')).filter((specifier) => {
        const to = target(file, specifier);
        return specifier.startsWith('trellis') || (to !== undefined && !/^(src|decorators)\//.test(to));
      });
      expect(bad).toEqual([]);
    },
  );

  it('the examples import Trellis by its package names, built-in families included (the scan sees them)', () => {
    const named = sourcesUnder('examples').flatMap((file) =>
      specifiers(readFileSync(file, 'utf8')).filter((specifier) => /^trellis(\/|$)/.test(specifier)),
    );
    expect(named).toEqual(
      expect.arrayContaining(['trellis', 'trellis/plugin', 'trellis/plugins/middleware', 'trellis/plugins/reflection']),
    );
  });
});

describe('hosts drive the kernel through the public entry', () => {
  /** Kernel helpers a host may still use by path: pure functions with no kernel state. */
  const ALLOWED = new Set([
    'src/engine/validation/json-schema-validator.js',
    'src/engine/validation/schema-summary.js',
    'src/errors/describe-error.js',
  ]);
  const kernelFolders = /^src\/(agent|app|engine|redaction|errors|contract)\//;

  it.each([
    'src/hosts/nestjs',
    'src/hosts/queue',
    'src/hosts/mcp',
    'src/hosts/dev',
    'src/hosts/ai-sdk',
    'src/hosts/ag-ui',
    'src/hosts/a2a',
    'src/hosts/ui-turns',
    'src/hosts/eval',
  ])('%s imports kernel files only through the public entries', (folder) => {
    const bad = violations([folder], (file, specifier) => {
      const to = target(file, specifier);
      return to !== undefined && kernelFolders.test(to) && !ALLOWED.has(to);
    });
    expect(bad).toEqual([]);
  });

  /**
   * The CLI is a host like the others, held to a closed list: besides its own files it may
   * import by path only the dev page it serves (`src/hosts/dev`, a host without an entry of its
   * own), the local-server helpers (`src/net`: pure, no kernel imports), the example it runs
   * when there is no config, and the pure helpers above. The kernel, the built-ins and the
   * other hosts it reaches through the package's entries (`trellis/queue` and `trellis/mcp` by `import()`).
   */
  const cliReachesIn = (file: string, specifier: string): boolean => {
    const to = target(file, specifier);
    if (to === undefined) return false;
    const entry =
      /^((index|plugin|testing|models|stores|governance|host|queue|mcp|nestjs|eval)\.js|plugins\/[a-z-]+\/index\.js)$/.test(
        to,
      );
    return (
      !entry &&
      !/^src\/(hosts\/cli|hosts\/dev|net)\//.test(to) &&
      !to.startsWith('examples/sql-report-desk/') &&
      !ALLOWED.has(to)
    );
  };

  it('src/hosts/cli imports the kernel only through the public entries', () => {
    expect(violations(['src/hosts/cli'], cliReachesIn)).toEqual([]);
  });

  it('the CLI rule refuses a kernel, built-in, decorator or other host file and admits the entries (the scan sees them)', () => {
    const file = join(ROOT, 'src/hosts/cli/commands/run.command.ts');
    const refused = [
      '../../../app/trellis.js',
      '../../../agent/call-journal.js',
      '../../../engine/stores/sqlite-doctor.js',
      '../../../../plugins/middleware/logger.js',
      '../../../../decorators/index.js',
      '../../queue/turn-queue.js',
      '../../mcp/client/mcp-server-spec.js',
      '../../../redaction/redactor.js',
    ];
    const admitted = [
      '../../../../index.js',
      '../../../../plugin.js',
      '../../../../stores.js',
      '../../../../host.js',
      '../../../../plugins/middleware/index.js',
      '../../../../queue.js',
      '../../../../mcp.js',
      '../cli-app.js',
      '../../dev/dev-server.js',
      '../../../net/loopback.js',
      '../../../engine/validation/schema-summary.js',
      'commander',
    ];
    expect(refused.filter((specifier) => !cliReachesIn(file, specifier))).toEqual([]);
    expect(admitted.filter((specifier) => cliReachesIn(file, specifier))).toEqual([]);
    const users = sourcesUnder('src/hosts/cli').filter((f) =>
      specifiers(readFileSync(f, 'utf8')).some((specifier) => target(f, specifier) === 'index.js'),
    );
    expect(users.length).toBeGreaterThan(15);
  });

  it('src/hosts/nestjs loads the queue (BullMQ, ioredis) only through import(), when the queue option is set', () => {
    const valueImports = (source: string) =>
      [...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+'([^']+)'/gms)].map((m) => m[1]!);
    const queueish = (file: string, specifier: string) =>
      /^(bullmq|ioredis)$/.test(specifier) || /^(queue\.[jt]s|src\/hosts\/queue\/)/.test(target(file, specifier) ?? '');
    const files = sourcesUnder('src/hosts/nestjs');
    const eager = files.flatMap((file) =>
      valueImports(readFileSync(file, 'utf8'))
        .filter((s) => queueish(file, s))
        .map((s) => `${relative(ROOT, file)} -> ${s}`),
    );
    const lazy = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].filter((m) => queueish(file, m[1]!)),
    );
    expect(eager).toEqual([]);
    // The scan sees the lazy loads, so it would see an eager one.
    expect(lazy.length).toBeGreaterThanOrEqual(2);
  });

  it('src/hosts/nestjs loads the ai package (trellis/ai-sdk) only through import(), when a chat request comes', () => {
    const valueImports = (source: string) =>
      [...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+'([^']+)'/gms)].map((m) => m[1]!);
    const aiish = (file: string, specifier: string) =>
      /^(ai|@ai-sdk\/.*)$/.test(specifier) ||
      /^(ai-sdk\.[jt]s|src\/hosts\/ai-sdk\/)/.test(target(file, specifier) ?? '');
    const files = sourcesUnder('src/hosts/nestjs');
    const eager = files.flatMap((file) =>
      valueImports(readFileSync(file, 'utf8'))
        .filter((s) => aiish(file, s))
        .map((s) => `${relative(ROOT, file)} -> ${s}`),
    );
    const lazy = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].filter((m) => aiish(file, m[1]!)),
    );
    expect(eager).toEqual([]);
    expect(lazy.length).toBeGreaterThanOrEqual(1);
  });

  it('src/hosts/cli loads trellis/queue, trellis/mcp and the dev server (BullMQ, ioredis, the MCP SDK, hono) only through import(), in the commands that use them', () => {
    const valueImports = (source: string) =>
      [...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+'([^']+)'/gms)].map((m) => m[1]!);
    const heavy = (file: string, specifier: string) =>
      /^(bullmq|ioredis|@modelcontextprotocol\/|hono|@hono\/)/.test(specifier) ||
      /^((queue|mcp)\.[jt]s|src\/hosts\/dev\/dev-server\.[jt]s)$/.test(target(file, specifier) ?? '');
    const files = sourcesUnder('src/hosts/cli');
    const eager = files.flatMap((file) =>
      valueImports(readFileSync(file, 'utf8'))
        .filter((s) => heavy(file, s))
        .map((s) => `${relative(ROOT, file)} -> ${s}`),
    );
    const lazy = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].filter((m) => heavy(file, m[1]!)),
    );
    expect(eager).toEqual([]);
    expect(lazy.length).toBeGreaterThanOrEqual(6);
  });

  it('src/hosts/cli loads the SQL report desk example (its SQLite database, better-sqlite3) only through import(), when it runs it', () => {
    const valueImports = (source: string) =>
      [...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+'([^']+)'/gms)].map((m) => m[1]!);
    const example = (file: string, specifier: string) =>
      specifier === 'better-sqlite3' || (target(file, specifier) ?? '').startsWith('examples/');
    const files = sourcesUnder('src/hosts/cli');
    const eager = files.flatMap((file) =>
      valueImports(readFileSync(file, 'utf8'))
        .filter((s) => example(file, s))
        .map((s) => `${relative(ROOT, file)} -> ${s}`),
    );
    const lazy = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].filter((m) => example(file, m[1]!)),
    );
    expect(eager).toEqual([]);
    // The scan sees the lazy loads, so it would see an eager one.
    expect(lazy.length).toBeGreaterThanOrEqual(2);
  });

  it('the kernel imports no host', () => {
    const hosts = /^src\/hosts\/(?!eval\/)/; // testing.ts re-exports describeEval from src/hosts/eval
    const kernel = ['src/agent', 'src/app', 'src/engine', 'src/redaction', 'src/errors', 'src/contract'];
    expect(violations(kernel, (file, specifier) => hosts.test(target(file, specifier) ?? ''))).toEqual([]);
  });

  it('the kernel entries (index.ts, testing.ts and those beside plugin.ts) import no host', () => {
    const hosts = /^src\/hosts\/(?!eval\/)/; // testing.ts re-exports describeEval from src/hosts/eval
    const bad = ['index.ts', 'testing.ts', ...KERNEL_ENTRIES].flatMap((name) => {
      const file = join(ROOT, name);
      return specifiers(readFileSync(file, 'utf8'))
        .filter((specifier) => hosts.test(target(file, specifier) ?? ''))
        .map((specifier) => `${name} -> ${specifier}`);
    });
    expect(bad).toEqual([]);
  });
});
