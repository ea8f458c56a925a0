import { issue17Targets, type BenchReport } from '../../../bench/report.js';

/** The targets block `npm run bench` prints last (bench/report.ts `issue17Targets`). */
describe('issue17Targets', () => {
  const series = (median: number, p90: number, mean: number, extra: Record<string, unknown> = {}) => ({
    label: 'x',
    n: 600,
    median,
    p90,
    mean,
    min: median,
    cpuUsPerRound: median,
    hooksPerTurn: 0,
    ...extra,
  });
  const gc = (gcOutMean: number, untouchedMean: number) => ({
    gcOut: { median: 1, mean: gcOutMean },
    untouched: { median: 1, mean: untouchedMean },
  });

  /** A run that meets every target but the heap; `change` overrides parts of it. */
  function report(change: (r: Record<string, any>) => void = () => undefined): BenchReport {
    const r: Record<string, any> = {
      workload: { roundsPerTurn: 21 },
      sequential: { hand: series(1.2, 1.3, 1.4), trellis: series(2.6, 3.5, 3.2, { gc: gc(1.25, 1.2) }) },
      rounds: { hand: series(1.25, 1.5, 1.8), trellis: { ...series(2.4, 2.8, 3.0), gc: gc(1.1, 1.1) } },
      floor: { trellisTurn: series(55, 70, 60) },
      allocation: { hand: { bytesPerRound: 4000 }, trellis: { bytesPerRound: 5800 } },
      scaling: [
        { label: 'trellis + 1 plugin, hook on every point', median: 6, hooksPerTurn: 193 },
        { label: 'trellis + 10 plugins, hook on every point', median: 12.6, hooksPerTurn: 1930 },
        { label: 'trellis + 50 plugins, hook on every point', median: 48.6, hooksPerTurn: 9650 },
      ],
      concurrent: {
        turns: 1000,
        wallMs: 180,
        handWallMs: 100,
        held: { liveHeapPerTurnKb: 12.2 },
        handHeld: { liveHeapPerTurnKb: 8.7 },
      },
      checkpoint: { checkpointUs: 80, storeCostUsPerTurn: 150, turnUsWithout: 57 },
      install: { perPluginMs: 0.3 },
      install1000: { plugins: 1000, totalMs: 600 },
      longSession: {
        turns: 200,
        firstTenthUs: 90,
        lastTenthUs: 120,
        storeOnlyFirstTenthUs: 85,
        storeOnlyLastTenthUs: 62,
      },
    };
    change(r);
    return r as unknown as BenchReport;
  }
  const met = (r: BenchReport) =>
    Object.fromEntries(issue17Targets(r).map((t) => [t.target.replace(/ \(.*$/, ''), t.met]));

  it('judges each target from the run’s own figures', () => {
    const verdict = met(report());
    expect(verdict['framework time per round ≤ 1.5 µs']).toBe(true); // 2.6 − 1.2 = 1.4
    expect(verdict['median round ≤ 2.2× the hand loop']).toBe(true); // 2.17×
    expect(verdict['p90 ≤ 1.5× median, per turn']).toBe(true);
    expect(verdict['mean ≤ 1.3× median, per turn']).toBe(true);
    expect(verdict['1,000 concurrent turns ≤ 2× the hand loop']).toBe(true);
    expect(verdict['live heap per in-flight turn ≤ 10 KB']).toBe(false);
    expect(verdict['SqliteStore checkpoint ≤ 100 µs']).toBe(true);
    expect(verdict['checkpoint cost flat over a 200-turn session']).toBe(true);
    expect(verdict['cost linear in hooks that run']).toBe(true); // 0.11 and 0.10 µs per hook run
    expect(verdict['install of 1000 plugins measured']).toBeUndefined();
    expect(verdict["bytes allocated per round, beside the hand loop's"]).toBeUndefined();
  });

  it('fails a target just past its line', () => {
    const verdict = met(
      report((r) => {
        r.sequential.trellis.median = 2.75; // 1.55 µs of framework time, 2.29×
        r.sequential.trellis.p90 = 4.2; // 1.53× the median
        r.rounds.trellis.mean = 3.2; // 1.33× the median
        r.concurrent.wallMs = 201;
        r.checkpoint.checkpointUs = 101;
        r.longSession.storeOnlyLastTenthUs = 110; // 1.29× the first tenth
        r.scaling[2].median = 2.75 + 0.2 * (9650 / 21); // 0.2 µs per hook run with 50 plugins
      }),
    );
    expect(verdict['framework time per round ≤ 1.5 µs']).toBe(false);
    expect(verdict['median round ≤ 2.2× the hand loop']).toBe(false);
    expect(verdict['p90 ≤ 1.5× median, per turn']).toBe(false);
    expect(verdict['mean ≤ 1.3× median, per round']).toBe(false);
    expect(verdict['1,000 concurrent turns ≤ 2× the hand loop']).toBe(false);
    expect(verdict['SqliteStore checkpoint ≤ 100 µs']).toBe(false);
    expect(verdict['checkpoint cost flat over a 200-turn session']).toBe(false);
    expect(verdict['cost linear in hooks that run']).toBe(false);
  });
});
