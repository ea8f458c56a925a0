import { inspect } from 'node:util';

/**
 * What went wrong, as text, for anything thrown: an `Error`'s message, a string, or a
 * best effort for odd values — errors whose `message` or `toString` throws, null-prototype
 * objects (Node's loader hands those over for errors raised in its hooks thread), symbols.
 * Never throws.
 */
export function describeError(error: unknown): string {
  const message = attempt(() => {
    if (typeof error === 'string') return error;
    if (typeof error === 'object' && error !== null && 'message' in error) {
      const value = (error as { message: unknown }).message;
      if (typeof value === 'string' && value.trim() !== '') return value;
    }
    return undefined;
  });
  if (message !== undefined) return message;
  if (typeof error === 'object' && error !== null) {
    // util.inspect honours a custom inspector (how Node's loader errors describe themselves).
    const inspected = attempt(() => inspect(error, { depth: 2, breakLength: Infinity }));
    if (inspected !== undefined && inspected.trim() !== '' && !/^\[?Object: null prototype\]? \{\s*\}$/.test(inspected.trim())) return inspected;
  }
  const text = attempt(() => String(error));
  if (text !== undefined) return text;
  return attempt(() => Object.prototype.toString.call(error)) ?? 'unknown error';
}

export function attempt(read: () => string | undefined): string | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
