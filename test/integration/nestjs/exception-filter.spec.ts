import 'reflect-metadata';
import { Body, Controller, Inject, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { MemoryStore, type ModelRequest, type ScriptedReply } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { getAgentToken, TrellisModule, type HostedAgent } from 'trellis/nestjs';
import { Ledger, LedgerModule } from './ledger-plugin.js';

/** Records each message with `ledger.record`; lines starting `approve:` wait for a decision. */
function clerk() {
  const model = new ScriptedModel((request: ModelRequest): ScriptedReply => {
    const last = request.messages.at(-1)!;
    if (last.role === 'tool') return `done: ${last.content}`;
    return {
      toolCalls: [
        { id: `c${Math.random().toString(36).slice(2)}`, name: 'ledger.record', args: { line: last.content } },
      ],
    };
  });
  return { name: 'clerk', model, instructions: 'Keep the ledger.', plugins: ['ledger'] };
}

/** The app's own controller, as a user writes it: no try/catch, no toHttpException. */
@Controller('own')
class OwnController {
  constructor(@Inject(getAgentToken('clerk')) private readonly agent: HostedAgent) {}

  @Post(':id/messages')
  async send(@Param('id') id: string, @Body() body: { message: string }) {
    return this.agent.session(id).send(body.message);
  }

  @Post(':id/approve/:callId')
  async approve(@Param('id') id: string, @Param('callId') callId: string) {
    return this.agent.session(id).resume({ decisions: [{ callId, decision: 'approve' }] });
  }

  @Post('boom')
  boom() {
    throw new Error('not a Trellis error');
  }
}

async function boot(httpErrors?: boolean): Promise<INestApplication> {
  const options = { store: new MemoryStore(), agents: [clerk()], ...(httpErrors === undefined ? {} : { httpErrors }) };
  const ref = await Test.createTestingModule({
    imports: [TrellisModule.forRoot(options), LedgerModule],
    controllers: [OwnController],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe("TrellisExceptionFilter: a Trellis error from the app's own controller", () => {
  const apps: INestApplication[] = [];
  afterAll(async () => Promise.all(apps.map((app) => app.close())));

  async function suspendedCall(app: INestApplication, id: string): Promise<string> {
    const sent = await request(app.getHttpServer())
      .post(`/own/${id}/messages`)
      .send({ message: 'approve: refund 20' })
      .expect(201);
    expect(sent.body.status).toBe('suspended');
    return sent.body.suspended[0].callId as string;
  }

  it('deciding twice: the first runs the call, the second is a 400 InvalidDecision (not a 500), and the call ran once', async () => {
    const app = await boot();
    apps.push(app);
    const callId = await suspendedCall(app, 's1');
    const first = await request(app.getHttpServer()).post(`/own/s1/approve/${callId}`).expect(201);
    expect(first.body.status).toBe('completed');
    const second = await request(app.getHttpServer()).post(`/own/s1/approve/${callId}`).expect(400);
    expect(second.body).toMatchObject({ statusCode: 400, code: 'InvalidDecision' });
    expect(app.get(Ledger).lines).toEqual(['approve: refund 20']);
  });

  it('leaves other errors to Nest (a plain 500), and httpErrors: false leaves Trellis errors to the app too', async () => {
    const app = await boot();
    apps.push(app);
    const boom = await request(app.getHttpServer()).post('/own/boom').expect(500);
    expect(boom.body).toEqual({ statusCode: 500, message: 'Internal server error' });

    const bare = await boot(false);
    apps.push(bare);
    const callId = await suspendedCall(bare, 's2');
    await request(bare.getHttpServer()).post(`/own/s2/approve/${callId}`).expect(201);
    await request(bare.getHttpServer()).post(`/own/s2/approve/${callId}`).expect(500);
  });
});
