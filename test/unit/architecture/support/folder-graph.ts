import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder-level import graph of `src/`, for the layer rules of folder-layers.spec.ts.
 * A folder is `src/<part>`, or `src/<group>/<part>` inside a grouping folder (`engine`,
 * `hosts`); files deeper down count for their part (`src/hosts/mcp/client/…` is `hosts/mcp`).
 */
export const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** Folders of src/ that only group parts: each child folder is a part of its own. */
export const GROUPS: readonly string[] = ['engine', 'hosts'];

/** One module specifier of a source file; `type` when the statement imports or re-exports types only. */
export interface Specifier {
  readonly specifier: string;
  readonly type: boolean;
}

/** Static imports and re-exports (type-only marked), side-effect imports and `import()`. */
export function specifiersOf(source: string): Specifier[] {
  const found: Specifier[] = [];
  for (const m of source.matchAll(/^\s*(?:import|export)\s([^;]*?)\sfrom\s+'([^']+)'/gms)) {
    const clause = m[1]!.trim();
    const braces = /^\{([^}]*)\}$/.exec(clause);
    const names = braces
      ? braces[1]!
          .split(',')
          .map((name) => name.trim())
          .filter(Boolean)
      : [];
    const type = clause.startsWith('type ') || (names.length > 0 && names.every((name) => name.startsWith('type ')));
    found.push({ specifier: m[2]!, type });
  }
  for (const m of source.matchAll(/^\s*import\s+'([^']+)'/gm)) found.push({ specifier: m[1]!, type: false });
  for (const m of source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) found.push({ specifier: m[1]!, type: false });
  return found;
}

/** Every TypeScript file under src/, as a path from the project root with `/`. */
export function sourceFiles(): string[] {
  return readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => `src/${file.split(sep).join('/')}`);
}

/** The part a path of src/ belongs to (`agent`, `engine/hooks`, `hosts/cli`); `undefined` outside src/. */
export function folderOf(path: string): string | undefined {
  const parts = path.split('/');
  if (parts[0] !== 'src' || parts.length < 3) return undefined;
  return GROUPS.includes(parts[1]!) && parts.length >= 4 ? `${parts[1]}/${parts[2]}` : parts[1];
}

/** One import between two folders, with the files that make it. */
export interface FolderEdge {
  readonly from: string;
  readonly to: string;
  /** `file -> specifier`, `(type)` marked. */
  readonly because: string[];
  /** True when every import making the edge is type-only. */
  typeOnly: boolean;
}

/** The folder-level import graph: value and type imports, keyed `from -> to`. */
export function folderGraph(
  files: readonly string[] = sourceFiles(),
  read: (file: string) => string = (file) => readFileSync(join(ROOT, file), 'utf8'),
): Map<string, FolderEdge> {
  const edges = new Map<string, FolderEdge>();
  for (const file of files) {
    const from = folderOf(file);
    if (from === undefined) continue;
    for (const { specifier, type } of specifiersOf(read(file))) {
      if (!specifier.startsWith('.')) continue;
      const to = folderOf(
        relative(ROOT, resolve(ROOT, dirname(file), specifier))
          .split(sep)
          .join('/'),
      );
      if (to === undefined || to === from) continue;
      const key = `${from} -> ${to}`;
      const edge = edges.get(key) ?? { from, to, because: [], typeOnly: true };
      edge.because.push(`${file} -> ${specifier}${type ? ' (type)' : ''}`);
      edge.typeOnly &&= type;
      edges.set(key, edge);
    }
  }
  return edges;
}

/** The circles of a directed graph: its strongly connected components of more than one node, each sorted. */
export function circles(edges: Iterable<readonly [string, string]>): string[][] {
  const next = new Map<string, string[]>();
  for (const [from, to] of edges) {
    next.set(from, [...(next.get(from) ?? []), to]);
    if (!next.has(to)) next.set(to, []);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node)!) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) found.push(component.sort());
  };
  for (const node of next.keys()) if (!index.has(node)) visit(node);
  return found;
}
