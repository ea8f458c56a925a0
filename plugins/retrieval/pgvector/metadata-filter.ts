import { TrellisError } from 'trellis/plugin';
import type { MetadataFilter, MetadataValue } from '../retrieval-index.js';

const MAX_KEY = 64;
const MAX_FIELDS = 32;

function isScalar(value: unknown): value is MetadataValue {
  return (
    typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))
  );
}

/** Checks a document's metadata: at most 32 fields, names up to 64 characters, scalar values. */
export function checkMetadata(metadata: unknown, where: string): Record<string, MetadataValue> {
  if (metadata === undefined) return {};
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
    throw invalid(`${where}: metadata must be an object of fields`);
  const entries = Object.entries(metadata);
  if (entries.length > MAX_FIELDS)
    throw invalid(`${where}: metadata has ${entries.length} fields, at most ${MAX_FIELDS} are allowed`);
  for (const [key, value] of entries) {
    if (key === '' || key.length > MAX_KEY)
      throw invalid(`${where}: metadata field names are 1 to ${MAX_KEY} characters`);
    if (!isScalar(value))
      throw invalid(`${where}: metadata field '${key}' must be a string, a finite number or a boolean`);
  }
  return Object.fromEntries(entries);
}

/**
 * A filter as SQL over a `jsonb` column: one `column @> ANY($n::jsonb[])` a field, each
 * candidate value a one-field JSON object, so field names and values only ever travel as
 * parameters (and the GIN `jsonb_path_ops` index serves it). `next(value)` adds a parameter
 * and answers its placeholder.
 */
export function filterSql(
  filter: MetadataFilter | undefined,
  column: string,
  next: (value: unknown) => string,
): string[] {
  if (filter === undefined) return [];
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter))
    throw invalid('a metadata filter must be an object: { field: value | [values] }');
  const clauses: string[] = [];
  for (const [key, wanted] of Object.entries(filter)) {
    const values = Array.isArray(wanted) ? wanted : [wanted];
    if (key === '' || key.length > MAX_KEY) throw invalid(`metadata filter field names are 1 to ${MAX_KEY} characters`);
    if (values.length === 0)
      throw invalid(`metadata filter field '${key}' lists no value (an empty list would match nothing)`);
    if (!values.every(isScalar))
      throw invalid(`metadata filter field '${key}' must be a string, a finite number or a boolean, or a list of them`);
    clauses.push(`${column} @> ANY(${next(values.map((v) => JSON.stringify({ [key]: v })))}::jsonb[])`);
  }
  return clauses;
}

function invalid(message: string): TrellisError {
  return new TrellisError('InvalidOptions', message, {
    hint: "Metadata is flat: { product: 'billing', year: 2025, public: true }; a filter lists values a field may take: { lang: ['en', 'de'] }",
  });
}
