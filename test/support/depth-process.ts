/**
 * One process of the durable-steps kill test at depth (issue 25, item 5):
 *   node depth-process.js '<options JSON>'
 * with options `{ runs: [{ store: 'sqlite' | 'postgres', target: <file or schema>, url?, dir }], tool, kill }`.
 * It runs the depth workload's turn once per entry of `runs`, side by side (one app per store,
 * each with its ledgers in its own `dir`), and kills itself with SIGKILL once every run has
 * reached `kill`: `write:N` right after the N-th store write of that run (a journal step or a
 * checkpoint, at any level) landed, before the turn hears of it; `tool:N` in the middle of the
 * run of the call writing line N (its ledger line written, its result not returned). A run
 * that reaches the point first stops there (its store answers nothing more, as a dead
 * process's would) until the others reach it. Without a kill it prints the results as JSON.
 */
import 'reflect-metadata';
import { PostgresStore, SqliteStore, type SessionStore } from '../../index.js';
import { depthApp, MESSAGE, onLineWritten, TURN_KEY } from './depth-workload.js';

interface Run {
  readonly store: 'sqlite' | 'postgres';
  readonly target: string;
  readonly url?: string;
  readonly dir: string;
}

interface Options {
  readonly runs: readonly Run[];
  readonly tool: 'lines.write' | 'lines.pay';
  readonly kill: string;
}

const options = JSON.parse(process.argv[2]!) as Options;
const [kind, at] = options.kill.split(':') as [string, string | undefined];
const killAt = Number(at);
const NEVER = new Promise<never>(() => undefined);

/** Every run stops where it reaches the kill point; the last one to get there kills the process. */
let arrived = 0;
function reached(): Promise<never> {
  if (++arrived === options.runs.length) process.kill(process.pid, 'SIGKILL');
  return NEVER;
}

/** The store, stopped (every later call hangs) right after its `killAt`-th write lands. */
function killing(real: SessionStore): SessionStore {
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
          if (kind !== 'write' || ++writes !== killAt) return out;
          stopped = true;
          return reached();
        });
      };
    },
  });
}

// A run whose tool reached the point hangs there; its store stays usable for the other run's sake only.
onLineWritten((n) => (kind === 'tool' && n === killAt ? reached() : undefined));

const opened = await Promise.all(
  options.runs.map(async (run) => ({
    run,
    real: run.store === 'sqlite' ? SqliteStore.open(run.target) : await PostgresStore.open({ url: run.url!, schema: run.target, maxConnections: 3 }),
  })),
);
const results = await Promise.all(
  opened.map(async ({ run, real }) => {
    const { app, session } = await depthApp(killing(real), run.dir, options.tool);
    const result = await session.send(MESSAGE, { key: TURN_KEY, waitForLease: 10_000 });
    await app.stop();
    await real.close();
    return result;
  }),
);
process.stdout.write(`${JSON.stringify(results)}\n`);
