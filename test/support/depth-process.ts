/**
 * One process of the durable-steps kill test at depth (issue 25, item 5):
 *   node depth-process.js '<options JSON>'
 * with options `{ runs: [{ store: 'sqlite' | 'postgres', target: <file or schema>, url?, dir, tool, kill }] }`.
 * It runs the depth workload's turn once per entry of `runs`, all side by side, each in an app
 * of its own on a store of its own (its ledgers in its own `dir`). Each run stops at its own
 * kill point — `write:N` right after the N-th store write of that run (a journal step or a
 * checkpoint, at any level) landed, before the turn hears of it; `tool:N` in the middle of the
 * run of the call writing line N (its ledger line written, its result not returned) — and
 * stays stopped there (its store answers nothing more, as a dead process's would not). When
 * every run has reached its point, the process kills itself with SIGKILL: one process start
 * serves every kill point on every store. Without kills it prints the results as JSON.
 */
import 'reflect-metadata';
import { PostgresStore, SqliteStore, type SessionStore } from '../../index.js';
import { depthApp, MESSAGE, onLineWritten, TURN_KEY } from './depth-workload.js';

interface Run {
  readonly store: 'sqlite' | 'postgres';
  readonly target: string;
  readonly url?: string;
  readonly dir: string;
  readonly tool: 'lines.write' | 'lines.pay';
  readonly kill?: string;
}

const { runs } = JSON.parse(process.argv[2]!) as { runs: readonly Run[] };
const NEVER = new Promise<never>(() => undefined);
const killing = runs.filter((run) => run.kill !== undefined).length;

/** A run stops where it reaches its kill point; the last one to get there kills the process. */
let arrived = 0;
function reached(): Promise<never> {
  if (++arrived === killing) process.kill(process.pid, 'SIGKILL');
  return NEVER;
}

function pointOf(run: Run): { kind: string; at: number } {
  const [kind, at] = (run.kill ?? 'none:0').split(':') as [string, string];
  return { kind, at: Number(at) };
}

/** The run's store, stopped (every later call hangs) right after its kill point's write lands. */
function stopping(real: SessionStore, run: Run): SessionStore {
  const { kind, at } = pointOf(run);
  let writes = 0;
  let stopped = false;
  return new Proxy(real, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        if (stopped) return NEVER;
        if (prop !== 'appendSteps' && prop !== 'checkpoint') return method(...args);
        return (method(...args) as Promise<unknown>).then((out) => {
          if (kind !== 'write' || ++writes !== at) return out;
          stopped = true;
          return reached();
        });
      };
    },
  });
}

const toolKills = new Map(runs.map((run) => [run.dir, pointOf(run)]));
onLineWritten((n, dir) => {
  const point = toolKills.get(dir);
  return point?.kind === 'tool' && point.at === n ? reached() : undefined;
});

const results = await Promise.all(
  runs.map(async (run) => {
    const real =
      run.store === 'sqlite'
        ? SqliteStore.open(run.target)
        : await PostgresStore.open({ url: run.url!, schema: run.target, maxConnections: 2 });
    const { app, session } = await depthApp(stopping(real, run), run.dir, run.tool);
    const result = await session.send(MESSAGE, { key: TURN_KEY, waitForLease: 10_000 });
    await app.stop();
    await real.close();
    return result;
  }),
);
process.stdout.write(`${JSON.stringify(results)}\n`);
