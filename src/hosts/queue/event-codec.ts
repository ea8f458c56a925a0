import type { TrellisEvent } from '../../../index.js';

/**
 * An event as JSON text for Redis. Errors become `{ name, message, code }`, BigInts
 * strings, and a value that cannot be written (a cycle) drops the event's payload rather
 * than the event: subscribers always learn that something happened.
 */
export function encodeEvent(event: { readonly type: string }): string {
  try {
    return JSON.stringify(event, replace);
  } catch {
    return JSON.stringify({ type: event.type, unserializable: true });
  }
}

/** The event published by {@link encodeEvent}; undefined for text that is not one. */
export function decodeEvent(text: string): TrellisEvent | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string'
      ? (value as TrellisEvent)
      : undefined;
  } catch {
    return undefined;
  }
}

/** `value` as plain JSON data (a deep copy), with the same conversions as {@link encodeEvent}. */
export function toJsonData<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, replace)) as T;
}

function replace(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error)
    return { name: value.name, message: value.message, code: (value as { code?: unknown }).code };
  return value;
}
