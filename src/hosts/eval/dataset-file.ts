import { readFileSync } from 'node:fs';
import { TrellisError } from '../../../index.js';
import { parseDataset, type EvalCase } from './eval-case.js';

/** Reads and checks a JSONL dataset file ({@link parseDataset}); a missing or unreadable file is `InvalidDataset` too. */
export function loadDataset(path: string): EvalCase[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | null)?.code;
    throw new TrellisError(
      'InvalidDataset',
      `The eval dataset ${path} cannot be read${code === 'ENOENT' ? ': there is no such file' : `: ${error instanceof Error ? error.message : String(error)}`}`,
      {
        hint: 'Give the path of a .jsonl file, one case a line (docs/evals.md); relative paths start from the working directory',
      },
    );
  }
  return parseDataset(text, path);
}

/** The cases carrying at least one of `tags` (all of them when `tags` is empty). */
export function casesTagged(cases: readonly EvalCase[], tags: readonly string[]): EvalCase[] {
  return tags.length === 0 ? [...cases] : cases.filter((c) => c.tags?.some((t) => tags.includes(t)));
}
