import 'reflect-metadata';
import { METADATA } from '../../decorators/metadata-keys.js';
import { isMixedCaseToken, REDACTED, SECRET_KEY, SECRET_VALUE_PATTERNS, TOKEN_RUN } from './secret-patterns.js';

export { REDACTED };

/** Options of {@link redactSecrets}. */
export interface RedactOptions {
  /** More key names to redact, compared after {@link redactionKey}. */
  readonly extraKeys?: ReadonlySet<string>;
  /** Property names to redact at the top level (a DTO's `@Secret()` fields, for plain arguments). */
  readonly topLevelSecrets?: readonly string[];
}

/** Deeper than this, a copy stops with a marker: redaction must never overflow the stack. */
const MAX_DEPTH = 64;

/** Normalizes a key name for matching: lower case, without `-`, `_` and `.`. */
export function redactionKey(name: string): string {
  return name.replace(/[-_.]/g, '').toLowerCase();
}

/** Whether a property of this name holds a secret (`accessToken`, `x-api-key`, `passwd`, …). */
export function isSecretKey(name: string, extraKeys?: ReadonlySet<string>): boolean {
  const key = redactionKey(name);
  return SECRET_KEY.test(key) || (extraKeys?.has(key) ?? false);
}

/**
 * Text with secret-shaped values replaced by `[Redacted]`: `Bearer …`, JWTs, vendor API
 * keys by prefix (`sk-…`, `ghp_…`, `xoxb-…`, `AKIA…`, …) and `password=…`-style pairs.
 *
 * @example
 * redactText('401: Incorrect API key provided: sk-abcdefghijklmnop1234') // '401: Incorrect API key provided: [Redacted]'
 */
export function redactText(text: string): string {
  // Every turn passes its text through here (events, deltas, stored messages): a pattern is
  // replaced only where it matches, and the replacers are made once, so clean text allocates nothing.
  let out = text;
  for (let i = 0; i < SECRET_VALUE_PATTERNS.length; i++) {
    const pattern = SECRET_VALUE_PATTERNS[i];
    if (pattern === undefined) continue;
    pattern.lastIndex = 0;
    if (!pattern.test(out)) continue;
    pattern.lastIndex = 0;
    out = out.replace(pattern, keepThenRedacted);
  }
  TOKEN_RUN.lastIndex = 0;
  if (!TOKEN_RUN.test(out)) return out;
  TOKEN_RUN.lastIndex = 0;
  return out.replace(TOKEN_RUN, redactedIfToken);
}

/** A secret pattern's match: its kept group (a `password=` key, a URL's user), then the marker. */
function keepThenRedacted(_match: string, keep: unknown): string {
  return `${typeof keep === 'string' ? keep : ''}${REDACTED}`;
}

/** A run of token characters: the marker when it is a long mixed-case token, else the run. */
function redactedIfToken(run: string): string {
  return isMixedCaseToken(run) ? REDACTED : run;
}

/**
 * A copy of `value` safe to log, emit or show. At any depth: properties whose name looks
 * secret ({@link isSecretKey}) and properties marked `@Secret()` on their DTO class become
 * `[Redacted]`; strings are passed through {@link redactText}; errors become
 * `{ name, message }`; cycles become `[Circular]`. The original is never changed.
 *
 * @example
 * redactSecrets({ headers: { 'X-Api-Key': 'k' }, note: 'Bearer abcdefghij' })
 * // { headers: { 'X-Api-Key': '[Redacted]' }, note: 'Bearer [Redacted]' }
 */
export function redactSecrets(value: unknown, options: RedactOptions = {}): unknown {
  const top =
    options.topLevelSecrets && options.topLevelSecrets.length > 0 ? new Set(options.topLevelSecrets) : undefined;
  return copy(value, options.extraKeys, new WeakSet(), 0, top);
}

/** The `@Secret()` property names of a DTO class and its parents. */
export function secretFields(type: Function | undefined): readonly string[] {
  if (!type) return NONE;
  const names: string[] = [];
  for (
    let current: unknown = type;
    typeof current === 'function' && current !== Function.prototype;
    current = Object.getPrototypeOf(current)
  ) {
    names.push(...((Reflect.getOwnMetadata(METADATA.secrets, current) as string[] | undefined) ?? []));
  }
  return names;
}

const NONE: readonly string[] = [];

/**
 * A tool call's arguments, as the JSON text the model wrote, with its secrets out: the
 * `secretFields` (a DTO's `@Secret()` fields, {@link secretFields}) at the top level,
 * secret-named keys at any depth, secret-shaped values. Text that is not JSON is redacted by
 * shape, or, when the tool has secret fields (which no shape would find), is `[Redacted]`.
 *
 * @example
 * redactArguments('{"user":"ada","memo":"plain words"}', ['memo']) // '{"user":"ada","memo":"[Redacted]"}'
 */
export function redactArguments(text: string, fields: readonly string[] = NONE): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return fields.length > 0 ? REDACTED : redactText(text);
  }
  return JSON.stringify(redactSecrets(parsed, { topLevelSecrets: fields }));
}

/**
 * A shallow copy of plain arguments with the given top-level fields (a DTO's
 * {@link secretFields}) replaced by `[Redacted]`; the value itself when none is present.
 */
export function maskFields(value: unknown, fields: readonly string[]): unknown {
  if (fields.length === 0 || typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const present = fields.filter((field) => Object.prototype.hasOwnProperty.call(value, field));
  if (present.length === 0) return value;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const field of present) out[field] = REDACTED;
  return out;
}

function copy(
  value: unknown,
  extra: ReadonlySet<string> | undefined,
  seen: WeakSet<object>,
  depth: number,
  top?: ReadonlySet<string>,
): unknown {
  if (typeof value === 'string') return redactText(value);
  if (typeof value !== 'object' || value === null) return value;
  if (seen.has(value)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Too deep]';
  if (value instanceof Date) return value;
  if (value instanceof Error) return { name: value.name, message: redactText(value.message) };
  if (ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => copy(item, extra, seen, depth + 1));
    if (value instanceof Map) return copy(Object.fromEntries(value), extra, seen, depth);
    if (value instanceof Set) return copy([...value], extra, seen, depth);
    const marked =
      value.constructor === Object || value.constructor === undefined ? NONE : secretFields(value.constructor);
    const out: Record<string, unknown> = {};
    for (const [name, item] of Object.entries(value)) {
      const secret = isSecretKey(name, extra) || marked.includes(name) || (top?.has(name) ?? false);
      out[name] = secret ? REDACTED : copy(item, extra, seen, depth + 1);
    }
    return out;
  } finally {
    // Only ancestors count as cycles; the same object twice in siblings is fine.
    seen.delete(value);
  }
}
