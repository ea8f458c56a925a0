import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

const FORMAT_VERSION = 1;

interface PersistedVectors {
  readonly version: number;
  readonly kind: 'vectors';
  readonly fingerprint: string;
  readonly embedder: string;
  readonly vectors: number[][];
}

/**
 * Passage embeddings saved as JSON, so a restart does not pay for embedding unchanged
 * documents again. They are reused only for the same passages (fingerprint) and the same
 * embedding provider (name).
 */
export async function readVectors(
  path: string,
  fingerprint: string,
  embedder: string,
): Promise<number[][] | undefined> {
  let saved: PersistedVectors;
  try {
    saved = JSON.parse(await readFile(path, 'utf8')) as PersistedVectors;
  } catch {
    return undefined;
  }
  const fits =
    saved?.version === FORMAT_VERSION &&
    saved.kind === 'vectors' &&
    saved.fingerprint === fingerprint &&
    saved.embedder === embedder;
  return fits && Array.isArray(saved.vectors) ? saved.vectors : undefined;
}

/** Writes passage embeddings for {@link readVectors}, creating folders as needed. */
export async function writeVectors(
  path: string,
  fingerprint: string,
  embedder: string,
  vectors: number[][],
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const saved: PersistedVectors = { version: FORMAT_VERSION, kind: 'vectors', fingerprint, embedder, vectors };
  await writeFile(path, JSON.stringify(saved));
}
