import 'reflect-metadata';
import { Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { SessionStore } from 'trellis';
import { TrellisChatModule, TrellisModule, type TrellisQueueOptions, type TrellisWorkerHostOptions } from 'trellis/nestjs';
import { ExportPlugin, exportModel } from './export-desk.js';

@Module({ imports: [TrellisModule.forFeature([ExportPlugin])], providers: [ExportPlugin] })
class ExportModule {}

/**
 * A Nest app with the export desk agent and `TrellisChatModule` at `api/chat` (in process,
 * on the worker queue with `queue`, or a worker with `worker`), listening on a free port.
 */
export async function bootChatApp(store: SessionStore, queue?: TrellisQueueOptions, worker?: boolean | TrellisWorkerHostOptions, setup?: (app: INestApplication) => void): Promise<{ app: INestApplication; url: string }> {
  const agents = [{ name: 'desk', model: exportModel(), instructions: 'You export reports.' }];
  const ref = await Test.createTestingModule({ imports: [TrellisModule.forRoot({ isGlobal: true, store, agents, queue, worker }), ExportModule, TrellisChatModule.register({ prefix: 'api/chat', agent: 'desk' })] }).compile();
  const app = ref.createNestApplication({ logger: false });
  setup?.(app);
  await app.listen(0, '127.0.0.1');
  return { app, url: await app.getUrl() };
}
