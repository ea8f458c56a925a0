import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { IsInt } from 'class-validator';
import {
  Hook,
  MemoryStore,
  Plugin,
  Requires,
  ScriptedModel,
  suspend,
  Tool,
  Trellis,
  TrellisError,
  type Approver,
  type ToolCallInfo,
  type TurnResult,
} from '../../../index.js';
import type { AuditRecord } from '../../../stores.js';
import { verifyAuditChain, type ApprovalPolicy } from '../../../governance.js';

class Amount {
  @IsInt() amount!: number;
}

let ran: string[] = [];

@Plugin({ name: 'payments', version: '1.0.0' })
class Payments {
  @Tool({ name: 'payments.refund', description: 'Refunds an amount.', input: Amount })
  refund(input: Amount) {
    ran.push(`refund ${input.amount}`);
    return `refunded ${input.amount}`;
  }

  @Tool({
    name: 'payments.note',
    description: 'Adds a note; tagged as money movement for the test.',
    input: Amount,
    tags: ['money'],
  })
  note(input: Amount) {
    ran.push(`note ${input.amount}`);
    return 'noted';
  }

  @Tool({ name: 'payments.lookup', description: 'Looks up; no policy applies.', input: Amount })
  lookup(input: Amount) {
    ran.push(`lookup ${input.amount}`);
    return 'found';
  }
}

@Plugin({ name: 'gate', version: '1.0.0' })
class AskEveryTime {
  @Hook('tool.gate')
  check(call: ToolCallInfo) {
    return suspend({ message: `Approve ${call.tool}?` });
  }
}

const REFUNDS: ApprovalPolicy = {
  name: 'refunds',
  tools: ['payments.refund'],
  roles: ['finance'],
  quorum: 2,
  requireReason: true,
};
const MONEY: ApprovalPolicy = { name: 'money', tags: ['money'], roles: ['finance', 'support'], expiresAfterMs: 60 };

const alice: Approver = { id: 'alice@corp', roles: ['finance'] };
const bob: Approver = { id: 'bob@corp', roles: ['finance'] };
const sam: Approver = { id: 'sam@corp', roles: ['support'] };

/** One app over `store`, as one process would be; the model asks for `tool` once with a fresh call id, then answers. */
async function open(
  store: MemoryStore,
  tool: string,
  policies: ApprovalPolicy[] = [REFUNDS, MONEY],
  answerOnly = false,
) {
  const app = Trellis.create({ store, approvals: { policies } });
  await app.install(Payments);
  await app.install(AskEveryTime);
  const callId = `call_${randomUUID()}`;
  const model = new ScriptedModel(
    answerOnly ? ['done'] : [{ toolCalls: [{ id: callId, name: tool, args: { amount: 40 } }] }, 'done'],
  );
  const session = app.agent({ name: 'desk', model, instructions: 'Help.' }).session('s1');
  return { app, model, session, callId };
}

async function refused(promise: Promise<unknown>): Promise<TrellisError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(TrellisError.is(error, 'ApprovalRefused')).toBe(true);
  return error as TrellisError;
}

const outcomes = (log: readonly AuditRecord[]) => log.map((r) => `${r.entry.outcome}:${r.entry.approver?.id ?? '-'}`);

beforeEach(() => {
  ran = [];
});

describe('approval policies: who may decide what', () => {
  it('lets anyone the host allows decide a call no policy matches, and audits it with the approver', async () => {
    const store = new MemoryStore();
    const { session, callId } = await open(store, 'payments.lookup');
    expect((await session.send('look it up')).status).toBe('suspended');
    const result = await session.resume({ decisions: [{ callId, decision: 'approve' }], approver: sam });
    expect(result.status).toBe('completed');
    expect(ran).toEqual(['lookup 40']);
    const log = await store.readAudit();
    expect(outcomes(log)).toEqual(['approved:sam@corp']);
    expect(log[0]!.entry).toMatchObject({ sessionId: 's1', callId, tool: 'payments.lookup', decision: 'approve' });
    expect(log[0]!.entry.policy).toBeUndefined();
  });

  it('refuses an approver without an allowed role, one the host did not name, and a decision without a required reason: nothing runs', async () => {
    const store = new MemoryStore();
    const { session, callId } = await open(store, 'payments.refund');
    await session.send('refund it');
    const wrongRole = await refused(
      session.resume({ decisions: [{ callId, decision: 'approve', reason: 'ok' }], approver: sam }),
    );
    expect(wrongRole.message).toContain("allows roles finance; 'sam@corp' has support");
    const nobody = await refused(session.resume({ decisions: [{ callId, decision: 'approve', reason: 'ok' }] }));
    expect(nobody.message).toContain('needs a verified approver');
    const noReason = await refused(session.resume({ decisions: [{ callId, decision: 'approve' }], approver: alice }));
    expect(noReason.message).toContain('requires a reason');
    expect(ran).toEqual([]);
    expect((await session.pending()).map((p) => p.callId)).toEqual([callId]);
    expect(outcomes(await store.readAudit())).toEqual(['refused:sam@corp', 'refused:-', 'refused:alice@corp']);
  });

  it('with a quorum of 2, one approval records a vote and the call keeps waiting; the same approver twice is refused; a second approver runs it once', async () => {
    const store = new MemoryStore();
    const first = await open(store, 'payments.refund');
    await first.session.send('refund it');
    const partial = await first.session.resume({
      decisions: [{ callId: first.callId, decision: 'approve', reason: 'customer called' }],
      approver: alice,
    });
    expect(partial.status).toBe('suspended');
    expect(partial.suspended!.map((p) => p.callId)).toEqual([first.callId]);
    expect(ran).toEqual([]);
    const again = await refused(
      first.session.resume({
        decisions: [{ callId: first.callId, decision: 'approve', reason: 'really' }],
        approver: alice,
      }),
    );
    expect(again.message).toContain('needs 2 distinct approvers');

    // The second approver decides from another process: the vote came through the store.
    const second = await open(store, 'payments.refund', [REFUNDS, MONEY], true);
    const complete = await second.session.resume({
      decisions: [{ callId: first.callId, decision: 'approve', reason: 'checked the order' }],
      approver: bob,
    });
    expect(complete.status).toBe('completed');
    expect(ran).toEqual(['refund 40']);
    const log = await store.readAudit();
    expect(outcomes(log)).toEqual(['vote:alice@corp', 'refused:alice@corp', 'approved:bob@corp']);
    expect(log[0]!.entry.quorum).toEqual({ have: 1, need: 2 });
    expect(log[2]!.entry.quorum).toEqual({ have: 2, need: 2 });
    expect(log[2]!.entry.reason).toBe('checked the order');
    // Deciding again changes nothing: the call is no longer waiting.
    await expect(
      second.session.resume({
        decisions: [{ callId: first.callId, decision: 'approve', reason: 'x' }],
        approver: alice,
      }),
    ).rejects.toMatchObject({ code: 'InvalidDecision' });
    expect(ran).toEqual(['refund 40']);
  });

  it('with a quorum, one rejection rejects (the model is told), and an edit is refused', async () => {
    const store = new MemoryStore();
    const { session, callId, model } = await open(store, 'payments.refund');
    await session.send('refund it');
    await session.resume({ decisions: [{ callId, decision: 'approve', reason: 'fine' }], approver: alice });
    const edit = await refused(
      session.resume({
        decisions: [{ callId, decision: 'edit', args: { amount: 1 }, reason: 'smaller' }],
        approver: bob,
      }),
    );
    expect(edit.message).toContain('do not edit');
    const result = await session.resume({
      decisions: [{ callId, decision: 'reject', message: 'Refund not due: the order shipped' }],
      approver: bob,
    });
    expect(result.status).toBe('completed');
    expect(ran).toEqual([]);
    const told = model.calls.at(-1)!.messages.find((m) => m.role === 'tool')!;
    expect(told.content).toContain('Refund not due');
    expect(outcomes(await store.readAudit())).toEqual(['vote:alice@corp', 'refused:bob@corp', 'rejected:bob@corp']);
  });

  it('matches a policy by tag, and a call waiting past expiresAfterMs is rejected, the model told, whatever is decided later', async () => {
    const store = new MemoryStore();
    const { session, callId, model } = await open(store, 'payments.note');
    await session.send('note it');
    expect(await session.expirePending()).toBeUndefined();
    await new Promise((r) => setTimeout(r, 90));
    const result = await session.resume({ decisions: [{ callId, decision: 'approve' }], approver: sam });
    expect(result.status).toBe('completed');
    expect(ran).toEqual([]);
    const told = model.calls.at(-1)!.messages.find((m) => m.role === 'tool')!;
    expect(told.content).toContain("Nobody approved this call of payments.note within 60 ms (policy 'money')");
    const log = await store.readAudit();
    expect(outcomes(log)).toEqual(['expired:-']);
    expect(log[0]!.entry).toMatchObject({ decision: 'expire', policy: 'money', tool: 'payments.note' });
  });

  it('session.expirePending() rejects expired calls without anyone deciding, and goes on with the turn', async () => {
    const store = new MemoryStore();
    const { session } = await open(store, 'payments.note');
    await session.send('note it');
    await new Promise((r) => setTimeout(r, 90));
    const result = (await session.expirePending()) as TurnResult;
    expect(result.status).toBe('completed');
    expect(result.reply).toBe('done');
    expect(ran).toEqual([]);
    expect(session.suspended).toBe(false);
    expect(await session.expirePending()).toBeUndefined();
  });

  it('app.expirePending() sweeps the store: expired calls nobody touches are rejected and audited, their turns go on; unexpired, foreign and busy sessions are left', async () => {
    const store = new MemoryStore();
    const waiting = async (id: string, tool: string, agent = 'desk') => {
      const app = Trellis.create({ store, approvals: { policies: [REFUNDS, MONEY] } });
      await app.install(Payments);
      await app.install(AskEveryTime);
      const model = new ScriptedModel([
        { toolCalls: [{ id: `call_${randomUUID()}`, name: tool, args: { amount: 1 } }] },
      ]);
      expect((await app.agent({ name: agent, model, instructions: '' }).session(id).send('go')).status).toBe(
        'suspended',
      );
    };
    await waiting('x1', 'payments.note');
    await waiting('x2', 'payments.note');
    await waiting('x3', 'payments.refund'); // its policy has no expiry
    await waiting('x4', 'payments.note', 'other-agent'); // no agent of that name in the sweeping app
    await new Promise((r) => setTimeout(r, 90));
    // Another process holds x2 now.
    expect(await store.acquireLease('x2', 'another-process', 60_000)).toBe(true);

    // A fresh process that never opened these sessions sweeps.
    const sweeper = Trellis.create({ store, approvals: { policies: [REFUNDS, MONEY] } });
    await sweeper.install(Payments);
    await sweeper.install(AskEveryTime);
    const model = new ScriptedModel(() => 'understood');
    sweeper.agent({ name: 'desk', model, instructions: '' });
    const report = await sweeper.expirePending();
    expect(report).toEqual({ expired: [{ sessionId: 'x1', status: 'completed' }], busy: ['x2'], failed: [] });
    expect(ran).toEqual([]);
    expect(model.calls).toHaveLength(1);
    expect(model.calls[0]!.messages.find((m) => m.role === 'tool')!.content).toContain(
      "Nobody approved this call of payments.note within 60 ms (policy 'money')",
    );
    expect((await store.load('x1'))!.suspension).toBeNull();
    expect((await store.load('x3'))!.suspension).not.toBeNull();
    expect((await store.load('x4'))!.suspension).not.toBeNull();
    expect(outcomes(await store.readAudit())).toEqual(['expired:-']);
    expect(verifyAuditChain(await store.readAudit()).ok).toBe(true);
    // Once x2 is free, the next sweep takes it.
    await store.releaseLease('x2', 'another-process');
    expect((await sweeper.expirePending()).expired).toEqual([{ sessionId: 'x2', status: 'completed' }]);
  });

  it('approvals.sweepEveryMs sweeps on a timer once the app is started, with the host context sweepContext gives, and stops with the app', async () => {
    @Plugin({ name: 'needs-user', version: '1.0.0' })
    class NeedsUser {
      @Hook('llm.before')
      @Requires('app.user_id')
      check() {}
    }
    const store = new MemoryStore();
    const build = async (sweep: boolean) => {
      const seen: string[] = [];
      const app = Trellis.create({
        store,
        approvals: {
          policies: [MONEY],
          ...(sweep && {
            sweepEveryMs: 1_000,
            sweepContext: ({ id }: { id: string }) => (seen.push(id), { 'app.user_id': `owner-of-${id}` }),
          }),
        },
      });
      await app.install(Payments);
      await app.install(AskEveryTime);
      await app.install(NeedsUser);
      const agent = app.agent({
        name: 'desk',
        model: new ScriptedModel(() => ({
          toolCalls: [{ id: `call_${randomUUID()}`, name: 'payments.note', args: { amount: 2 } }],
        })),
        instructions: '',
      });
      return { app, agent, seen };
    };
    const first = await build(false);
    expect((await first.agent.session('y1', { context: { 'app.user_id': 'u1' } }).send('go')).status).toBe('suspended');
    const { app, seen } = await build(true);
    app.agent({ name: 'desk', model: new ScriptedModel(() => 'understood'), instructions: '' });
    await app.start();
    const deadline = Date.now() + 5_000;
    while ((await store.load('y1'))!.suspension !== null && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect((await store.load('y1'))!.suspension).toBeNull();
    expect((await store.load('y1'))!.turns.at(-1)).toMatchObject({ status: 'completed', reply: 'understood' });
    expect(seen).toEqual(['y1']);
    await app.stop();
    expect(() => Trellis.create({ approvals: { policies: [MONEY], sweepEveryMs: 10 } })).toThrow(
      /sweepEveryMs must be a whole number of milliseconds from 1,000/,
    );
  });

  it('refuses a policy that matches nothing or has a bad quorum, and a malformed approver', async () => {
    expect(() => Trellis.create({ approvals: { policies: [{ roles: ['x'] }] } })).toThrow(/matches nothing/);
    expect(() => Trellis.create({ approvals: { policies: [{ tools: ['a'], quorum: 0 }] } })).toThrow(
      /quorum must be a whole number/,
    );
    expect(() => Trellis.create({ approvals: { policies: [{ tools: ['a'], expiresAfterMs: -1 }] } })).toThrow(
      /expiresAfterMs/,
    );
    const { session, callId } = await open(new MemoryStore(), 'payments.lookup');
    await session.send('x');
    await expect(
      session.resume({ decisions: [{ callId, decision: 'approve' }], approver: { id: '' } }),
    ).rejects.toMatchObject({ code: 'InvalidOptions' });
  });

  it('chains every entry: the log verifies, and a changed entry is caught', async () => {
    const store = new MemoryStore();
    const { session, callId } = await open(store, 'payments.refund');
    await session.send('refund it');
    await session.resume({ decisions: [{ callId, decision: 'approve', reason: 'a' }], approver: alice });
    await session.resume({ decisions: [{ callId, decision: 'approve', reason: 'b' }], approver: bob });
    const log = await store.readAudit();
    expect(verifyAuditChain(log)).toMatchObject({ ok: true, count: 2 });
    const forged = log.map((r) => (r.seq === 1 ? { ...r, entry: { ...r.entry, approver: { id: 'mallory' } } } : r));
    expect(verifyAuditChain(forged)).toMatchObject({ ok: false, broken: { seq: 1 } });
  });
});
