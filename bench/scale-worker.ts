/**
 * A worker process of `npm run bench:scale`: a TrellisWorker whose agent (`bench-agent.ts`)
 * answers after a fixed model latency, with one tool for tool rounds, over the shared
 * PostgreSQL store. Prints `ready`; stops on SIGTERM.
 */
import 'reflect-metadata';
import { PostgresStore, Trellis } from '../index.js';
import { TrellisWorker } from '../queue.js';
import { BenchToolsPlugin, benchAgent } from './bench-agent.js';

const [pgUrl, schema, redisUrl, prefix, latency, concurrency] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const store = await PostgresStore.open({ url: pgUrl, schema, maxConnections: 8 });
const app = Trellis.create({ store });
await app.install(BenchToolsPlugin);
const agent = app.agent(benchAgent(Number(latency)));
const worker = new TrellisWorker({
  url: redisUrl,
  prefix,
  store,
  agent: () => agent,
  concurrency: Number(concurrency),
});
await worker.start();
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  void worker
    .close()
    .then(() => app.stop())
    .then(() => process.exit(0));
});
