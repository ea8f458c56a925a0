import 'reflect-metadata';
import type { ExecutionContext, INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { IsIn, IsNumber, IsString } from 'class-validator';
import request from 'supertest';
import { MemoryStore, type SessionStore } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { TrellisModule, TrellisSessionsModule, type TrellisQueueOptions } from 'trellis/nestjs';
import type { PostgresStore } from '../../../src/engine/stores/postgres-store.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService, REDIS_URL } from '../../support/services.js';

class Triage {
  @IsIn(['low', 'high']) priority!: string;
  @IsString() summary!: string;
  @IsNumber() confidence!: number;
}

/** A triage agent whose first answer is invalid (a repair round follows), then typed. */
const triageAgent = () => ({
  name: 'triage',
  model: new ScriptedModel((request) =>
    request.messages.at(-1)!.content.includes('not a valid Triage')
      ? '{"priority":"high","summary":"Refund blocked","confidence":0.9}'
      : '{"priority":"urgent"}',
  ),
  instructions: 'Triage support tickets.',
  output: Triage,
});

async function boot(store: SessionStore, queue?: TrellisQueueOptions, worker?: boolean): Promise<INestApplication> {
  const requestContext = (context: ExecutionContext) => ({
    'app.user_id':
      context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-user'] ??
      'agent-1',
  });
  const imports = [
    TrellisModule.forRoot({ isGlobal: true, store, agents: [triageAgent()], queue, worker, requestContext }),
    TrellisSessionsModule.register({ prefix: 'api/triage', agent: 'triage' }),
  ];
  const app = (await Test.createTestingModule({ imports }).compile()).createNestApplication({ logger: false });
  await app.init();
  return app;
}

const EXPECTED = { priority: 'high', summary: 'Refund blocked', confidence: 0.9 };

describe('the sessions API returns a typed turn’s output (in process)', () => {
  let app: INestApplication;
  let store: MemoryStore;
  beforeAll(async () => {
    store = new MemoryStore();
    app = await boot(store);
  });
  afterAll(async () => app?.close());

  it('answers POST …/messages with output as a plain JSON object, after the repair round; the turn record keeps it', async () => {
    const res = await request(app.getHttpServer())
      .post('/api/triage/sessions/t1/messages')
      .send({ message: 'My refund is stuck' })
      .expect(200);
    expect(res.body).toMatchObject({ status: 'completed', rounds: 2, output: EXPECTED });
    expect(JSON.parse(res.body.reply)).toEqual(EXPECTED);
    expect((await store.load('t1'))!.turns[0]!.output).toEqual(EXPECTED);
  });

  it('sends output in the result event of a streamed turn, after output.partial events', async () => {
    const res = await request(app.getHttpServer())
      .post('/api/triage/sessions/t2/messages')
      .set('accept', 'text/event-stream')
      .send({ message: 'My refund is stuck' })
      .expect(200);
    const text = res.text;
    expect(text).toContain('event: output.partial');
    const result = text.split('\n\n').find((block) => block.startsWith('event: result'))!;
    expect(JSON.parse(result.split('\ndata: ')[1]!)).toMatchObject({ status: 'completed', output: EXPECTED });
  });
});

const queued =
  (await haveService('redis', 'typed output over the worker queue')) &&
  (await haveService('postgres', 'typed output over the worker queue'));

(queued ? describe : describe.skip)(
  'the sessions API returns a typed turn’s output (worker queue: Redis, PostgreSQL)',
  () => {
    const schemas = new PostgresSchemas();
    const stores: PostgresStore[] = [];
    let web: INestApplication;
    let worker: INestApplication;

    beforeAll(async () => {
      const schema = schemas.next();
      const queue: TrellisQueueOptions = {
        url: REDIS_URL,
        prefix: `${schemas.prefix}_t`,
        queueName: 'turns',
        pollMs: 200,
      };
      for (let i = 0; i < 2; i++) stores.push(await schemas.open(schema));
      worker = await boot(stores[0]!, queue, true);
      web = await boot(stores[1]!, queue);
    });

    afterAll(async () => {
      await web?.close();
      await worker?.close();
      await schemas.dropAll();
      const { Redis } = await import('ioredis');
      const client = new Redis(REDIS_URL);
      const keys = await client.keys(`${schemas.prefix}_t:*`);
      if (keys.length > 0) await client.del(...keys);
      await client.quit();
    });

    it('runs the typed turn on the worker and answers the web request with its output', async () => {
      const res = await request(web.getHttpServer())
        .post('/api/triage/sessions/q1/messages')
        .send({ message: 'My refund is stuck' })
        .expect(200);
      expect(res.body).toMatchObject({ status: 'completed', output: EXPECTED });
      expect((await stores[1]!.load('q1'))!.turns[0]!.output).toEqual(EXPECTED);
    });
  },
);
