import { inspect } from 'node:util';
import { redactSecrets, redactText } from '../redaction/redactor.js';

/** A description longer than this is cut: a thrown object may be a whole HTTP response. */
const MAX_DESCRIPTION = 2_000;

/**
 * What went wrong, as text, for anything thrown: an `Error`'s message, a string, or a
 * best effort for odd values — errors whose `message` or `toString` throws, null-prototype
 * objects (Node's loader hands those over for errors raised in its hooks thread), symbols.
 * What it returns is safe to show a model or write to a log: a thrown plain object is
 * described from a copy without secret-named fields, secret-shaped values (API keys a
 * vendor error echoes, `Bearer …`) are replaced by `[Redacted]`, and the text is cut at
 * 2,000 characters. Never throws.
 */
export function describeError(error: unknown): string {
  // Cut before scrubbing too, so a huge thrown value costs little; the final cut hides any key split at the first.
  const text = rawDescription(error).slice(0, MAX_DESCRIPTION * 2);
  const safe = attempt(() => redactText(text)) ?? text;
  return safe.length > MAX_DESCRIPTION ? `${safe.slice(0, MAX_DESCRIPTION)}… (${safe.length} characters)` : safe;
}

function rawDescription(error: unknown): string {
  const message = attempt(() => {
    if (typeof error === 'string') return error;
    if (typeof error === 'object' && error !== null && 'message' in error) {
      const value = error.message;
      if (typeof value === 'string' && value.trim() !== '') return value;
    }
    return undefined;
  });
  if (message !== undefined) return message;
  if (typeof error === 'object' && error !== null) {
    // util.inspect honours a custom inspector (how Node's loader errors describe themselves).
    const inspected = attempt(() =>
      inspect(isPlain(error) ? redactSecrets(error) : error, { depth: 2, breakLength: Infinity }),
    );
    if (
      inspected !== undefined &&
      inspected.trim() !== '' &&
      !/^\[?Object: null prototype\]? \{\s*\}$/.test(inspected.trim())
    )
      return inspected;
  }
  const text = attempt(() => String(error));
  if (text !== undefined) return text;
  return attempt(() => Object.prototype.toString.call(error)) ?? 'unknown error';
}

/** A literal object (`throw { status, apiKey }`): described from a redacted copy. Objects with their own inspector describe themselves. */
function isPlain(value: object): boolean {
  return Object.getPrototypeOf(value) === Object.prototype && !(inspect.custom in value);
}

/** Runs `read`, or answers `undefined` if it throws. */
export function attempt(read: () => string | undefined): string | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
