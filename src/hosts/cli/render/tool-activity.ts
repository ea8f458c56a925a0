import type { TrellisEvent } from '../../../../index.js';
import { escapeControl } from './terminal-text.js';

/** A tool event as one short line (`→ db.search {...}`, `← db.search ok`), or `undefined` for other events. */
export function toolActivityLine(event: TrellisEvent): string | undefined {
  switch (event.type) {
    case 'tool.started':
      return `  → ${event.tool} ${clip(JSON.stringify(event.args) ?? '')}`;
    case 'tool.finished':
      return event.ok
        ? `  ← ${event.tool} ok (${Math.round(event.durationMs)} ms)`
        : `  ← ${event.tool} failed: ${event.error?.code}: ${clip(event.error?.message ?? '')}`;
    case 'tool.suspended':
      return `  ⏸ ${escapeControl(event.tool)} (${escapeControl(event.callId)}) waits for approval (full request below)`;
    case 'tool.retry':
      return `  ↻ ${event.tool} failed (${event.error.code}: ${clip(event.error.message, 80)}); attempt ${event.attempt} in ${event.delayMs} ms`;
    default:
      return undefined;
  }
}

/**
 * Folds whitespace, escapes control characters and cuts `text` to `max` characters: for
 * activity lines only. What a person approves is never clipped (see `approvalLines`).
 */
export function clip(text: string, max = 120): string {
  const flat = escapeControl(text.replace(/\s+/g, ' ').trim());
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
