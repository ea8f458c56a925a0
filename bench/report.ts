import type { AllocationFigures } from './allocation.js';
import type { CheckpointFigures, LongSessionFigures } from './checkpoint.js';
import type { ConcurrentFigures } from './concurrent.js';
import { gcShare, type GcTail } from './gc-in-turns.js';
import type { InstallFigures } from './install.js';
import { FLOOR_BLOCK, SLOW_PIECE, type FloorFigures } from './machine-floor.js';
import type { RoundFigures } from './round-times.js';
import type { SeriesFigures } from './series.js';
import type { BlockSpread, Summary } from './stats.js';

export interface BenchReport {
  readonly startedAt: string;
  readonly durationS: number;
  readonly source: { readonly commit: string; readonly changedFiles: number };
  readonly machine: {
    readonly node: string;
    readonly cpus: number;
    readonly cpu: string;
    readonly loadavg: readonly number[];
  };
  readonly workload: {
    readonly roundsPerTurn: number;
    readonly toolCallsPerTurn: number;
    readonly middlewarePerTurn: number;
    readonly transformsPerTurn: number;
  };
  readonly sequential: { readonly hand: SeriesFigures; readonly trellis: SeriesFigures };
  /** A plain CPU loop timed in pieces as long as each loop's median turn: the VM's own tail. */
  readonly floor: { readonly trellisTurn: FloorFigures; readonly handTurn: FloorFigures };
  /** Rounds timed one by one, in a short series of their own. */
  readonly rounds: { readonly hand: RoundFigures; readonly trellis: RoundFigures };
  readonly allocation: { readonly hand: AllocationFigures; readonly trellis: AllocationFigures };
  readonly scaling: readonly SeriesFigures[];
  readonly concurrent: ConcurrentFigures;
  readonly install: InstallFigures;
  readonly install1000: InstallFigures;
  readonly checkpoint: CheckpointFigures;
  readonly longSession: LongSessionFigures;
}

/** Figures derived from the raw ones: ratios against the baselines measured in the same run. */
export function derived(r: BenchReport) {
  const { hand, trellis } = r.sequential;
  const turnUs = trellis.median * r.workload.roundsPerTurn;
  return {
    frameworkUsPerRound: trellis.median - hand.median,
    ratioToHand: trellis.median / hand.median,
    p90RatioToHand: trellis.p90 / hand.p90,
    cpuRatioToHand: trellis.cpuUsPerRound / hand.cpuUsPerRound,
    p90ToMedian: trellis.p90 / trellis.median,
    meanToMedian: trellis.mean / trellis.median,
    allocationRatioToHand: r.allocation.trellis.bytesPerRound / r.allocation.hand.bytesPerRound,
    longSessionGrowth: r.longSession.lastTenthUs / r.longSession.firstTenthUs,
    scaling: r.scaling.map((s) => {
      const hookRunsPerRound = s.hooksPerTurn / r.workload.roundsPerTurn;
      const extra = s.median - trellis.median;
      return {
        label: s.label,
        ratioToTrellis: s.median / trellis.median,
        ratioToHand: s.median / hand.median,
        hookRunsPerRound,
        usPerHookRun: hookRunsPerRound > 0 ? extra / hookRunsPerRound : undefined,
        extraUsPerRound: extra,
      };
    }),
    concurrentUsPerRound: (r.concurrent.wallMs * 1000) / (r.concurrent.turns * r.workload.roundsPerTurn),
    concurrentRatioToHand: r.concurrent.wallMs / r.concurrent.handWallMs,
    heapRatioToHand: r.concurrent.held.liveHeapPerTurnKb / r.concurrent.handHeld.liveHeapPerTurnKb,
    concurrentRatioToSequential: (r.concurrent.wallMs * 1000) / (r.concurrent.turns * turnUs),
    checkpointRatioToTurn: r.checkpoint.storeCostUsPerTurn / r.checkpoint.turnUsWithout,
    installRatioToTurn: (r.install.perPluginMs * 1000) / turnUs,
  };
}

/** One of issue 17's targets as this run measured it. */
export interface TargetCheck {
  readonly target: string;
  readonly value: string;
  /** Undefined where the issue asks only for a figure. */
  readonly met: boolean | undefined;
}

/** The store's own checkpoint may grow this much from a 200-turn session's first tenth to its last and still count as flat. */
export const FLAT_GROWTH = 1.25;

/**
 * Issue 17's targets against this run's figures. The tail targets are given twice: per turn
 * (figure 1, the figure the issue was measured with) and per round (table 1c).
 */
export function issue17Targets(r: BenchReport): TargetCheck[] {
  const d = derived(r);
  const { trellis } = r.sequential;
  const rt = r.rounds.trellis;
  const rh = r.rounds.hand;
  const ten = d.scaling.find((s) => /10 plugins, hook on every point/.test(s.label))?.usPerHookRun;
  const fifty = d.scaling.find((s) => /50 plugins, hook on every point/.test(s.label))?.usPerHookRun;
  const storeGrowth = r.longSession.storeOnlyLastTenthUs / r.longSession.storeOnlyFirstTenthUs;
  return [
    {
      target: 'framework time per round ≤ 1.5 µs',
      value: `${f(d.frameworkUsPerRound, 2)} µs (rounds one by one: ${f(rt.median - rh.median, 2)})`,
      met: d.frameworkUsPerRound <= 1.5,
    },
    {
      target: 'median round ≤ 2.2× the hand loop',
      value: `${f(d.ratioToHand, 2)}× (rounds one by one: ${f(rt.median / rh.median, 2)}×)`,
      met: d.ratioToHand <= 2.2,
    },
    {
      target: 'p90 ≤ 1.5× median, per turn (figure 1)',
      value: `${f(d.p90ToMedian, 2)} (the machine floor for work as long: ${f(r.floor.trellisTurn.p90 / r.floor.trellisTurn.median, 2)})`,
      met: d.p90ToMedian <= 1.5,
    },
    {
      target: 'p90 ≤ 1.5× median, per round (table 1c)',
      value: f(rt.p90 / rt.median, 2),
      met: rt.p90 / rt.median <= 1.5,
    },
    {
      target: 'mean ≤ 1.3× median, per turn (figure 1)',
      value: `${f(d.meanToMedian, 2)} (GC time taken out: ${f(trellis.gc.gcOut.mean / trellis.gc.gcOut.median, 2)})`,
      met: d.meanToMedian <= 1.3,
    },
    {
      target: 'mean ≤ 1.3× median, per round (table 1c)',
      value: `${f(rt.mean / rt.median, 2)} (rounds no GC touched: ${f(rt.gc.untouched.mean / rt.gc.untouched.median, 2)})`,
      met: rt.mean / rt.median <= 1.3,
    },
    {
      target: "bytes allocated per round, beside the hand loop's",
      value: `${f(r.allocation.trellis.bytesPerRound, 0)} B (${f(d.allocationRatioToHand, 2)}×)`,
      met: undefined,
    },
    {
      target: '1,000 concurrent turns ≤ 2× the hand loop',
      value: `${f(d.concurrentRatioToHand, 2)}×`,
      met: d.concurrentRatioToHand <= 2,
    },
    {
      target: 'live heap per in-flight turn ≤ 10 KB',
      value: `${f(r.concurrent.held.liveHeapPerTurnKb, 1)} KB`,
      met: r.concurrent.held.liveHeapPerTurnKb <= 10,
    },
    {
      target: 'SqliteStore checkpoint ≤ 100 µs (median)',
      value: `${f(r.checkpoint.checkpointUs, 0)} µs`,
      met: r.checkpoint.checkpointUs <= 100,
    },
    {
      target: `checkpoint cost flat over a ${r.longSession.turns}-turn session (store's last ÷ first tenth ≤ ${FLAT_GROWTH})`,
      value: f(storeGrowth, 2),
      met: storeGrowth <= FLAT_GROWTH,
    },
    {
      target: 'cost linear in hooks that run (µs per hook run, 50 plugins ≤ 1.5× 10 plugins)',
      value: `${f(ten, 2)} / ${f(fifty, 2)}`,
      met: ten === undefined || fifty === undefined ? undefined : fifty <= 1.5 * ten,
    },
    {
      target: `install of ${r.install1000.plugins} plugins measured`,
      value: `${f(r.install1000.totalMs, 0)} ms`,
      met: undefined,
    },
  ];
}

const f = (x: number | undefined, d = 1) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(d));

function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const ratios = (s: Summary) => [f(s.p90 / s.median, 2), f(s.mean / s.median, 2)];
const pct = (share: number) => `${(share * 100).toFixed(1)} %`;

/** The GC columns of tables 1b and 1c: share of the timed time, spans touched, the ratios without GC. */
function gcCells(g: GcTail, n: number): string[] {
  return [
    `${pct(gcShare(g))} (${pct(gcShare(g, 'scavenge'))} + ${pct(gcShare(g, 'mark-compact'))})`,
    `${g.touched} (${pct(g.touched / n)})`,
    ...ratios(g.untouched),
    f(g.gcOut.mean / g.gcOut.median, 2),
  ];
}

function printTail(r: BenchReport): void {
  const { hand, trellis } = r.sequential;
  const spreadCells = (b: BlockSpread) => [
    ...ratios(b.withinBlock),
    `${f(Math.min(...b.blockMedians), 2)}–${f(Math.max(...b.blockMedians), 2)}`,
  ];
  const floorRow = (label: string, fl: FloorFigures) => [
    `${label} (${f(fl.median, 0)} µs pieces)`,
    String(fl.n),
    ...ratios(fl),
    '-',
    `${fl.gcPauses} pauses`,
    '-',
    '-',
    '-',
    '-',
    ...spreadCells(fl.spread),
  ];
  console.log(
    '1b. Where the tail comes from: the turns of tables 1 and 2 with the GC pauses that fell in them, their blocks, and the machine floor',
  );
  console.log(
    table(
      [
        'series',
        'turns',
        'p90 / median',
        'mean / median',
        'run queue %',
        'GC % of timed (scav. + m-c)',
        'turns GC touched',
        'no-GC turns: p90 / median',
        'mean / median',
        'GC out: mean / median',
        'in block: p90 / median',
        'mean / median',
        'block medians',
      ],
      [
        ...[hand, trellis, ...r.scaling].map((s) => [
          s.label,
          String(s.n),
          ...ratios(s),
          Number.isFinite(s.runQueueShare) ? pct(s.runQueueShare) : '-',
          ...gcCells(s.gc, s.n),
          ...spreadCells(s.spread),
        ]),
        floorRow('machine floor: CPU loop as long as a trellis turn', r.floor.trellisTurn),
        floorRow('machine floor: CPU loop as long as a hand-loop turn', r.floor.handTurn),
      ],
    ),
  );
  console.log(
    `columns: run queue % = time the main thread waited for a CPU while other processes ran (Linux schedstat) ÷ the timed time; GC % = main-thread GC pause time inside the timed turns ÷ their time (scavenges + mark-compacts); touched = turns a pause overlapped; no-GC turns = the ratios over the turns no pause touched; GC out = mean / median with each turn's pause time taken out; in block = every sample divided by the median of its block (${hand.spread.blockMedians.length} alternating blocks; the floor: blocks of ${FLOOR_BLOCK} pieces), so a change of the machine's speed between blocks drops out; floor = a synchronous loop that allocates nothing, timed in ${r.floor.trellisTurn.n} pieces as long as the median turn: what the VM alone does to work that long`,
  );
  for (const [label, fl] of [
    ['trellis turn', r.floor.trellisTurn],
    ['hand-loop turn', r.floor.handTurn],
  ] as const) {
    console.log(
      `floor, ${label}: ${pct(fl.slow.share)} of the pieces slow (≥ ${SLOW_PIECE}× median), one every ${f(fl.slow.medianInterval / 1000, 2)} ms (${f(fl.slow.medianGap, 0)} pieces), +${f(fl.slow.medianExtra, 0)} µs each; first pieces: ${fl.slow.strip}`,
    );
  }
  const rh = r.rounds.hand;
  const rt = r.rounds.trellis;
  console.log(
    `\n1c. Rounds timed one by one (a series of their own: µs from one model reply to the next, 20 per turn, one clock read each)`,
  );
  console.log(
    table(
      [
        'series',
        'rounds',
        'median',
        'p90',
        'mean',
        'p90 / median',
        'mean / median',
        'GC % of timed (scav. + m-c)',
        'rounds GC touched',
        'no-GC rounds: p90 / median',
        'mean / median',
        'GC out: mean / median',
      ],
      [rh, rt].map((s) => [
        s.label,
        String(s.n),
        f(s.median, 2),
        f(s.p90, 2),
        f(s.mean, 2),
        ...ratios(s),
        ...gcCells(s.gc, s.n),
      ]),
    ),
  );
  console.log(
    `median round: trellis ${f(rt.median, 2)} µs, hand loop ${f(rh.median, 2)} µs (${f(rt.median / rh.median, 2)}×; framework time ${f(rt.median - rh.median, 2)} µs)\n`,
  );
}

export function printReport(r: BenchReport): void {
  const d = derived(r);
  const { hand, trellis } = r.sequential;
  console.log(
    `Trellis bench ${r.startedAt}  node ${r.machine.node}, ${r.machine.cpus} × ${r.machine.cpu}, load ${r.machine.loadavg.map((l) => l.toFixed(1)).join(' ')}, ${r.durationS.toFixed(0)} s, source ${r.source.commit}${r.source.changedFiles > 0 ? ` + ${r.source.changedFiles} changed files` : ''}`,
  );
  console.log(
    `Workload per turn: ${r.workload.roundsPerTurn} rounds, ${r.workload.toolCallsPerTurn} tool calls, ${r.workload.middlewarePerTurn} middleware calls, ${r.workload.transformsPerTurn} transforms (asserted for every series)\n`,
  );
  console.log('1. Sequential, µs per round');
  console.log(
    table(
      [
        'series',
        'turns',
        'median',
        'p90',
        'mean',
        'cpu/round',
        'p90 / median',
        'mean / median',
        '× hand (median)',
        '× hand (p90)',
        'bytes/round',
      ],
      [
        [
          hand.label,
          String(hand.n),
          f(hand.median, 2),
          f(hand.p90, 2),
          f(hand.mean, 2),
          f(hand.cpuUsPerRound, 2),
          f(hand.p90 / hand.median, 2),
          f(hand.mean / hand.median, 2),
          '1.0',
          '1.0',
          f(r.allocation.hand.bytesPerRound, 0),
        ],
        [
          trellis.label,
          String(trellis.n),
          f(trellis.median, 2),
          f(trellis.p90, 2),
          f(trellis.mean, 2),
          f(trellis.cpuUsPerRound, 2),
          f(d.p90ToMedian, 2),
          f(d.meanToMedian, 2),
          f(d.ratioToHand, 2),
          f(d.p90RatioToHand),
          f(r.allocation.trellis.bytesPerRound, 0),
        ],
      ],
    ),
  );
  console.log(
    `framework time per round (trellis − hand, medians): ${f(d.frameworkUsPerRound, 2)} µs   [targets (issue 17): ≤ 1.5 µs, median ≤ 2.2× hand, p90 ≤ 1.5× median, mean ≤ 1.3× median]`,
  );
  console.log(
    `bytes allocated per round: trellis ${f(r.allocation.trellis.bytesPerRound, 0)}, hand loop ${f(r.allocation.hand.bytesPerRound, 0)} (${f(d.allocationRatioToHand, 2)}×; medians of ${r.allocation.trellis.counted} / ${r.allocation.hand.counted} turns without a GC)\n`,
  );
  printTail(r);
  console.log('2. Scaling with extra plugins, µs per round');
  console.log(
    table(
      ['series', 'median', 'p90', '× trellis', '× hand', 'hook runs/round', 'µs/hook run'],
      r.scaling.map((s, i) => [
        s.label,
        f(s.median, 1),
        f(s.p90, 1),
        f(d.scaling[i]!.ratioToTrellis, 2),
        f(d.scaling[i]!.ratioToHand),
        f(d.scaling[i]!.hookRunsPerRound, 1),
        f(d.scaling[i]!.usPerHookRun, 2),
      ]),
    ),
  );
  const c = r.concurrent;
  console.log(
    `\n3. ${c.turns} concurrent turns started at once (own process; wall = median of ${c.bursts.length} bursts)`,
  );
  console.log(
    table(
      ['figure', 'trellis', 'hand loop', '× hand', 'target'],
      [
        ['wall time (ms)', f(c.wallMs, 0), f(c.handWallMs, 0), f(d.concurrentRatioToHand, 2), '≤ 2× hand'],
        [
          '  bursts (ms)',
          c.bursts.map((b) => b.toFixed(0)).join(' '),
          c.handBursts.map((b) => b.toFixed(0)).join(' '),
          '',
          '',
        ],
        [
          'µs per round (wall / rounds)',
          f(d.concurrentUsPerRound, 1),
          f((c.handWallMs * 1000) / (c.turns * r.workload.roundsPerTurn), 1),
          '',
          '',
        ],
        ['× sequential turn time', f(d.concurrentRatioToSequential, 2), '', '', ''],
        [
          'live heap per in-flight turn (KB)',
          f(c.held.liveHeapPerTurnKb, 1),
          f(c.handHeld.liveHeapPerTurnKb, 1),
          f(d.heapRatioToHand),
          '≤ 10',
        ],
        ['peak RSS of the process (MB)', f(c.peakRssMb, 0), '', '', ''],
        ['RSS before the bursts (MB)', f(c.rssBeforeMb, 0), '', '', ''],
      ],
    ),
  );
  const k = r.checkpoint;
  console.log('\n4. Install and checkpoint');
  console.log(
    table(
      ['figure', 'value'],
      [
        [`install ${r.install.plugins} plugins (ms)`, f(r.install.totalMs, 1)],
        ['  per plugin, mean / median (ms)', `${f(r.install.perPluginMs, 2)} / ${f(r.install.medianMs, 2)}`],
        ['  first / last tenth, mean (ms)', `${f(r.install.firstTenthMs, 2)} / ${f(r.install.lastTenthMs, 2)}`],
        ['turn without store (µs, median)', f(k.turnUsWithout, 0)],
        ['turn with SqliteStore (µs, median)', f(k.turnUsWith, 0)],
        ['store cost per turn (µs)', f(k.storeCostUsPerTurn, 0)],
        ['  × turn without store', f(d.checkpointRatioToTurn, 2)],
        [
          '  inside store.checkpoint (µs, median / p90; target ≤ 100)',
          `${f(k.checkpointUs, 0)} / ${f(k.checkpointP90Us, 0)}`,
        ],
        [
          "  straight to the store: a new file's first 150 / checkpoints 200–300 (µs, medians)",
          `${f(k.newFileCheckpointUs, 0)} / ${f(k.primedStoreOnlyUs, 0)}`,
        ],
        ['  inside store.load (µs, median)', f(k.loadUs, 0)],
        [`install ${r.install1000.plugins} plugins (ms, one run)`, f(r.install1000.totalMs, 0)],
        ['  first / last tenth, mean (ms)', `${f(r.install1000.firstTenthMs, 2)} / ${f(r.install1000.lastTenthMs, 2)}`],
        [
          `one session of ${r.longSession.turns} turns (${f(r.longSession.messagesPerTurn, 0)} messages appended per turn)`,
          '',
        ],
        [
          '  store.checkpoint, first / last tenth (µs, medians)',
          `${f(r.longSession.firstTenthUs, 0)} / ${f(r.longSession.lastTenthUs, 0)}`,
        ],
        [
          '  last ÷ first (transcript at the last tenth)',
          `${f(d.longSessionGrowth, 2)} (${r.longSession.transcriptAtLastTenth} messages)`,
        ],
        [
          '  the same checkpoints written straight to the store, first / last tenth (µs)',
          `${f(r.longSession.storeOnlyFirstTenthUs, 0)} / ${f(r.longSession.storeOnlyLastTenthUs, 0)}`,
        ],
      ],
    ),
  );
  console.log('\n5. Issue 17\'s targets in this run (docs/performance.md, "Results")');
  console.log(
    table(
      ['target', 'this run', 'met'],
      issue17Targets(r).map((t) => [t.target, t.value, t.met === undefined ? '-' : t.met ? 'yes' : 'no']),
    ),
  );
}
