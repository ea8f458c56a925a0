import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type MiniSearch from 'minisearch';
import type { Options } from 'minisearch';
import type { Passage, PassageHit } from './passage.js';

const FORMAT_VERSION = 1;

const OPTIONS: Options<Passage> = {
  fields: ['text', 'source'],
  storeFields: ['text', 'source'],
  searchOptions: {
    boost: { source: 0.5 },
    prefix: (term) => term.length > 3,
    fuzzy: (term) => (term.length > 5 ? 0.2 : false),
  },
};

interface PersistedIndex {
  readonly version: number;
  readonly kind: 'fulltext';
  readonly fingerprint: string;
  readonly index: unknown;
}

/** A fingerprint of the passages: the persisted index is reused only while it matches. */
export function fingerprintOf(passages: readonly Passage[]): string {
  const hash = createHash('sha256');
  for (const p of passages)
    hash.update(p.id).update('\0').update(p.source).update('\0').update(p.text).update('\u0001');
  return hash.digest('hex');
}

/** A minisearch (BM25) full-text index of passages, persisted to a JSON file. */
export class FullTextIndex {
  private constructor(
    private readonly search: MiniSearch<Passage>,
    /** Whether it was read from the file rather than built. */
    readonly loaded: boolean,
  ) {}

  /**
   * Loads the index from `path` when it holds one for exactly these passages; otherwise
   * builds it and, with a `path`, writes it there (folders created as needed).
   */
  static async open(passages: readonly Passage[], path: string | undefined): Promise<FullTextIndex> {
    // Loaded here, by the one plugin that indexes, rather than when Trellis is imported.
    const { default: MiniSearch } = await import('minisearch');
    const fingerprint = fingerprintOf(passages);
    if (path) {
      const saved = await readPersisted(path);
      if (
        saved?.version === FORMAT_VERSION &&
        saved.kind === 'fulltext' &&
        saved.fingerprint === fingerprint &&
        saved.index
      ) {
        return new FullTextIndex(
          MiniSearch.loadJS(saved.index as Parameters<typeof MiniSearch.loadJS>[0], OPTIONS),
          true,
        );
      }
    }
    const search = new MiniSearch<Passage>(OPTIONS);
    search.addAll(passages);
    if (path) {
      await mkdir(dirname(path), { recursive: true });
      const persisted: PersistedIndex = {
        version: FORMAT_VERSION,
        kind: 'fulltext',
        fingerprint,
        index: search.toJSON(),
      };
      await writeFile(path, JSON.stringify(persisted));
    }
    return new FullTextIndex(search, false);
  }

  /** The best `k` passages for a query, best first. */
  query(text: string, k: number): PassageHit[] {
    return this.search
      .search(text)
      .slice(0, k)
      .map((r) => ({ id: String(r.id), source: r.source as string, text: r.text as string, score: r.score }));
  }
}

async function readPersisted(path: string): Promise<PersistedIndex | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as PersistedIndex;
  } catch {
    // Missing or unreadable: rebuild it.
    return undefined;
  }
}
