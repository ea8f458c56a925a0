import type { Command } from 'commander';
import { TrellisError } from '../../../../index.js';
import type { TrellisWorker } from '../../../../queue.js';
import { openAgent, withCliApp, type CliApp } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';

/**
 * `trellis worker`: serves the config's turn queue with the config's app until SIGINT or
 * SIGTERM, then finishes the turns it is running and exits.
 */
export function registerWorkerCommand(program: Command, io: CliIo): void {
  program
    .command('worker')
    .description("run queued turns (the config's `queue`, a Redis URL) with this app until stopped")
    .option('-c, --concurrency <n>', 'turns run at once', '4')
    .action(async (options: { concurrency: string }) => {
      const concurrency = Number(options.concurrency);
      if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
        throw new TrellisError(
          'InvalidOptions',
          `--concurrency must be a whole number of at least 1; got ${options.concurrency}`,
        );
      }
      await withCliApp(io, async (cli) => {
        const worker = await startWorker(cli, io, concurrency);
        await worker.start();
        for (const problem of await worker.checkRedis()) io.err(`warning: ${problem}`);
        io.err(
          `worker ${worker.id} serving queue on ${redisHost(cli)} with sessions in ${cli.storePath} (Ctrl-C to stop)`,
        );
        await stopSignal();
        io.err('stopping: finishing the turns in progress');
        await worker.close();
      });
    });
}

/** The worker of the config's queue; `trellis/queue` (BullMQ, ioredis) loads only here. */
async function startWorker(cli: CliApp, io: CliIo, concurrency: number): Promise<TrellisWorker> {
  const queue = cli.config?.config.queue;
  if (!queue) {
    throw new TrellisError(
      'InvalidConfig',
      `No queue to serve: ${cli.configFile !== undefined ? `${cli.configFile} has no \`queue\`` : 'there is no trellis.config here, so no `queue`'}`,
      {
        hint: 'Add "queue": "redis://127.0.0.1:6379" (and a postgres:// "store" shared with the other instances) to trellis.config',
      },
    );
  }
  const store = cli.store;
  const agent = openAgent(cli, io);
  const { url, name, prefix } = typeof queue === 'string' ? { url: queue, name: undefined, prefix: undefined } : queue;
  const { TrellisWorker } = await import('../../../../queue.js');
  return new TrellisWorker({
    url,
    queueName: name,
    prefix,
    concurrency,
    store,
    agent: (requested) => {
      if (requested === agent.spec.name) return agent;
      throw new TrellisError('UnknownAgent', `This worker runs agent '${agent.spec.name}', not '${requested}'`, {
        hint: 'Enqueue turns with the agent name of trellis.config, or run a worker for that agent',
      });
    },
  });
}

function redisHost(cli: CliApp): string {
  const queue = cli.config!.config.queue!;
  const url = typeof queue === 'string' ? queue : queue.url;
  return new URL(url).host;
}

function stopSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
