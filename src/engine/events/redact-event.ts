import { redactSecrets, redactText } from '../../redaction/redactor.js';
import type { TrellisEvent } from './trellis-event.js';

const done = new WeakSet<object>();

/**
 * The event as listeners may see it: tool arguments and tool-result values without
 * secrets (by key name and by shape), error messages and approval messages scrubbed.
 * Events without such payloads pass as they are; an event redacted once is not redacted
 * again (the session and the app stream share it).
 */
export function redactEvent(event: TrellisEvent): TrellisEvent {
  if (done.has(event)) return event;
  let safe: TrellisEvent;
  switch (event.type) {
    case 'model.delta': {
      // Deltas are pieces of the model's output: only shapes can be recognised in them (see docs/reliability.md).
      const delta = event.delta;
      if (delta.type === 'text') safe = { ...event, delta: { ...delta, text: redactText(delta.text) } };
      else if (delta.type === 'tool_call' && delta.argumentsDelta !== undefined)
        safe = { ...event, delta: { ...delta, argumentsDelta: redactText(delta.argumentsDelta) } };
      else return event;
      break;
    }
    case 'tool.started':
      safe = { ...event, args: redactSecrets(event.args) };
      break;
    case 'output.partial':
      safe = { ...event, partial: redactSecrets(event.partial) as Readonly<Record<string, unknown>> };
      break;
    case 'tool.finished':
      safe = event.error ? { ...event, error: { ...event.error, message: redactText(event.error.message) } } : event;
      break;
    case 'tool.suspended':
    case 'error':
    case 'tool.output_invalid':
      safe = { ...event, message: redactText(event.message) };
      break;
    default:
      return event;
  }
  done.add(safe);
  return safe;
}
