import type { GcKind, GcPause } from './gc-pauses.js';
import { summarize, type Summary } from './stats.js';

/** A timed interval (a turn, a round), in milliseconds on the `performance.now()` clock. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

/** How much of one span GC pauses took, by kind (ms): only the part of a pause inside the span counts. */
export interface SpanGc {
  readonly scavengeMs: number;
  readonly markCompactMs: number;
}

/**
 * The GC pause time inside each span. Spans are in time order and do not overlap (turns
 * run one after another); pauses may come in any order. A pause that straddles a span's
 * start or end counts only for its part inside; one between two spans counts for neither.
 */
export function gcInSpans(spans: readonly Span[], pauses: readonly GcPause[]): SpanGc[] {
  const byStart = [...pauses].sort((a, b) => a.start - b.start);
  let first = 0;
  return spans.map((span) => {
    // A pause that ended before this span cannot touch a later one.
    while (first < byStart.length && byStart[first]!.start + byStart[first]!.duration <= span.start) first++;
    let scavengeMs = 0;
    let markCompactMs = 0;
    for (let i = first; i < byStart.length && byStart[i]!.start < span.end; i++) {
      const pause = byStart[i]!;
      const inside = Math.min(span.end, pause.start + pause.duration) - Math.max(span.start, pause.start);
      if (inside <= 0) continue;
      if (pause.kind === 'scavenge') scavengeMs += inside;
      else markCompactMs += inside;
    }
    return { scavengeMs, markCompactMs };
  });
}

/** What GC did to one series of timed spans, and what its samples look like without it. */
export interface GcTail {
  /** Timed time of the series (ms): the sum of its spans. */
  readonly timedMs: number;
  /** GC pause time inside the spans (ms) and how many spans a pause of that kind touched. */
  readonly scavenge: { readonly ms: number; readonly spans: number };
  readonly markCompact: { readonly ms: number; readonly spans: number };
  /** Spans a pause of either kind touched. */
  readonly touched: number;
  /** The samples of the spans no pause touched. */
  readonly untouched: Summary;
  /** Every sample with its span's pause time taken out (in proportion: a sample is its span's time per unit). */
  readonly gcOut: Summary;
}

/** Share of a series' timed time spent in GC pauses of `kind` (or of both). */
export function gcShare(tail: GcTail, kind?: GcKind): number {
  const ms =
    kind === 'scavenge'
      ? tail.scavenge.ms
      : kind === 'mark-compact'
        ? tail.markCompact.ms
        : tail.scavenge.ms + tail.markCompact.ms;
  return tail.timedMs > 0 ? ms / tail.timedMs : 0;
}

/**
 * Matches the pauses to the spans of one series. `samples[i]` is what the benchmark reports
 * for `spans[i]` (µs per round of a turn, µs of a round): any unit proportional to the span.
 */
export function gcTail(samples: readonly number[], spans: readonly Span[], pauses: readonly GcPause[]): GcTail {
  if (samples.length !== spans.length) throw new Error(`gcTail: ${samples.length} samples for ${spans.length} spans`);
  const gc = gcInSpans(spans, pauses);
  let timedMs = 0;
  const scavenge = { ms: 0, spans: 0 };
  const markCompact = { ms: 0, spans: 0 };
  let touched = 0;
  const untouched: number[] = [];
  const gcOut: number[] = [];
  spans.forEach((span, i) => {
    const length = span.end - span.start;
    const { scavengeMs, markCompactMs } = gc[i]!;
    timedMs += length;
    scavenge.ms += scavengeMs;
    markCompact.ms += markCompactMs;
    if (scavengeMs > 0) scavenge.spans++;
    if (markCompactMs > 0) markCompact.spans++;
    const paused = scavengeMs + markCompactMs;
    if (paused > 0) touched++;
    else untouched.push(samples[i]!);
    gcOut.push(length > 0 ? samples[i]! * (1 - paused / length) : samples[i]!);
  });
  return { timedMs, scavenge, markCompact, touched, untouched: summarize(untouched), gcOut: summarize(gcOut) };
}
