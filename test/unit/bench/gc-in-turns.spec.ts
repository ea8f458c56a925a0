import { gcInSpans, gcShare, gcTail, type Span } from '../../../bench/gc-in-turns.js';
import type { GcPause } from '../../../bench/gc-pauses.js';

/**
 * The benchmark charges a GC pause to the timed turns it overlapped (bench/gc-in-turns.ts):
 * only the part of a pause inside a turn counts, a pause between two turns counts for
 * neither, and the ratios "without GC" leave out exactly the touched turns.
 */
const scavenge = (start: number, duration: number): GcPause => ({ start, duration, kind: 'scavenge' });
const markCompact = (start: number, duration: number): GcPause => ({ start, duration, kind: 'mark-compact' });

// Three turns of 1 ms with gaps: [10, 11], [12, 13], [14, 15].
const turns: Span[] = [
  { start: 10, end: 11 },
  { start: 12, end: 13 },
  { start: 14, end: 15 },
];

describe('gcInSpans', () => {
  it('counts a pause inside a turn whole, under its kind', () => {
    expect(gcInSpans(turns, [markCompact(12.2, 0.5)])).toEqual([
      { scavengeMs: 0, markCompactMs: 0 },
      { scavengeMs: 0, markCompactMs: 0.5 },
      { scavengeMs: 0, markCompactMs: 0 },
    ]);
  });

  it('counts only the part of a pause that overlaps a turn, at its start or its end', () => {
    const [first, second] = gcInSpans(turns, [scavenge(9.5, 1), scavenge(12.75, 0.5)]);
    expect(first!.scavengeMs).toBeCloseTo(0.5); // 9.5–10.5: half before the turn
    expect(second!.scavengeMs).toBeCloseTo(0.25); // 12.75–13.25: a quarter ms after it ended
  });

  it('charges a pause between two turns to neither', () => {
    expect(gcInSpans(turns, [scavenge(11.2, 0.6), markCompact(13, 1)])).toEqual(
      turns.map(() => ({ scavengeMs: 0, markCompactMs: 0 })),
    );
  });

  it('adds up two pauses in one turn, by kind', () => {
    const [, , third] = gcInSpans(turns, [scavenge(14.1, 0.2), scavenge(14.5, 0.3), markCompact(14.9, 0.05)]);
    expect(third!.scavengeMs).toBeCloseTo(0.5);
    expect(third!.markCompactMs).toBeCloseTo(0.05);
  });

  it('splits a pause that spans back-to-back turns, and takes pauses in any order', () => {
    const adjacent: Span[] = [
      { start: 0, end: 1 },
      { start: 1, end: 2 },
      { start: 2, end: 3 },
    ];
    // A long pause first in time but listed last, a short one after it in the same turn.
    const gc = gcInSpans(adjacent, [scavenge(1.7, 0.1), markCompact(0.6, 1)]);
    expect(gc[0]!.markCompactMs).toBeCloseTo(0.4);
    expect(gc[1]!.markCompactMs).toBeCloseTo(0.6);
    expect(gc[1]!.scavengeMs).toBeCloseTo(0.1);
    expect(gc[2]).toEqual({ scavengeMs: 0, markCompactMs: 0 });
  });

  it('walks past a pause that ended before the turn to one that reaches into it', () => {
    // By start: A (0–1) is still running at the turn's start, B (0.1–0.2) is over, C (0.3–0.8) reaches in.
    const gc = gcInSpans([{ start: 0.5, end: 1 }], [scavenge(0, 1), scavenge(0.1, 0.1), markCompact(0.3, 0.5)]);
    expect(gc[0]!.scavengeMs).toBeCloseTo(0.5);
    expect(gc[0]!.markCompactMs).toBeCloseTo(0.3);
  });
});

describe('gcTail', () => {
  // Four 1-ms turns reported as 2 µs per unit; the second holds a 0.5-ms scavenge.
  const spans: Span[] = [0, 1, 2, 3].map((i) => ({ start: 10 * i, end: 10 * i + 1 }));
  const samples = [2, 4, 2, 2];

  it('gives the GC share of the timed time and how many turns a pause touched', () => {
    const tail = gcTail(samples, spans, [scavenge(10.25, 0.5), markCompact(5, 1)]);
    expect(tail.timedMs).toBeCloseTo(4);
    expect(tail.scavenge).toEqual({ ms: 0.5, spans: 1 });
    expect(tail.markCompact).toEqual({ ms: 0, spans: 0 });
    expect(tail.touched).toBe(1);
    expect(gcShare(tail)).toBeCloseTo(0.125);
    expect(gcShare(tail, 'scavenge')).toBeCloseTo(0.125);
    expect(gcShare(tail, 'mark-compact')).toBe(0);
  });

  it('summarizes the untouched turns without the touched one, and takes the pause out of its turn', () => {
    const tail = gcTail(samples, spans, [scavenge(10.25, 0.5)]);
    expect(tail.untouched.n).toBe(3);
    expect(tail.untouched.mean).toBe(2);
    expect(tail.gcOut.n).toBe(4);
    // The touched turn lost half its time to the pause: 4 µs per unit becomes 2.
    expect(tail.gcOut.mean).toBeCloseTo(2);
  });

  it('counts a turn touched by both kinds once', () => {
    const tail = gcTail(samples, spans, [scavenge(20.1, 0.1), markCompact(20.5, 0.2)]);
    expect(tail.touched).toBe(1);
    expect(tail.scavenge.spans).toBe(1);
    expect(tail.markCompact.spans).toBe(1);
  });

  it('refuses samples that do not match the spans', () => {
    expect(() => gcTail([1, 2], spans, [])).toThrow(/2 samples for 4 spans/);
  });
});
