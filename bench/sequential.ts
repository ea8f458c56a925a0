import { summarize, type Summary } from './stats.js';
import { assertWork, counters, resetCounters } from './workload.js';

/** Runs `turn` one after another: `warmup` untimed, then `count` timed; µs per round of each turn. */
export async function perRound(label: string, turn: (index: number) => Promise<number>, warmup: number, count: number): Promise<Summary & { samples: number[]; hooksPerTurn: number; cpuUsPerRound: number }> {
  for (let i = 0; i < warmup; i++) await turn(i);
  resetCounters();
  const samples: number[] = [];
  let rounds = 0;
  const cpu = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint();
    const n = await turn(warmup + i);
    const elapsed = Number(process.hrtime.bigint() - started) / 1000;
    samples.push(elapsed / n);
    rounds += n;
    // Every turn, not just the total: 20 tool calls, 60 middleware calls, 21 transforms.
    assertWork(i + 1, `${label}, turn ${i + 1}`);
  }
  const used = process.cpuUsage(cpu);
  return { ...summarize(samples), samples, hooksPerTurn: counters.hooks / count, cpuUsPerRound: (used.user + used.system) / rounds };
}
