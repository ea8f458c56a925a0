import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { circles, folderGraph, folderOf, ROOT, sourceFiles, specifiersOf } from './support/folder-graph.js';

/**
 * The folders of src/ are the layers of docs/architecture.md ("Layers and ports"), bottom
 * first: the shared pure parts (`contract`, `errors`, `redaction`, `net`); the engine
 * (`src/engine/<part>`); the turn (`agent`); the app; the hosts (`src/hosts/<host>`), beside
 * each other on top. Each folder may import only the folders its row names — value and type
 * imports, re-exports and `import()` alike — and the rows point down, so no folder circle can
 * come back without a row changing here first, where the acyclic check refuses it.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['redaction', 'errors', 'contract', 'net'],
  [
    'engine/validation',
    'engine/context',
    'engine/events',
    'engine/stores',
    'engine/erasure',
    'engine/budgets',
    'engine/state',
    'engine/hooks',
    'engine/plugin',
    'engine/models',
    'engine/tools',
  ],
  ['agent'],
  ['app'],
  [
    'hosts/ui-turns',
    'hosts/a2a',
    'hosts/ag-ui',
    'hosts/ai-sdk',
    'hosts/cli',
    'hosts/dev',
    'hosts/eval',
    'hosts/mcp',
    'hosts/nestjs',
    'hosts/queue',
  ],
];

const ENGINE = LAYERS[1]!;

/** Which folder may import which (its own files aside). */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  redaction: [],
  errors: ['redaction'],
  contract: ['errors'],
  net: [],
  'engine/validation': ['contract', 'errors'],
  'engine/context': ['contract', 'errors'],
  'engine/events': ['contract', 'redaction'],
  'engine/stores': ['contract', 'errors', 'engine/events'],
  'engine/erasure': ['contract', 'errors', 'engine/stores'],
  'engine/budgets': ['contract', 'errors', 'engine/stores'],
  'engine/state': ['contract', 'errors', 'engine/context', 'engine/events'],
  'engine/hooks': ['contract', 'errors', 'engine/context', 'engine/events', 'engine/state'],
  'engine/plugin': ['contract', 'errors', 'engine/erasure', 'engine/events', 'engine/state', 'engine/validation'],
  'engine/models': ['contract', 'errors', 'redaction', 'engine/validation'],
  'engine/tools': [
    'contract',
    'errors',
    'redaction',
    'engine/budgets',
    'engine/context',
    'engine/events',
    'engine/hooks',
    'engine/plugin',
    'engine/state',
    'engine/validation',
  ],
  agent: ['contract', 'errors', 'redaction', ...ENGINE],
  app: ['agent', 'contract', 'errors', 'redaction', ...ENGINE],
  // Hosts reach the kernel through the package's entries (public-entries.spec.ts); by path only these.
  'hosts/ui-turns': [],
  'hosts/a2a': ['hosts/ui-turns'],
  'hosts/ag-ui': ['hosts/ui-turns'],
  'hosts/ai-sdk': ['hosts/ui-turns'],
  'hosts/cli': ['hosts/dev', 'net', 'engine/validation', 'errors'],
  'hosts/dev': ['net', 'engine/validation', 'errors'],
  'hosts/eval': ['engine/validation'],
  'hosts/mcp': ['net', 'engine/validation', 'errors'],
  'hosts/nestjs': [],
  'hosts/queue': [],
};

const layerOf = (folder: string): number => LAYERS.findIndex((layer) => layer.includes(folder));
const graph = folderGraph();

describe('folders are layers', () => {
  it('every folder of src/ has its place in a layer and its row of what it may import', () => {
    const folders = [...new Set(sourceFiles().map((file) => folderOf(file)!))].sort();
    expect(folders.filter((folder) => layerOf(folder) < 0 || MAY_IMPORT[folder] === undefined)).toEqual([]);
    expect(Object.keys(MAY_IMPORT).filter((folder) => !folders.includes(folder))).toEqual([]);
  });

  it('each folder imports only the folders its row names (value and type imports, re-exports, import())', () => {
    const refused = [...graph.values()]
      .filter((edge) => !MAY_IMPORT[edge.from]?.includes(edge.to))
      .map((edge) => `${edge.from} -> ${edge.to}: ${edge.because.join(', ')}`);
    expect(refused).toEqual([]);
  });

  it('the rows point down: no row names a higher layer, and the rows close no circle', () => {
    const edges = Object.entries(MAY_IMPORT).flatMap(([from, tos]) => tos.map((to) => [from, to] as const));
    expect(edges.filter(([from, to]) => layerOf(to) > layerOf(from)).map(([from, to]) => `${from} -> ${to}`)).toEqual(
      [],
    );
    expect(circles(edges)).toEqual([]);
  });

  it('the folder graph has no circle, counting type imports or not', () => {
    const all = [...graph.values()].map((edge) => [edge.from, edge.to] as const);
    const values = [...graph.values()].filter((edge) => !edge.typeOnly).map((edge) => [edge.from, edge.to] as const);
    expect(circles(all)).toEqual([]);
    expect(circles(values)).toEqual([]);
  });
});

describe('the folder graph (controls: the checks above would see a circle)', () => {
  it('sees value, type-only, inline-type, multi-line, re-exported and dynamic imports', () => {
    const source = [
      "import { A } from '../../contract/a.js';",
      "import type { B } from '../hooks/b.js';",
      "import { type C, type D } from '../state/c.js';",
      "import { type E, F } from '../tools/e.js';",
      'import {',
      '  G,',
      "} from '../plugin/g.js';",
      "export type { H } from '../models/h.js';",
      "const i = await import('../../hosts/cli/i.js');",
    ].join('\n');
    expect(specifiersOf(source)).toEqual([
      { specifier: '../../contract/a.js', type: false },
      { specifier: '../hooks/b.js', type: true },
      { specifier: '../state/c.js', type: true },
      { specifier: '../tools/e.js', type: false },
      { specifier: '../plugin/g.js', type: false },
      { specifier: '../models/h.js', type: true },
      { specifier: '../../hosts/cli/i.js', type: false },
    ]);
    const edges = folderGraph(['src/engine/context/x.ts'], () => source);
    expect([...edges.keys()].sort()).toEqual(
      ['contract', 'engine/hooks', 'engine/models', 'engine/plugin', 'engine/state', 'engine/tools', 'hosts/cli'].map(
        (to) => `engine/context -> ${to}`,
      ),
    );
    expect(edges.get('engine/context -> engine/hooks')!.typeOnly).toBe(true);
    expect(edges.get('engine/context -> engine/tools')!.typeOnly).toBe(false);
  });

  it('a type import from contract up to the engine would close a circle, and the rules refuse it', () => {
    const planted = folderGraph(
      ['src/contract/planted.ts'],
      () => "import type { ToolCallRun } from '../engine/tools/tool-call-run.js';",
    );
    const edge = planted.get('contract -> engine/tools')!;
    expect(edge.typeOnly).toBe(true);
    expect(MAY_IMPORT[edge.from]).not.toContain(edge.to);
    const all = [...graph.values(), edge].map((e) => [e.from, e.to] as const);
    expect(circles(all).length).toBeGreaterThan(0);
  });

  it('the graph is the real one: folders and edges of every layer', () => {
    expect(graph.size).toBeGreaterThan(40);
    expect(graph.has('engine/tools -> engine/hooks')).toBe(true);
    expect(graph.has('app -> agent')).toBe(true);
    expect(
      circles([
        ['a', 'b'],
        ['b', 'c'],
        ['c', 'a'],
        ['c', 'd'],
      ]),
    ).toEqual([['a', 'b', 'c']]);
  });
});

describe('delegation is an extension of the turn', () => {
  /** The turn loop (src/agent/turn/): what every turn runs, delegating or not. */
  const TURN_LOOP = sourceFiles().filter((file) => file.startsWith('src/agent/turn/'));

  it('the turn loop imports no delegation file (it runs delegation only through TurnExtension)', () => {
    expect(TURN_LOOP).toEqual(
      expect.arrayContaining([
        'src/agent/turn/new-turn.ts',
        'src/agent/turn/turn-envelope.ts',
        'src/agent/turn/turn-runner.ts',
      ]),
    );
    const reached = TURN_LOOP.flatMap((file) =>
      specifiersOf(readFileSync(join(ROOT, file), 'utf8'))
        .filter(
          ({ specifier }) =>
            specifier.startsWith('.') &&
            relative(ROOT, resolve(ROOT, dirname(file), specifier))
              .split(sep)
              .join('/')
              .startsWith('src/agent/delegation/'),
        )
        .map(({ specifier }) => `${file} -> ${specifier}`),
    );
    expect(reached).toEqual([]);
    // The scan sees a delegation import where there is one.
    expect(
      specifiersOf(readFileSync(join(ROOT, 'src/agent/session.ts'), 'utf8')).some(({ specifier }) =>
        specifier.startsWith('./delegation/'),
      ),
    ).toBe(true);
  });
});
