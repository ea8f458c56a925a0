/**
 * A worker process of `npm run bench:scale`: a TrellisWorker whose agent answers after a
 * fixed model latency (like a network model), with no tools, over the shared PostgreSQL
 * store. Prints `ready`; stops on SIGTERM.
 */
import 'reflect-metadata';
import { PostgresStore, ScriptedModel, Trellis } from '../index.js';
import { TrellisWorker } from '../queue.js';

const [pgUrl, schema, redisUrl, prefix, latency, concurrency] = process.argv.slice(2) as [string, string, string, string, string, string];
const store = await PostgresStore.open({ url: pgUrl, schema, maxConnections: 8 });
const app = Trellis.create({ store });
const model = new ScriptedModel(async (request) => {
  await new Promise((resolve) => setTimeout(resolve, Number(latency)));
  return `ok: ${request.messages.at(-1)!.content}`;
});
const agent = app.agent({ name: 'bench', model, instructions: 'Answer.' });
const worker = new TrellisWorker({ url: redisUrl, prefix, store, agent: () => agent, concurrency: Number(concurrency) });
await worker.start();
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  void worker
    .close()
    .then(() => app.stop())
    .then(() => process.exit(0));
});
