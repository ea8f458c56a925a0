import 'reflect-metadata';
import { Injectable, type CanActivate, type INestApplication } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { MemoryStore, Trellis, TrellisError } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { TrellisModule, TrellisSessionsModule } from 'trellis/nestjs';
import { SupportDeskModule } from '../../../examples/nest-support-desk/app.module.js';
import { RefundsService } from '../../../examples/nest-support-desk/refunds/refunds.service.js';
import { LedgerModule, Ledger } from '../nestjs/ledger-plugin.js';

const alice = { Authorization: 'Bearer alice-token' };
const bob = { Authorization: 'Bearer bob-token' };
const sam = { Authorization: 'Bearer sam-token' };

type Server = ReturnType<INestApplication['getHttpServer']>;

/** Every route of the sessions API, as a request builder for session `id` under `base`. */
function routes(base: string, id: string, callId: string) {
  return [
    { name: 'read', go: (s: Server, path = `${base}/sessions/${id}`) => request(s).get(path) },
    {
      name: 'send',
      go: (s: Server, path = `${base}/sessions/${id}/messages`) =>
        request(s).post(path).send({ message: 'cancel everything, I am bob' }),
    },
    {
      name: 'decide',
      go: (s: Server, path = `${base}/sessions/${id}/decisions`) =>
        request(s)
          .post(path)
          .send({ decisions: [{ callId, decision: 'approve' }] }),
    },
    { name: 'cancel', go: (s: Server, path = `${base}/sessions/${id}/pending`) => request(s).delete(path) },
    { name: 'stop', go: (s: Server, path = `${base}/sessions/${id}/cancel`) => request(s).post(path) },
    {
      name: 'events',
      go: (s: Server, path = `${base}/sessions/${id}/events`) =>
        request(s).get(path).set('Accept', 'text/event-stream'),
    },
  ];
}

/**
 * The spellings of one route that Express routes to the same handler: the case of the fixed
 * parts and a trailing slash (the session id, a parameter, keeps its case).
 */
function variants(path: string): string[] {
  const match = /^(.*\/sessions\/)([^/]+)(\/[^/]+)?$/.exec(path);
  if (!match) throw new Error(`not a session route: ${path}`);
  const [, base = '', id = '', tail = ''] = match;
  const cap = tail.length > 1 ? `/${tail.charAt(1).toUpperCase()}${tail.slice(2)}` : '';
  return [
    path,
    `${path}/`,
    `${base}${id}${tail.toUpperCase()}`,
    `${base}${id}${cap}`,
    `${base}${id}${cap}/`,
    `${base.toUpperCase()}${id}${tail.toUpperCase()}/`,
  ];
}

describe('the sessions API of the Nest support desk: who may touch a session', () => {
  let app: INestApplication;
  let server: Server;
  let callId: string;

  beforeEach(async () => {
    const ref = await Test.createTestingModule({ imports: [SupportDeskModule.register()] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
    server = app.getHttpServer();
    const first = await request(server)
      .post('/api/support/sessions/r1/messages')
      .set(alice)
      .send({ message: 'Please refund 120.00 on order A1002 because it arrived broken' })
      .expect(200);
    expect(first.body.status).toBe('suspended');
    callId = first.body.suspended[0].callId as string;
  });

  afterEach(async () => {
    await app.close();
  });

  /** Alice's refund still waits, unpaid, and her transcript is hers alone. */
  async function untouched(): Promise<void> {
    const view = await request(server).get('/api/support/sessions/r1').set(alice).expect(200);
    expect(view.body.pending.map((p: { callId: string }) => p.callId)).toEqual([callId]);
    expect(JSON.stringify(view.body.transcript)).not.toContain('bob');
    expect(app.get(RefundsService).issued()).toEqual([]);
  }

  it("refuses bob every route of alice's session, in every spelling of its path, and leaves it as it was", async () => {
    let tried = 0;
    for (const route of routes('/api/support', 'r1', 'x')) {
      const path = route.go
        .toString()
        .match(/path = `([^`]+)`/)![1]!
        .replace('${base}', '/api/support')
        .replace('${id}', 'r1');
      for (const spelling of variants(path)) {
        const res = await route.go(server, spelling).set(bob);
        expect({ route: route.name, spelling, status: res.status }).toEqual({
          route: route.name,
          spelling,
          status: 403,
        });
        expect(res.body.code).toBe('AuthDenied');
        expect(JSON.stringify(res.body)).not.toContain('A1002');
        tried++;
      }
    }
    expect(tried).toBe(36);
    // The same, with alice's own call id: deciding is refused before the call is looked at.
    await request(server)
      .post('/api/support/sessions/r1/decisions')
      .set(bob)
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(403);
    await untouched();
  });

  it('refuses alice, who lacks refunds:approve, a decision on her own refund through /decisions, /decisions/, /DECISIONS and /Decisions', async () => {
    for (const spelling of variants('/api/support/sessions/r1/decisions')) {
      const res = await request(server)
        .post(spelling)
        .set(alice)
        .send({ decisions: [{ callId, decision: 'approve' }] });
      expect({ spelling, status: res.status }).toEqual({ spelling, status: 403 });
    }
    await untouched();
  });

  it('answers 401 to missing and odd tokens on every route, and runs nothing', async () => {
    const odd = [
      '',
      'Bearer',
      'Bearer ',
      'alice-token',
      'Basic alice-token',
      'Bearer  alice-token',
      'Bearer alice-token x',
      'Bearer alice-tokenx',
      'Bearer alice-toke',
      'Bearer ALICE-TOKEN',
      'Bearer alice-token,sam-token',
      'Bearer __proto__',
      'Bearer constructor',
      'Bearer toString',
      'Bearer sam-token\u00a0',
    ];
    let tried = 0;
    for (const route of routes('/api/support', 'r1', callId)) {
      const bare = await route.go(server);
      expect({ route: route.name, status: bare.status }).toEqual({ route: route.name, status: 401 });
      for (const header of odd) {
        const res = await route.go(server).set('Authorization', header);
        expect({ route: route.name, header, status: res.status }).toEqual({ route: route.name, header, status: 401 });
        tried++;
      }
    }
    expect(tried).toBe(odd.length * 6);
    await untouched();
  });

  it("streams a session's events to its owner only; a session nobody opened yet is a 404, so nobody watches one before its owner opens it", async () => {
    if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as import('node:net').AddressInfo;
    const open = async (path: string, headers: Record<string, string>) => {
      const abort = new AbortController();
      const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        headers: { accept: 'text/event-stream', ...headers },
        signal: abort.signal,
      });
      const answer = {
        status: res.status,
        type: res.headers.get('content-type'),
        body: res.status === 200 ? '' : await res.text(),
      };
      abort.abort();
      return answer;
    };
    expect(await open('/api/support/sessions/r1/events', alice)).toMatchObject({
      status: 200,
      type: expect.stringContaining('text/event-stream'),
    });
    expect(await open('/api/support/sessions/r1/events', bob)).toMatchObject({ status: 403 });
    expect(await open('/api/support/sessions/new-one/events', bob)).toMatchObject({ status: 404 });
    expect(await open('/api/support/sessions/r1/events?after=nope', alice)).toMatchObject({ status: 400 });
    expect(await open('/api/support/sessions/r1/events', { ...alice, 'last-event-id': '../x' })).toMatchObject({
      status: 400,
    });
    // Bob tried to watch it before alice opened it: she opens it, and it is hers alone.
    await request(server)
      .post('/api/support/sessions/new-one/messages')
      .set(alice)
      .send({ message: 'Where is order A1001?' })
      .expect(200);
    expect(await open('/api/support/sessions/new-one/events', bob)).toMatchObject({ status: 403 });
  });

  it('lets a supervisor read and decide (the refund is paid once) but only the owner write', async () => {
    await request(server).get('/api/support/sessions/r1').set(sam).expect(200);
    const decided = await request(server)
      .post('/api/support/sessions/r1/Decisions/')
      .set(sam)
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(200);
    expect(decided.body.reply).toBe('Refunded $120.00 on order A1002.');
    expect(app.get(RefundsService).issued()).toHaveLength(1);
    // A supervisor does not own the session: it cannot write to it.
    await request(server)
      .post('/api/support/sessions/r1/messages')
      .set(sam)
      .send({ message: 'Where is order A1001?' })
      .expect(403);
    await request(server)
      .post('/api/support/sessions/r1/messages')
      .set(alice)
      .send({ message: 'Where is order A1001?' })
      .expect(200);
  });

  it('gives a new session to whoever opens it, and nobody else', async () => {
    await request(server)
      .post('/api/support/sessions/b1/messages')
      .set(bob)
      .send({ message: 'Where is order B2001?' })
      .expect(200);
    await request(server).get('/api/support/sessions/b1').set(alice).expect(403);
    await request(server)
      .post('/api/support/sessions/b1/messages')
      .set(alice)
      .send({ message: 'Where is order A1001?' })
      .expect(403);
    await request(server).get('/api/support/sessions/b1').set(bob).expect(200);
  });
});

/** Host context from a test header: `x-user: <id>` (or none). */
@Injectable()
class HeaderGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

function ledgerAgent() {
  const model = new ScriptedModel((req) => {
    const last = req.messages.at(-1)!;
    if (last.role === 'tool') return `done: ${last.content}`;
    return {
      toolCalls: [
        { id: `call-${Math.random().toString(36).slice(2)}`, name: 'ledger.record', args: { line: last.content } },
      ],
    };
  });
  return { name: 'desk', model, instructions: 'Record what you are told.' };
}

describe("TrellisSessionsModule without a policy of the host's (owner only; nobody decides)", () => {
  let app: INestApplication;
  let store: MemoryStore;

  beforeEach(async () => {
    store = new MemoryStore();
    const imports = [
      TrellisModule.forRoot({
        isGlobal: true,
        store,
        agents: [ledgerAgent()],
        requestContext: (ctx) => {
          const user = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers[
            'x-user'
          ];
          return user ? { 'app.user_id': user } : {};
        },
      }),
      LedgerModule,
      TrellisSessionsModule.register({ prefix: 'api/desk', agent: 'desk' }),
    ];
    const ref = await Test.createTestingModule({
      imports,
      providers: [{ provide: APP_GUARD, useClass: HeaderGuard }],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
  });

  afterEach(async () => {
    await app.close();
  });

  it('answers 401 without a principal, 403 to a foreign user, and 403 to the owner deciding', async () => {
    const server = app.getHttpServer();
    const first = await request(server)
      .post('/api/desk/sessions/s1/messages')
      .set('x-user', 'alice')
      .send({ message: 'approve:refund' })
      .expect(200);
    expect(first.body.status).toBe('suspended');
    const callId = first.body.suspended[0].callId as string;
    for (const route of routes('/api/desk', 's1', callId)) {
      expect((await route.go(server)).status).toBe(401);
      expect((await route.go(server).set('x-user', 'bob')).status).toBe(403);
    }
    const decide = await request(server)
      .post('/api/desk/sessions/s1/decisions')
      .set('x-user', 'alice')
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(403);
    expect(decide.body.message).toContain('policy');
    expect(app.get(Ledger).lines).toEqual([]);
    await request(server).get('/api/desk/sessions/s1').set('x-user', 'alice').expect(200);
    const cancelled = await request(server).delete('/api/desk/sessions/s1/pending').set('x-user', 'alice').expect(200);
    expect(cancelled.body.cancelled).toBe(true);
  });

  it('keeps the owner in the store: another instance on it refuses the foreign user too', async () => {
    const server = app.getHttpServer();
    await request(server)
      .post('/api/desk/sessions/s2/messages')
      .set('x-user', 'alice')
      .send({ message: 'approve:refund' })
      .expect(200);
    expect((await store.load('s2'))?.state['trellis.owner']).toBe('alice');
    const ref = await Test.createTestingModule({
      imports: [
        TrellisModule.forRoot({
          isGlobal: true,
          store,
          agents: [ledgerAgent()],
          requestContext: (ctx) => ({
            'app.user_id': ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-user'],
          }),
        }),
        LedgerModule,
        TrellisSessionsModule.register({ prefix: 'api/desk', agent: 'desk' }),
      ],
    }).compile();
    const second = ref.createNestApplication({ logger: false });
    await second.init();
    try {
      await request(second.getHttpServer()).get('/api/desk/sessions/s2').set('x-user', 'bob').expect(403);
      await request(second.getHttpServer()).get('/api/desk/sessions/s2').set('x-user', 'alice').expect(200);
    } finally {
      await second.close();
    }
  });

  it("refuses every route on a session with messages and no owner (kept before owners were), until the host's policy says who", async () => {
    const kernel = Trellis.create({ store });
    await kernel.start();
    await kernel
      .agent({ name: 'desk', model: new ScriptedModel(['hello']), instructions: 'x' })
      .session('old')
      .send('from before');
    await kernel.stop();
    const server = app.getHttpServer();
    for (const route of routes('/api/desk', 'old', 'x'))
      expect((await route.go(server).set('x-user', 'alice')).status).toBe(403);
  });
});

describe('the kernel checks the owner again under the lease', () => {
  it('refuses a send checked against "no owner yet" once someone opened the session, and runs nothing', async () => {
    const app = Trellis.create({ store: new MemoryStore() });
    await app.start();
    const agent = app.agent({ name: 'a', model: new ScriptedModel(['one', 'two']), instructions: 'x' });
    const session = agent.session('race');
    // Both callers were checked while the session had no owner; alice's turn lands first.
    const [first, second] = await Promise.allSettled([
      session.send('alice here', { access: { principal: 'alice', owner: null } }),
      session.send('bob here', { access: { principal: 'bob', owner: null } }),
    ]);
    expect(first.status).toBe('fulfilled');
    expect(second.status === 'rejected' && TrellisError.is(second.reason, 'AuthDenied')).toBe(true);
    expect(session.owner).toBe('alice');
    expect(session.transcript.map((m) => m.content)).toEqual(['alice here', 'one']);
    await expect(
      session.resume({ decisions: [{ callId: 'x', decision: 'approve' }], access: { principal: 'bob', owner: null } }),
    ).rejects.toMatchObject({ code: 'AuthDenied' });
    await expect(session.cancelPending({ access: { principal: 'bob', owner: 'bob' } })).rejects.toMatchObject({
      code: 'AuthDenied',
    });
    await expect(session.send('x', { access: { principal: '', owner: null } })).rejects.toMatchObject({
      code: 'InvalidOptions',
    });
    await app.stop();
  });
});
