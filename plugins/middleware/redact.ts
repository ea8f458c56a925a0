/** What a redacted value is replaced with (pino's own censor text). */
export const REDACTED = '[Redacted]';

/** Key names always redacted from logged tool arguments and results. */
export const DEFAULT_REDACT_KEYS: readonly string[] = ['password', 'token', 'apiKey', 'secret', 'authorization', 'cookie'];

/**
 * Returns a copy of `value` safe to log: the value of every property whose name is in
 * `keys` is replaced by `'[Redacted]'`, at any depth, inside objects and arrays. Names match
 * case-insensitively and ignoring `-` and `_`, so `apiKey` also covers `API_KEY` and `api-key`.
 * pino's own `redact` needs fixed paths, which tool arguments do not have.
 *
 * @example
 * redact({ user: { Password: 'x' } }, new Set(['password'])) // { user: { Password: '[Redacted]' } }
 */
export function redact(value: unknown, keys: ReadonlySet<string>): unknown {
  return copy(value, keys, new WeakSet());
}

/** Normalizes a key name for matching: lower case, without `-` and `_`. */
export function redactionKey(name: string): string {
  return name.replace(/[-_]/g, '').toLowerCase();
}

function copy(value: unknown, keys: ReadonlySet<string>, seen: WeakSet<object>): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (seen.has(value)) return '[Circular]';
  if (value instanceof Date) return value;
  if (value instanceof Error) return { name: value.name, message: value.message };
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => copy(item, keys, seen));
    if (value instanceof Map) return copy(Object.fromEntries(value), keys, seen);
    if (value instanceof Set) return copy([...value], keys, seen);
    const out: Record<string, unknown> = {};
    for (const [name, item] of Object.entries(value)) {
      out[name] = keys.has(redactionKey(name)) ? REDACTED : copy(item, keys, seen);
    }
    return out;
  } finally {
    // Only ancestors count as cycles; the same object twice in siblings is fine.
    seen.delete(value);
  }
}
