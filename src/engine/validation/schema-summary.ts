import type { JsonSchema } from '../../contract/model-provider.js';

/** A tool input schema on one line, e.g. `{ sql: string (One read-only SELECT…), limit?: integer }`. */
export function schemaSummary(schema: JsonSchema): string {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const fields = Object.entries(properties).map(([name, prop]) => {
    const type = Array.isArray(prop.enum)
      ? prop.enum.map((v) => JSON.stringify(v)).join(' | ')
      : String(prop.type ?? 'any');
    return `${name}${required.has(name) ? '' : '?'}: ${type}${prop.description ? ` (${String(prop.description)})` : ''}`;
  });
  return fields.length > 0 ? `{ ${fields.join(', ')} }` : '{}';
}
