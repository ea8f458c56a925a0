import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Hook,
  MemoryStore,
  Plugin,
  ScriptedModel,
  SqliteStore,
  Trellis,
  type SessionStore,
  type ToolCallInfo,
} from '../../../index.js';
import { dyingStore } from './support/dying-store.js';
import {
  FINAL_REPLY,
  LedgerPlugin,
  readLedger,
  stepsScript,
  useLedgers,
  type Ledgers,
} from '../../support/steps-workload.js';

/**
 * Durable steps (issue 25), in one process: a turn is cut off at every step boundary (the
 * store "dies" right after a write lands) and in the middle of every tool run, then another
 * app on the same store goes on with it. Counted across both: turns, model calls, tool runs
 * by idempotency key, hook runs.
 */

interface Line {
  readonly key: string;
  readonly n: number;
  readonly tool: string;
  readonly callId: string;
}

/** Hook runs per point, across the apps of a test. */
let hookRuns: Record<string, number> = {};
/** The call ids `tool.before_call` saw, in order. */
let beforeCallIds: string[] = [];

@Plugin({ name: 'watch', version: '1.0.0', description: 'Counts hook runs' })
class WatchPlugin {
  @Hook('message.received') received(message: string) {
    count('message.received');
    return message;
  }
  @Hook('task.start') start() {
    count('task.start');
  }
  @Hook('planning.started') plan(instructions: string) {
    count('planning.started');
    return instructions;
  }
  @Hook('llm.before') before() {
    count('llm.before');
  }
  @Hook('tool.before_call') call(info: ToolCallInfo) {
    count('tool.before_call');
    beforeCallIds.push(info.callId);
  }
  @Hook('task.end') end() {
    count('task.end');
  }
}

function count(point: string): void {
  hookRuns[point] = (hookRuns[point] ?? 0) + 1;
}

type Kind = 'memory' | 'sqlite';

let dir: string;
let files: Ledgers;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-steps-'));
  files = { model: join(dir, 'model.txt'), tools: join(dir, 'tools.txt') };
  hookRuns = {};
  beforeCallIds = [];
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The store as one process opens it, and as the next process opens the same data. */
function stores(kind: Kind): { first: () => SessionStore; next: () => SessionStore } {
  if (kind === 'memory') {
    const shared = new MemoryStore();
    return { first: () => shared, next: () => shared };
  }
  const path = join(dir, 'trellis.db');
  return { first: () => SqliteStore.open(path), next: () => SqliteStore.open(path) };
}

async function appOn(store: SessionStore, tool: 'ledger.write' | 'ledger.pay' = 'ledger.write') {
  const app = Trellis.create({ store, leaseTtlMs: 1_000 });
  await app.install(LedgerPlugin);
  await app.install(WatchPlugin);
  const agent = app.agent({
    name: 'writer',
    model: new ScriptedModel(stepsScript(tool)),
    instructions: 'Write the lines.',
    toolConcurrency: 2,
  });
  return { app, session: agent.session('s1') };
}

/** The session as the store holds it, read through a store of its own (closed after). */
async function loaded(open: () => SessionStore) {
  const store = open();
  try {
    return await store.load('s1');
  } finally {
    if (!(store instanceof MemoryStore)) await store.close();
  }
}

const modelCalls = () => readLedger(files.model, Number).length;
const toolRuns = () => readLedger<Line>(files.tools);

/** The turn's messages as roles and contents, with each tool message checked to answer a call of the message before. */
function shape(
  transcript: readonly { role: string; content: string; toolCalls?: readonly { id: string }[]; toolCallId?: string }[],
): string[] {
  const asked = new Set<string>();
  return transcript.map((m) => {
    if (m.role === 'assistant') for (const call of m.toolCalls ?? []) asked.add(call.id);
    if (m.role === 'tool' && !asked.has(m.toolCallId!))
      throw new Error(`tool message answers no call: ${m.toolCallId}`);
    return `${m.role}:${m.role === 'assistant' ? (m.toolCalls?.length ?? 0) : ''}:${m.content}`;
  });
}

/** The idempotency keys of the calls whose result the journal held when the process died: `<session>:<turn>:<round>:<position>`. */
function finishedKeys(steps: readonly unknown[] | undefined): Set<string> {
  const keys = new Set<string>();
  for (const step of (steps ?? []) as { k: string; round: number; at: number }[])
    if (step.k === 'result') keys.add(`s1:0:${step.round}:${step.at}`);
  return keys;
}

/**
 * The tool-run counts of a recovered turn: each line written once under one key, except a call
 * that was running when the process died (in doubt), which a \`retry\` tool runs again with the
 * same key — never a call whose result had been journalled.
 */
function expectRunsOnce(finished: ReadonlySet<string>, inDoubtAllowed = true): void {
  const runs = toolRuns();
  expect(
    runs
      .map((l) => l.n)
      .filter((n, i, all) => all.indexOf(n) === i)
      .sort(),
  ).toEqual([1, 2, 3, 4]);
  expect(new Set(runs.map((l) => l.key)).size).toBe(4);
  for (const n of [1, 2, 3, 4]) {
    const ofN = runs.filter((l) => l.n === n);
    expect(new Set(ofN.map((l) => l.key)).size).toBe(1);
    if (finished.has(ofN[0]!.key) || !inDoubtAllowed) expect(ofN).toHaveLength(1);
    else expect(ofN.length).toBeLessThanOrEqual(2);
  }
}

/** `usage` without its time figures (`toolMs`, `hookMs`, `modelMs`), which measure the clock and differ from run to run. */
function tokens(usage: unknown): unknown {
  return JSON.parse(
    JSON.stringify(usage ?? null, (key, value: unknown) =>
      key === 'toolMs' || key === 'hookMs' || key === 'modelMs' ? undefined : value,
    ),
  );
}

/** The usage of the workload's turn, and of its `ask` variant resumed (pay 2 retried, pay 3 skipped), when nothing cuts them: by model, by agent, by plugin and owner. */
let uninterruptedUsage: unknown;
let resumedUsage: unknown;
beforeAll(async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'trellis-steps-ref-'));
  try {
    useLedgers({ model: join(scratch, 'model.txt'), tools: join(scratch, 'tools.txt') });
    const { session, app } = await appOn(new MemoryStore());
    uninterruptedUsage = tokens((await session.send('write four lines', { key: 'turn-1' })).usage);
    await app.stop();
    const parked = await parkPays(new MemoryStore(), {
      model: join(scratch, 'model2.txt'),
      tools: join(scratch, 'tools2.txt'),
    });
    resumedUsage = tokens((await parked.session.resume({ decisions: decide(parked.waiting) })).usage);
    await parked.app.stop();
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

/**
 * The workload with `ledger.pay`, cut while pays 2 and 3 run side by side (round 2) and gone on
 * with in a second app on `store`: parked on their retry/skip decisions.
 */
async function parkPays(store: SessionStore, ledgers: Ledgers, next: () => SessionStore = () => store) {
  const dying = dyingStore(store);
  const paying = new Set<number>();
  useLedgers(ledgers, (n) => {
    if (dying.dead() || (n !== 2 && n !== 3)) return;
    paying.add(n);
    if (paying.size === 2) dying.die();
    return new Promise<never>(() => undefined);
  });
  const one = await appOn(dying.store, 'ledger.pay');
  void one.session.send('pay four', { key: 'turn-1' });
  while (!dying.dead()) await new Promise((resolve) => setTimeout(resolve, 2));
  const two = await appOn(next(), 'ledger.pay');
  const parked = await two.session.send('pay four', { key: 'turn-1', waitForLease: 5_000 });
  return { ...two, parked, waiting: parked.suspended ?? [] };
}

/** Pay 2 retried, pay 3 skipped. */
function decide(waiting: readonly { callId: string }[]) {
  return [
    { callId: waiting[0]!.callId, decision: 'retry' as const },
    { callId: waiting[1]!.callId, decision: 'skip' as const },
  ];
}

const UNINTERRUPTED = [
  'user::write four lines',
  'assistant:1:',
  'tool::wrote 1',
  'assistant:2:',
  'tool::wrote 2',
  'tool::wrote 3',
  'assistant:1:',
  'tool::wrote 4',
  `assistant:0:${FINAL_REPLY}`,
];

describe.each<Kind>(['memory', 'sqlite'])('durable steps on %s', (kind) => {
  it('journals an uninterrupted turn step by step and ends with one checkpoint that clears its steps', async () => {
    const { first } = stores(kind);
    useLedgers(files);
    const dying = dyingStore(first());
    const { session, app } = await appOn(dying.store);

    const result = await session.send('write four lines', { key: 'turn-1' });

    expect(result).toMatchObject({ status: 'completed', reply: FINAL_REPLY, rounds: 4 });
    expect(shape(session.transcript)).toEqual(UNINTERRUPTED);
    expect(modelCalls()).toBe(4);
    expect(new Set(toolRuns().map((l) => l.key)).size).toBe(4);
    // The opening step with the first response, then each result and response as it came (8 appends), then the checkpoint.
    expect(dying.writes()).toBe(9);
    const stored = (await dying.store.load('s1'))!;
    expect(stored.steps).toBeUndefined();
    expect(stored.turns).toEqual([expect.objectContaining({ index: 0, key: 'turn-1', status: 'completed' })]);
    await app.stop();
  });

  // Writes 1..8 are journal steps (after a response, or a result); write 9 is the checkpoint.
  it.each([1, 2, 3, 4, 5, 6, 7, 8, 9])(
    'goes on after a crash right after write %i: nothing completed runs again, the turn lands once',
    async (write) => {
      const { first, next } = stores(kind);
      useLedgers(files);
      const dying = dyingStore(first());
      const one = await appOn(dying.store);
      dying.dieAfterWrite(write);
      void one.session.send('write four lines', { key: 'turn-1' });
      while (!dying.dead()) await new Promise((resolve) => setTimeout(resolve, 2));
      const atCrash = (await loaded(next))?.steps;
      const finished = finishedKeys(atCrash);
      const finishedIds = ((atCrash ?? []) as { k: string; record?: { callId: string } }[])
        .filter((st) => st.k === 'result')
        .map((st) => st.record!.callId);

      const two = await appOn(next());
      const result = await two.session.send('write four lines', { key: 'turn-1', waitForLease: 5_000 });

      expect(result).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
      // No completed model call is made again, no finished call runs again.
      expect(modelCalls()).toBe(4);
      expectRunsOnce(finished);
      // Tokens split by model, agent, plugin and owner as if nothing had happened (the journal keeps each round's usage);
      // a turn that had landed (write 9, the checkpoint) answers from its record, which keeps the totals by model.
      const { inputTokens, outputTokens, totalTokens, byModel } = uninterruptedUsage as Record<string, unknown>;
      expect(tokens(result.usage)).toEqual(
        write === 9 ? { inputTokens, outputTokens, totalTokens, byModel } : uninterruptedUsage,
      );
      // One turn, its message once, the transcript as an uninterrupted turn has it.
      const stored = (await two.app.stop(), await loaded(next))!;
      expect(stored.turns.map((t) => [t.index, t.key, t.status])).toEqual([[0, 'turn-1', 'completed']]);
      expect(stored.steps).toBeUndefined();
      expect(shape(stored.transcript)).toEqual(UNINTERRUPTED);
      // The turn's opening hooks ran once; no finished call's hooks ran again; the turn ended once.
      expect(hookRuns['message.received']).toBe(1);
      expect(hookRuns['task.start']).toBe(1);
      expect(hookRuns['planning.started']).toBe(1);
      expect(hookRuns['llm.before']).toBe(4);
      // A call whose result was journalled never runs its hooks again; one that was running may (in doubt).
      for (const id of finishedIds) expect(beforeCallIds.filter((c) => c === id)).toHaveLength(1);
      expect(beforeCallIds.length).toBeLessThanOrEqual(4 + (4 - finishedIds.length));
      expect(hookRuns['task.end']).toBe(1);
    },
  );

  it.each([1, 2, 3, 4])(
    'runs a retry tool that a crash cut off mid-run (call %i) again with the same idempotency key, and nothing else',
    async (cut) => {
      const { first, next } = stores(kind);
      const dying = dyingStore(first());
      useLedgers(files, (n) => {
        if (n === cut && !dying.dead()) {
          dying.die();
          return new Promise<never>(() => undefined);
        }
      });
      const one = await appOn(dying.store);
      void one.session.send('write four lines', { key: 'turn-1' });
      while (!dying.dead()) await new Promise((resolve) => setTimeout(resolve, 2));
      const finished = finishedKeys((await loaded(next))?.steps);

      const two = await appOn(next());
      const result = await two.session.send('write four lines', { key: 'turn-1', waitForLease: 5_000 });

      expect(result).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
      expect(modelCalls()).toBe(4);
      const cutRuns = toolRuns().filter((l) => l.n === cut);
      expect(cutRuns).toHaveLength(2);
      expect(cutRuns[1]!.key).toBe(cutRuns[0]!.key);
      expectRunsOnce(finished);
      expect(shape((await loaded(next))!.transcript)).toEqual(UNINTERRUPTED);
      await two.app.stop();
    },
  );

  it('parks `ask` tools that a crash cut off mid-run as retry/skip decisions; retry runs one again with the same key, skip never', async () => {
    const { first, next } = stores(kind);
    const dying = dyingStore(first());
    const paying = new Set<number>();
    useLedgers(files, (n) => {
      if (dying.dead() || (n !== 2 && n !== 3)) return;
      // Pays 2 and 3 run side by side (round 2): the process dies once both have paid, before either returns.
      paying.add(n);
      if (paying.size === 2) dying.die();
      return new Promise<never>(() => undefined);
    });
    const one = await appOn(dying.store, 'ledger.pay');
    void one.session.send('pay four', { key: 'turn-1' });
    while (!dying.dead()) await new Promise((resolve) => setTimeout(resolve, 2));

    const two = await appOn(next(), 'ledger.pay');
    const parked = await two.session.send('pay four', { key: 'turn-1', waitForLease: 5_000 });

    expect(parked.status).toBe('suspended');
    const waiting = parked.suspended!;
    expect(waiting.map((p) => JSON.parse(p.arguments).n)).toEqual([2, 3]);
    for (const call of waiting)
      expect(call).toMatchObject({
        tool: 'ledger.pay',
        ticket: { allowedDecisions: ['retry', 'skip'], data: { interrupted: true } },
      });
    expect(
      toolRuns()
        .map((l) => l.n)
        .sort(),
    ).toEqual([1, 2, 3]);
    const [pay2, pay3] = waiting.map((p) => p.callId);
    await expect(two.session.resume({ decisions: [{ callId: pay2!, decision: 'approve' }] })).rejects.toMatchObject({
      code: 'InvalidDecision',
    });

    const done = await two.session.resume({
      decisions: [
        { callId: pay2!, decision: 'retry' },
        { callId: pay3!, decision: 'skip' },
      ],
    });

    expect(done).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
    const twice = toolRuns().filter((l) => l.n === 2);
    expect(twice).toHaveLength(2);
    expect(twice[1]!.key).toBe(twice[0]!.key);
    expect(
      toolRuns()
        .map((l) => l.n)
        .sort(),
    ).toEqual([1, 2, 2, 3, 4]);
    expect(done.toolCalls.find((c) => c.callId === pay3)).toMatchObject({ ok: false, error: { code: 'Skipped' } });
    expect(modelCalls()).toBe(4);
    await two.app.stop();
  });

  // The resume's writes: the decisions claimed (1), pay 2's start and result in the suspension record (2, 3), then its step
  // journal — the opening with the turn so far (4), round 3's response (5), pay 4 started (6) and finished (7), the answer (8) — and the checkpoint.
  it.each([4, 5, 7, 8])(
    'goes on with a resumed turn that a crash cut off right after its write %i, with the usage split of an uncut one',
    async (write) => {
      const { first, next } = stores(kind);
      const { app, waiting } = await parkPays(first(), files, next);
      await app.stop();
      // The resume runs in an app whose store dies right after its `write`-th write.
      const dying = dyingStore(next());
      const resuming = await appOn(dying.store, 'ledger.pay');
      dying.dieAfterWrite(write);
      void resuming.session.resume({ decisions: decide(waiting) }).catch(() => undefined);
      while (!dying.dead()) await new Promise((resolve) => setTimeout(resolve, 2));

      // The resume tried again, with the same decisions (all applied already): the turn goes on to its end.
      const three = await appOn(next(), 'ledger.pay');
      const done = await three.session.resume({ decisions: decide(waiting), waitForLease: 5_000 });

      expect(done).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
      expect(modelCalls()).toBe(4);
      expect(
        toolRuns()
          .map((l) => l.n)
          .sort(),
      ).toEqual([1, 2, 2, 3, 4]);
      expect(tokens(done.usage)).toEqual(resumedUsage);
      await three.app.stop();
    },
  );

  it('answers a send whose key already landed with that turn, running nothing', async () => {
    const { first } = stores(kind);
    useLedgers(files);
    const { session, app } = await appOn(first());
    await session.send('write four lines', { key: 'turn-1' });

    const again = await session.send('write four lines', { key: 'turn-1' });

    expect(again).toMatchObject({ status: 'completed', reply: FINAL_REPLY, rounds: 4, toolCalls: [] });
    expect(modelCalls()).toBe(4);
    expect(session.transcript).toHaveLength(UNINTERRUPTED.length);
    await app.stop();
  });

  it('lands a cut-off "yes" after an earlier "yes" as its own turn', async () => {
    const { first, next } = stores(kind);
    useLedgers(files);
    const dying = dyingStore(first());
    const one = await appOn(dying.store);
    await one.session.send('yes', { key: 'm-1' });
    dying.dieAfterWrite(dying.writes() + 3);
    void one.session.send('yes', { key: 'm-2' });
    while (!dying.dead()) await new Promise((resolve) => setTimeout(resolve, 2));

    const two = await appOn(next());
    const result = await two.session.send('yes', { key: 'm-2', waitForLease: 5_000 });
    const earlier = await two.session.send('yes', { key: 'm-1' });

    expect(result).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
    expect(earlier).toMatchObject({ status: 'completed', toolCalls: [] });
    const stored = (await loaded(next))!;
    expect(stored.turns.map((t) => [t.index, t.key, t.input])).toEqual([
      [0, 'm-1', 'yes'],
      [1, 'm-2', 'yes'],
    ]);
    expect(modelCalls()).toBe(8);
    expect(toolRuns()).toHaveLength(8);
    await two.app.stop();
  });

  it('goes on with a cut-off turn first when the next message has another key, then runs that message', async () => {
    const { first, next } = stores(kind);
    useLedgers(files);
    const dying = dyingStore(first());
    const one = await appOn(dying.store);
    dying.dieAfterWrite(3);
    void one.session.send('write four lines', { key: 'turn-1' });
    while (!dying.dead()) await new Promise((resolve) => setTimeout(resolve, 2));

    const two = await appOn(next());
    const result = await two.session.send('write four lines', { key: 'turn-2', waitForLease: 5_000 });

    expect(result).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
    const stored = (await loaded(next))!;
    expect(stored.turns.map((t) => [t.index, t.key])).toEqual([
      [0, 'turn-1'],
      [1, 'turn-2'],
    ]);
    expect(modelCalls()).toBe(8);
    expect(new Set(toolRuns().map((l) => l.key)).size).toBe(8);
    await two.app.stop();
  });
});
