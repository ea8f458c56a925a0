import type { TrellisEvent } from '../../../../index.js';

/** The longest text (in characters) one recorded field keeps; the store's per-turn budget is the other bound. */
export const MAX_RECORDED_FIELD = 8 * 1024;

/**
 * An event fit for storage: plain JSON, with tool arguments and messages cut to
 * {@link MAX_RECORDED_FIELD} characters, so one huge argument cannot use a turn's whole
 * budget, and a value JSON cannot hold (a cycle, a bigint) cannot fail the write.
 */
export function shrinkEvent(event: TrellisEvent): TrellisEvent {
  switch (event.type) {
    case 'tool.started':
      return { ...event, args: shrinkValue(event.args) };
    case 'output.partial':
      return { ...event, partial: shrinkValue(event.partial) as Readonly<Record<string, unknown>> };
    case 'error':
    case 'tool.suspended':
    case 'tool.output_invalid':
      return { ...event, message: cut(event.message) };
    case 'tool.finished':
    case 'tool.retry':
      return event.error ? { ...event, error: { ...event.error, message: cut(event.error.message) } } : event;
    default:
      return event;
  }
}

function shrinkValue(value: unknown): unknown {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    return { unrecordable: cut(String(value)) };
  }
  if (json === undefined || json.length <= MAX_RECORDED_FIELD) return value;
  return { truncated: true, preview: json.slice(0, MAX_RECORDED_FIELD), length: json.length };
}

function cut(text: string): string {
  return text.length <= MAX_RECORDED_FIELD
    ? text
    : `${text.slice(0, MAX_RECORDED_FIELD)}… (${text.length - MAX_RECORDED_FIELD} more characters)`;
}
