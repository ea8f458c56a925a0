import { blockSpread } from '../../../bench/stats.js';

/** Drift between blocks against the spread inside them (bench/stats.ts `blockSpread`). */
describe('blockSpread', () => {
  it('divides every sample by its own block median', () => {
    // Two blocks at different speeds, each with one sample 1.5× its median.
    const samples = [2, 2, 3, 2, 2, 4, 4, 6, 4, 4];
    const spread = blockSpread(samples, [0, 5]);
    expect(spread.blockMedians).toEqual([2, 4]);
    expect(spread.withinBlock.n).toBe(10);
    expect(spread.withinBlock.median).toBe(1);
    expect(spread.withinBlock.mean).toBeCloseTo(1.1);
  });

  it('leaves no trace of a drift between blocks of equal spread', () => {
    const block = [1, 1, 1, 1, 1, 1, 1, 1, 1, 2];
    const fast = blockSpread(block, [0]);
    const drifting = blockSpread([...block, ...block.map((x) => 3 * x)], [0, 10]);
    expect(drifting.withinBlock.p90).toBeCloseTo(fast.withinBlock.p90);
    expect(drifting.withinBlock.mean).toBeCloseTo(fast.withinBlock.mean);
  });

  it('takes blocks of any length, the last to the end', () => {
    expect(blockSpread([5, 1, 1, 1, 9, 9], [0, 1, 4]).blockMedians).toEqual([5, 1, 9]);
  });
});
