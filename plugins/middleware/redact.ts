import { REDACTED, redactionKey, redactSecrets } from 'trellis/plugin';

export { REDACTED, redactionKey };

/**
 * Key names always redacted from logged tool arguments and results, on top of the
 * framework's own secret-name patterns (`accessToken`, `x-api-key`, `passwd`, …).
 */
export const DEFAULT_REDACT_KEYS: readonly string[] = ['password', 'token', 'apiKey', 'secret', 'authorization', 'cookie'];

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
