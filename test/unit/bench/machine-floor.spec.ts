import { slowPieces } from '../../../bench/machine-floor.js';

/** The floor's slow pieces (bench/machine-floor.ts): which pieces count, how far apart they are. */
describe('slowPieces', () => {
  // Pieces of 10 µs, with slow ones (≥ 1.6× the median) at 2, 6 and 12.
  const samples = Array.from({ length: 16 }, (_, i) => ([2, 6, 12].includes(i) ? 30 + i : 10));

  it('marks the pieces at 1.6× the median or more', () => {
    const slow = slowPieces([...samples, 16, 15.9]);
    expect(slow.strip).toBe('..S...S.....S...S.');
    expect(slow.share).toBeCloseTo(4 / 18);
  });

  it('gives the median gap in pieces and in time, and the median extra time of a slow piece', () => {
    const slow = slowPieces(samples);
    expect(slow.medianGap).toBe(5); // gaps 4 and 6
    // From piece 2 to 6: 32 + 3 × 10 = 62; from 6 to 12: 36 + 5 × 10 = 86.
    expect(slow.medianInterval).toBe(74);
    expect(slow.medianExtra).toBe(26); // 22, 26, 32 over the median 10
  });

  it('has no gap with fewer than two slow pieces', () => {
    const slow = slowPieces([10, 10, 30, 10]);
    expect(slow.medianGap).toBeNaN();
    expect(slow.medianInterval).toBeNaN();
    expect(slow.share).toBe(0.25);
  });

  it('cuts the strip at the length asked', () => {
    expect(slowPieces(samples, 4).strip).toBe('..S.');
  });
});
