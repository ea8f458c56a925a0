import 'reflect-metadata';
import { Module, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { SessionStore } from 'trellis';
import {
  TrellisChatModule,
  TrellisModule,
  type HostContext,
  type TrellisChatOptions,
  type TrellisQueueOptions,
  type TrellisWorkerHostOptions,
} from 'trellis/nestjs';
import { ExportPlugin, exportModel } from './export-desk.js';

@Module({ imports: [TrellisModule.forFeature([ExportPlugin])], providers: [ExportPlugin] })
class ExportModule {}

/** The header a test names its signed-in user with (a stand-in for the host's auth guard). */
export const USER_HEADER = 'x-test-user';

/** The request's user, as a host's auth would put it into host context. */
function requestContext(ctx: ExecutionContext): HostContext {
  const user = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers[USER_HEADER];
  return user ? { 'app.user_id': user } : {};
}

/**
 * A Nest app with the export desk agent and `TrellisChatModule` at `api/chat` (in process,
 * on the worker queue with `queue`, or a worker with `worker`), listening on a free port. The
 * caller is the user named by the `x-test-user` header.
 */
export async function bootChatApp(
  store: SessionStore,
  queue?: TrellisQueueOptions,
  worker?: boolean | TrellisWorkerHostOptions,
  setup?: (app: INestApplication) => void,
  chat: Partial<TrellisChatOptions> = {},
): Promise<{ app: INestApplication; url: string }> {
  const agents = [{ name: 'desk', model: exportModel(), instructions: 'You export reports.' }];
  const ref = await Test.createTestingModule({
    imports: [
      TrellisModule.forRoot({ isGlobal: true, store, agents, queue, worker, requestContext }),
      ExportModule,
      TrellisChatModule.register({ prefix: 'api/chat', agent: 'desk', ...chat }),
    ],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  setup?.(app);
  await app.listen(0, '127.0.0.1');
  return { app, url: await app.getUrl() };
}
