import 'reflect-metadata';
import { Injectable, type CanActivate, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { MemoryStore, type ModelRequest, type ScriptedReply } from 'trellis';
import type { ApprovalSettings } from 'trellis/governance';
import { ScriptedModel } from 'trellis/testing';
import {
  ownerOnlySessionPolicy,
  TrellisModule,
  TrellisSessionsModule,
  type SessionAccessRequest,
  type TrellisModuleOptions,
} from 'trellis/nestjs';
import { Ledger, LedgerModule } from './ledger-plugin.js';

/** The app's own authentication, as a user would write it: the bearer token names the user, whose roles the guard looks up. */
const USERS: Record<string, { id: string; roles: string[] }> = {
  alice: { id: 'alice@corp', roles: ['finance'] },
  bob: { id: 'bob@corp', roles: ['finance'] },
  sam: { id: 'sam@corp', roles: ['support'] },
};

@Injectable()
class BearerGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; user?: unknown }>();
    const user = USERS[req.headers.authorization?.replace(/^Bearer /, '') ?? ''];
    if (!user) return false;
    req.user = user;
    return true;
  }
}

const as = (name: string) => ({ Authorization: `Bearer ${name}` });
const APPROVALS: ApprovalSettings = {
  policies: [{ name: 'ledger', tools: ['ledger.record'], roles: ['finance'], quorum: 2 }],
};

function deskAgent() {
  const reply = (req: ModelRequest): ScriptedReply => {
    const last = req.messages.at(-1)!;
    if (last.role === 'tool') return `done: ${last.content}`;
    return { toolCalls: [{ id: `call_${randomUUID()}`, name: 'ledger.record', args: { line: last.content } }] };
  };
  return { name: 'desk', model: new ScriptedModel(reply), instructions: 'Record what you are told.' };
}

async function boot(store: MemoryStore, extra: Partial<TrellisModuleOptions> = {}): Promise<INestApplication> {
  // The signed-in user is the session's principal; anyone signed in may decide (the approval policy says who may approve what).
  const requestContext = (context: ExecutionContext) => ({
    'app.user_id': context.switchToHttp().getRequest<{ user?: { id: string } }>().user?.id ?? '',
  });
  const policy = (r: SessionAccessRequest) => (r.action === 'decide' ? true : ownerOnlySessionPolicy(r));
  const imports = [
    TrellisModule.forRoot({
      isGlobal: true,
      store,
      agents: [deskAgent()],
      approvals: APPROVALS,
      requestContext,
      ...extra,
    }),
    LedgerModule,
    TrellisSessionsModule.register({ prefix: 'api/desk', agent: 'desk', policy }),
  ];
  const ref = await Test.createTestingModule({
    imports,
    providers: [{ provide: APP_GUARD, useClass: BearerGuard }],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('the sessions API decides as the request user: approval policies and the audit log see who', () => {
  let app: INestApplication;
  afterEach(async () => app?.close());

  it('refuses a role the policy does not allow (403) and an approver in the body (400); two finance users make the quorum', async () => {
    const store = new MemoryStore();
    app = await boot(store);
    const server = app.getHttpServer();
    const posted = await request(server)
      .post('/api/desk/sessions/r1/messages')
      .set(as('sam'))
      .send({ message: 'approve:refund 40' })
      .expect(200);
    const callId = posted.body.suspended[0].callId as string;

    const refused = await request(server)
      .post('/api/desk/sessions/r1/decisions')
      .set(as('sam'))
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(403);
    expect(refused.body.code).toBe('ApprovalRefused');
    expect(refused.body.message).toContain("'sam@corp' has support");
    // The body cannot say who decides.
    await request(server)
      .post('/api/desk/sessions/r1/decisions')
      .set(as('sam'))
      .send({ decisions: [{ callId, decision: 'approve', approver: { id: 'alice@corp', roles: ['finance'] } }] })
      .expect(400);

    const first = await request(server)
      .post('/api/desk/sessions/r1/decisions')
      .set(as('alice'))
      .send({ decisions: [{ callId, decision: 'approve', reason: 'known customer' }] })
      .expect(200);
    expect(first.body.status).toBe('suspended');
    expect(app.get(Ledger).lines).toEqual([]);
    const second = await request(server)
      .post('/api/desk/sessions/r1/decisions')
      .set(as('bob'))
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(200);
    expect(second.body.status).toBe('completed');
    expect(app.get(Ledger).lines).toEqual(['approve:refund 40']);

    const log = await store.readAudit();
    expect(log.map((r) => [r.entry.outcome, r.entry.approver])).toEqual([
      ['refused', { id: 'sam@corp', roles: ['support'] }],
      ['vote', { id: 'alice@corp', roles: ['finance'] }],
      ['approved', { id: 'bob@corp', roles: ['finance'] }],
    ]);
    expect(log[1]!.entry.reason).toBe('known customer');
  });

  it("takes the module's approver option over request.user", async () => {
    const store = new MemoryStore();
    app = await boot(store, {
      approver: (ctx) => ({
        id: `sso:${ctx.switchToHttp().getRequest<{ user: { id: string } }>().user.id}`,
        roles: ['finance'],
      }),
    });
    const server = app.getHttpServer();
    const posted = await request(server)
      .post('/api/desk/sessions/r2/messages')
      .set(as('sam'))
      .send({ message: 'approve:x' })
      .expect(200);
    const callId = posted.body.suspended[0].callId as string;
    await request(server)
      .post('/api/desk/sessions/r2/decisions')
      .set(as('sam'))
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(200);
    expect((await store.readAudit()).map((r) => r.entry.approver?.id)).toEqual(['sso:sam@corp']);
  });
});
