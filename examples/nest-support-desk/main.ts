import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { PostgresStore } from 'trellis';
import { SupportDeskModule, type SupportDeskOptions } from './app.module.js';

/**
 * `npm run example:nest`: the desk on http://localhost:3000 (PORT to change it), turns run
 * in the request. With REDIS_URL and DATABASE_URL set, turns go to the worker queue;
 * TRELLIS_ROLE=worker starts a worker (no HTTP) for them instead of the web app.
 */
async function main(): Promise<void> {
  const worker = process.env.TRELLIS_ROLE === 'worker';
  const options = await queueOptions(worker);
  if (worker) {
    const app = await NestFactory.createApplicationContext(SupportDeskModule.register(options));
    app.enableShutdownHooks();
    console.log('Support desk worker taking turns from the queue (Ctrl-C to stop)');
    return;
  }
  const app = await NestFactory.create(SupportDeskModule.register(options));
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  console.log(
    `Support desk on http://localhost:${port}/api/support/sessions/:id/messages (see examples/nest-support-desk/README.md)`,
  );
}

async function queueOptions(worker: boolean): Promise<SupportDeskOptions> {
  const redis = process.env.REDIS_URL;
  const database = process.env.DATABASE_URL;
  if (!redis && !worker) return {};
  if (!redis || !database)
    throw new Error('The worker queue needs REDIS_URL and DATABASE_URL (a PostgreSQL URL every process shares)');
  return { store: await PostgresStore.open({ url: database }), queue: { url: redis }, worker };
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
