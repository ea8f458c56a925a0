import { REDACTED, redactionKey, redactSecrets } from 'trellis/plugin';

export { REDACTED, redactionKey };

/**
 * Key names always redacted from logged tool arguments and results, on top of the
 * framework's own secret-name patterns (`accessToken`, `x-api-key`, `passwd`, …).
 */
export const DEFAULT_REDACT_KEYS: readonly string[] = [
  'password',
  'token',
  'apiKey',
  'secret',
  'authorization',
  'cookie',
];

/**
 * Returns a copy of `value` safe to log, through Trellis's one redactor
 * (`redactSecrets`): secret-looking key names at any depth, `@Secret()` DTO fields and
 * secret-shaped values are replaced by `'[Redacted]'`; `keys` adds exact names, matched
 * case-insensitively and ignoring `-`, `_` and `.`.
 *
 * @example
 * redact({ user: { Password: 'x' } }, new Set(['password'])) // { user: { Password: '[Redacted]' } }
 */
export function redact(value: unknown, keys: ReadonlySet<string>): unknown {
  return redactSecrets(value, { extraKeys: keys });
}

/** Whom a call is about, as the host's context names them: masked in logs, with the text that replaces each. */
export interface Subjects {
  readonly values: readonly string[];
  readonly pattern: RegExp;
  readonly masks: ReadonlyMap<string, string>;
}

const SUBJECT_CACHE = new Map<string, Subjects>();

/**
 * The subjects to mask, e.g. `[['u-42', '[user]'], ['acme', '[tenant]']]`; undefined when there
 * are none. An id is matched where it stands as a word of its own (not inside a longer run of
 * letters, digits or `_`), so a short id does not mask unrelated text.
 */
export function subjectsOf(pairs: readonly (readonly [string, string])[]): Subjects | undefined {
  const kept = pairs.filter(([value]) => value.length > 0);
  if (kept.length === 0) return undefined;
  const key = kept.map(([v, m]) => `${m}\u0000${v}`).join('\u0001');
  let subjects = SUBJECT_CACHE.get(key);
  if (subjects === undefined) {
    // Longest first, so an id that contains another is masked whole.
    const values = [...new Set(kept.map(([v]) => v))].sort((a, b) => b.length - a.length);
    const escaped = values.map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    subjects = {
      values,
      pattern: new RegExp(`(?<![A-Za-z0-9_])(?:${escaped.join('|')})(?![A-Za-z0-9_])`, 'g'),
      masks: new Map(kept),
    };
    if (SUBJECT_CACHE.size >= 1000) SUBJECT_CACHE.delete(SUBJECT_CACHE.keys().next().value!);
    SUBJECT_CACHE.set(key, subjects);
  }
  return subjects;
}

/**
 * A copy of `value` with every occurrence of the subjects (a user's id, a tenant) in its text,
 * keys included, replaced by its mask: what a log line may keep of whom it is about.
 *
 * @example
 * maskSubjects({ note: 'for u-42' }, subjectsOf([['u-42', '[user]']])) // { note: 'for [user]' }
 */
export function maskSubjects(value: unknown, subjects: Subjects | undefined, depth = 0): unknown {
  if (subjects === undefined) return value;
  if (typeof value === 'string')
    return value.replace(subjects.pattern, (found) => subjects.masks.get(found) ?? '[subject]');
  if (typeof value !== 'object' || value === null || depth > 64) return value;
  if (Array.isArray(value)) return value.map((item) => maskSubjects(item, subjects, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value))
    out[maskSubjects(key, subjects) as string] = maskSubjects(item, subjects, depth + 1);
  return out;
}
