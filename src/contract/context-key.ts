/** A declared context dependency: `'app.user_id'` or `{ key: 'app.locale', optional: true }`. */
export type ContextKeySpec = string | { readonly key: string; readonly optional?: boolean };

export interface NormalizedKey {
  readonly key: string;
  readonly optional: boolean;
}

export function normalizeKey(spec: ContextKeySpec): NormalizedKey {
  return typeof spec === 'string'
    ? { key: spec, optional: false }
    : { key: spec.key, optional: spec.optional ?? false };
}

/** The three context levels, nearest first. */
export type ContextLevel = 'execution' | 'turn' | 'session';
