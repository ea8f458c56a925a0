import 'reflect-metadata';
import { IsString } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  StateKey,
  ScriptedModel,
  MemoryStore,
  suspend,
  TrellisError,
  type HookContext,
  type ToolContext,
} from '../../../index.js';

class Line {
  @IsString() line!: string;
}

let started: (line: string) => void = () => undefined;
const sawAbort: string[] = [];

@Plugin({ name: 'sc', version: '1.0.0' })
@StateKey('sc.lines', { scope: 'session', merge: 'exclusive', persistent: true })
class StepsPlugin {
  @Tool({ name: 'sc.note', description: 'Notes a line. Tests only.', input: Line })
  note(input: Line, _ctx: ToolContext) {
    return `noted ${input.line}`;
  }

  @Tool({ name: 'sc.wait', description: 'Waits until its signal aborts, or 2 s. Tests only.', input: Line })
  wait(input: Line, ctx: ToolContext) {
    started(input.line);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(`waited ${input.line}`), 2000);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        sawAbort.push(input.line);
        resolve('stopped');
      });
    });
  }

  @Hook('tool.after_call')
  count(_v: unknown, ctx: HookContext) {
    ctx.set('sc.lines', (ctx.get<number>('sc.lines') ?? 0) + 1);
  }
}

const paid: string[] = [];

/** Payments that wait for approval, take 200 ms and ignore their signal (a sent payment cannot be called back). */
@Plugin({ name: 'gp', version: '1.0.0' })
class GatedPaymentsPlugin {
  @Tool({ name: 'gp.pay', description: 'Pays. Tests only.', input: Line })
  async pay(input: Line) {
    started(input.line);
    paid.push(input.line);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return `paid ${input.line}`;
  }

  @Hook('tool.gate')
  gate() {
    return suspend({ message: 'Pay?', allowedDecisions: ['approve', 'reject'] });
  }
}

async function setup(script: ConstructorParameters<typeof ScriptedModel>[0], delayMs = 0) {
  const store = new MemoryStore();
  const app = Trellis.create({ store });
  await app.install(StepsPlugin);
  const model = new ScriptedModel(script, { delayMs });
  const session = app.agent({ name: 'sc', model, instructions: 'x' }).session('s');
  return { store, session, model };
}

beforeEach(() => {
  sawAbort.length = 0;
  paid.length = 0;
  started = () => undefined;
});

describe('session.cancel(): stopping the running turn', () => {
  it('answers false when no turn runs', async () => {
    const { session } = await setup(['hi']);
    expect(session.cancel()).toBe(false);
    await session.send('one');
    expect(session.cancel()).toBe(false);
  });

  it('during a model call (no signal given): the call is aborted at once; the completed steps are kept and unanswered calls answered Cancelled', async () => {
    const { session, store } = await setup(
      [
        {
          toolCalls: [
            { name: 'sc.note', args: { line: 'a' } },
            { name: 'sc.note', args: { line: 'b' } },
          ],
        },
        'never',
      ],
      300,
    );
    const sending = session.send('go');
    // The first model call (300 ms) and the notes run; the second model call is in flight at ~600 ms.
    await new Promise((resolve) => setTimeout(resolve, 450));
    const asked = Date.now();
    expect(session.cancel()).toBe(true);
    const result = await sending;
    expect(Date.now() - asked).toBeLessThan(100);
    expect(result.status).toBe('cancelled');
    expect(result.error?.code).toBe('Cancelled');
    expect(session.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
    expect(session.values['sc.lines']).toBe(2);
    const stored = await store.load('s');
    expect(stored!.transcript).toHaveLength(4);
    expect(stored!.state['sc.lines']).toBe(2);
    expect(stored!.turns.map((t) => t.status)).toEqual(['cancelled']);
    expect(stored!.steps).toBeUndefined();
  });

  it('keepSteps: false rolls the turn back: nothing joins the transcript, state as before', async () => {
    const { session, store } = await setup([{ toolCalls: [{ name: 'sc.note', args: { line: 'a' } }] }, 'never'], 300);
    const sending = session.send('go');
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect(session.cancel({ keepSteps: false })).toBe(true);
    const result = await sending;
    expect(result.status).toBe('cancelled');
    expect(session.transcript).toEqual([]);
    expect(session.values['sc.lines']).toBeUndefined();
    expect((await store.load('s'))!.transcript).toEqual([]);
  });

  it('with a caller signal, a running tool sees its signal abort; the unfinished call is answered Cancelled; the next turn sees a valid transcript', async () => {
    const { session, model } = await setup([
      {
        toolCalls: [
          { name: 'sc.note', args: { line: 'a' } },
          { name: 'sc.wait', args: { line: 'w' } },
        ],
      },
      'next answer',
    ]);
    const controller = new AbortController();
    started = () => setTimeout(() => session.cancel(), 10);
    const result = await session.send('go', { signal: controller.signal });
    expect(result.status).toBe('cancelled');
    expect(sawAbort).toEqual(['w']);
    const tools = session.transcript.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.content)).toEqual([
      expect.stringContaining('noted a'),
      expect.stringContaining('Cancelled'),
    ]);
    // The next turn asks the model with every call of the cut-off turn answered.
    const next = await session.send('again');
    expect(next.reply).toBe('next answer');
    const asked = model.calls.at(-1)!.messages.map((m) => m.role);
    expect(asked.slice(-5)).toEqual(['user', 'assistant', 'tool', 'tool', 'user']);
  });

  it('without a caller signal, a running tool finishes and the turn stops before the next step', async () => {
    const { session } = await setup([{ toolCalls: [{ name: 'sc.wait', args: { line: 'w' } }] }, 'never']);
    started = () => setTimeout(() => session.cancel(), 10);
    const result = await session.send('go');
    expect(result.status).toBe('cancelled');
    expect(sawAbort).toEqual([]);
    expect(session.transcript.map((m) => m.content)).toEqual(['go', '', expect.stringContaining('waited w')]);
  });

  it('a resume stopped during its first approved call: that call finishes and is recorded, the second does not start and waits for a decision again', async () => {
    const store = new MemoryStore();
    const app = Trellis.create({ store });
    await app.install(GatedPaymentsPlugin);
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'gp.pay', args: { line: 'a' } },
          { name: 'gp.pay', args: { line: 'b' } },
        ],
      },
      'all paid',
    ]);
    const session = app.agent({ name: 'gp', model, instructions: 'x' }).session('s');
    const asked = await session.send('pay both');
    const [a, b] = asked.suspended!.map((p) => p.callId);
    started = () => setTimeout(() => session.cancel(), 10);

    const stopped = await session.resume({
      decisions: [
        { callId: a!, decision: 'approve' },
        { callId: b!, decision: 'approve' },
      ],
    });
    expect(paid).toEqual(['a']);
    expect(stopped.status).toBe('suspended');
    expect(stopped.toolCalls.map((c) => [c.callId, c.ok])).toEqual([[a, true]]);
    // b is undecided again: the next decision on it holds (a claimed approval would run by itself).
    expect((await session.pending()).map((p) => p.callId)).toEqual([b]);
    started = () => undefined;
    const done = await session.resume({ decisions: [{ callId: b!, decision: 'reject' }] });
    expect(done.reply).toBe('all paid');
    expect(paid).toEqual(['a']);
    expect(session.transcript.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
      expect.stringContaining('paid a'),
      expect.stringContaining('Rejected'),
    ]);
  });

  it('abandon() gives the lease up at once while the turn runs; the turn writes nothing more (LeaseLost)', async () => {
    const { store, session } = await setup([{ toolCalls: [{ name: 'sc.wait', args: { line: 'w' } }] }, 'never']);
    expect(await session.abandon()).toBe(false);
    let abandoned: Promise<boolean> | undefined;
    started = () => {
      abandoned = session.abandon();
    };
    const turn = session.send('go');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await abandoned).toBe(true);
    // Another writer takes the session at once, not after the lease's TTL.
    expect(await store.acquireLease('s', 'another process', 10_000)).toBe(true);
    const error = await turn.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(TrellisError.is(error, 'LeaseLost')).toBe(true);
    expect((await store.load('s'))?.transcript ?? []).toEqual([]);
  });

  it('a send waiting behind the running turn is not cancelled', async () => {
    const { session } = await setup(['first', 'second'], 200);
    const one = session.send('one');
    const two = session.send('two');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(session.cancel()).toBe(true);
    expect((await one).status).toBe('cancelled');
    expect((await two).status).toBe('completed');
  });
});
