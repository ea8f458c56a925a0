import type { Passage, PassageHit } from './passage.js';

/** Cosine similarity of two vectors of the same length; 0 when either is all zeros. */
export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** An in-memory vector index: passages with their embeddings, searched by cosine similarity. */
export class VectorIndex {
  private readonly entries: { readonly passage: Passage; readonly vector: readonly number[]; readonly norm: number }[] =
    [];

  get size(): number {
    return this.entries.length;
  }

  add(passage: Passage, vector: readonly number[]): void {
    if (this.entries.length > 0 && vector.length !== this.entries[0]!.vector.length) {
      throw new Error(
        `Embedding of '${passage.id}' has ${vector.length} dimensions, the index has ${this.entries[0]!.vector.length}`,
      );
    }
    this.entries.push({ passage, vector, norm: Math.sqrt(vector.reduce((n, x) => n + x * x, 0)) });
  }

  /** The `k` passages most similar to `vector`, best first. */
  query(vector: readonly number[], k: number): PassageHit[] {
    const qn = Math.sqrt(vector.reduce((n, x) => n + x * x, 0));
    if (qn === 0) return [];
    const scored = this.entries.map(({ passage, vector: v, norm }) => {
      let dot = 0;
      for (let i = 0; i < v.length; i++) dot += v[i]! * vector[i]!;
      return { ...passage, score: norm === 0 ? 0 : dot / (norm * qn) };
    });
    return scored.sort((a, b) => b.score - a.score).slice(0, k);
  }
}
