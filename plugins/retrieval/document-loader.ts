import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { TrellisError } from 'trellis/plugin';
import type { SourceDocument } from './passage.js';

/** Reads every file under `dir` (recursively) whose name ends with one of `extensions`, in path order. */
export async function loadDocuments(dir: string, extensions: readonly string[]): Promise<SourceDocument[]> {
  let entries;
  try {
    entries = await readdir(dir, { recursive: true, withFileTypes: true });
  } catch (error) {
    throw new TrellisError(
      'InvalidConfig',
      `The documents folder '${dir}' cannot be read: ${error instanceof Error ? error.message : String(error)}`,
      {
        hint: 'Point documentsDir at an existing folder of text files',
      },
    );
  }
  const files = entries
    .filter((e) => e.isFile() && extensions.some((ext) => e.name.toLowerCase().endsWith(ext.toLowerCase())))
    .map((e) => join(e.parentPath, e.name))
    .sort();
  const documents: SourceDocument[] = [];
  for (const file of files) {
    const path = relative(dir, file).split(sep).join('/');
    documents.push({ id: path, source: path, text: await readFile(file, 'utf8') });
  }
  return documents;
}
