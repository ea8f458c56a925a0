import type { EmbeddingProvider } from '../../plugins/retrieval/index.js';

/** Words that mean the same thing to the test embedder, by concept (a dimension each). */
const CONCEPTS: Readonly<Record<string, number>> = {
  refund: 0,
  refunds: 0,
  refunded: 0,
  reimbursement: 0,
  reimbursed: 0,
  money: 0,
  shipping: 1,
  ships: 1,
  ship: 1,
  delivery: 1,
  parcel: 1,
  parcels: 1,
  password: 2,
  login: 2,
  account: 2,
  sign: 2,
  invoice: 3,
  invoices: 3,
  billing: 3,
  bill: 3,
  holiday: 4,
  vacation: 4,
  leave: 4,
};

/**
 * A deterministic embedder for tests: a vector of concept counts, so synonyms
 * ("refund", "reimbursement") land close while full text keeps them apart, and codes such
 * as "ZX-9000" mean nothing to it (only full text finds them). The last dimension is a
 * small constant, so no text embeds as the zero vector.
 */
export class ConceptEmbeddings implements EmbeddingProvider {
  readonly name = 'test:concepts';
  readonly dimensions = 6;
  calls = 0;

  async embed(texts: readonly string[]): Promise<number[][]> {
    this.calls++;
    return texts.map((text) => {
      const v = new Array<number>(this.dimensions).fill(0);
      for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
        const concept = CONCEPTS[word];
        if (concept !== undefined) v[concept]! += 1;
      }
      v[this.dimensions - 1] = 0.05;
      return v;
    });
  }
}
