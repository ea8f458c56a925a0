/**
 * One process of the durable-steps kill test (issue 25):
 *   node --loader ts-node/esm steps-process.ts '<options JSON>'
 * with options `{ store: 'sqlite' | 'postgres', target: <file or schema>, url?, dir, tool, key, kill }`.
 * It runs the steps workload's turn on the store and kills itself with SIGKILL at `kill`:
 * `write:N` right after the N-th store write (a journal step or the checkpoint) landed, before
 * the turn hears of it; `tool:N` in the middle of the run of the call writing line N (its ledger
 * line written, its result not returned). Without a kill it prints the turn's result as JSON.
 */
import 'reflect-metadata';
import { PostgresStore, ScriptedModel, SqliteStore, Trellis, type SessionStore } from '../../index.js';
import { LedgerPlugin, stepsScript, useLedgers } from './steps-workload.js';
import { join } from 'node:path';

interface Options {
  readonly store: 'sqlite' | 'postgres';
  readonly target: string;
  readonly url?: string;
  readonly dir: string;
  readonly tool: 'ledger.write' | 'ledger.pay';
  readonly key: string;
  readonly kill: string;
}

const options = JSON.parse(process.argv[2]!) as Options;
const [kind, at] = options.kill.split(':') as [string, string | undefined];
const killAt = Number(at);
const die = () => process.kill(process.pid, 'SIGKILL');

/** The store, with the process killed right after its `killAt`-th write lands. */
function killing(real: SessionStore): SessionStore {
  let writes = 0;
  return new Proxy(real, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      if (prop !== 'appendSteps' && prop !== 'checkpoint') return method;
      return async (...args: unknown[]) => {
        const out = await method(...args);
        if (kind === 'write' && ++writes === killAt) die();
        return out;
      };
    },
  });
}

useLedgers({ model: join(options.dir, 'model.txt'), tools: join(options.dir, 'tools.txt') }, (n) => {
  if (kind === 'tool' && n === killAt) die();
});
const real =
  options.store === 'sqlite'
    ? SqliteStore.open(options.target)
    : await PostgresStore.open({ url: options.url!, schema: options.target, maxConnections: 2 });
const app = Trellis.create({ store: killing(real), leaseTtlMs: 1_000 });
await app.install(LedgerPlugin);
const agent = app.agent({
  name: 'writer',
  model: new ScriptedModel(stepsScript(options.tool)),
  instructions: 'Write the lines.',
  toolConcurrency: 2,
});
const result = await agent.session('s1').send('write four lines', { key: options.key, waitForLease: 10_000 });
process.stdout.write(`${JSON.stringify(result)}\n`);
await app.stop();
await real.close();
