/** A piece of a document: what is indexed, searched and injected. */
export interface Passage {
  /** `<document id>#<n>`, n counting from 1. */
  readonly id: string;
  /** Where it comes from: a file path relative to the documents folder, or an inline document's source. */
  readonly source: string;
  readonly text: string;
}

/** A passage found by a search, with its score (higher is better). */
export interface PassageHit extends Passage {
  readonly score: number;
}

/** A document before it is split into passages. */
export interface SourceDocument {
  readonly id: string;
  readonly source: string;
  readonly text: string;
}

/**
 * Splits a document into passages of at most `maxChars` characters, at paragraph breaks
 * where it can, else at the last space before the limit.
 */
export function splitIntoPassages(document: SourceDocument, maxChars: number): Passage[] {
  const pieces: string[] = [];
  for (const paragraph of document.text.split(/\n\s*\n/)) {
    let rest = paragraph.trim();
    while (rest.length > maxChars) {
      const cut = rest.lastIndexOf(' ', maxChars);
      const at = cut > maxChars / 2 ? cut : maxChars;
      pieces.push(rest.slice(0, at).trim());
      rest = rest.slice(at).trim();
    }
    if (rest) pieces.push(rest);
  }
  const passages: Passage[] = [];
  let current = '';
  const flush = () => {
    if (current) passages.push({ id: `${document.id}#${passages.length + 1}`, source: document.source, text: current });
    current = '';
  };
  for (const piece of pieces) {
    if (current && current.length + 2 + piece.length > maxChars) flush();
    current = current ? `${current}\n\n${piece}` : piece;
  }
  flush();
  return passages;
}
