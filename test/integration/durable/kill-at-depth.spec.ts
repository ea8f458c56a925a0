import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresStore, SqliteStore, type SessionStore, type TurnResult } from '../../../index.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService, POSTGRES_URL } from '../../support/services.js';
import { PROJECT_ROOT } from '../../support/ts-node-child.js';
import { sharedTranspiledProject } from '../../support/transpiled-tree.js';
import { readLedger } from '../../support/steps-workload.js';
import {
  CLOSER_LINE,
  depthApp,
  FINAL_REPLY,
  MESSAGE,
  MODEL_CALLS,
  TURN_KEY,
  type DepthLine,
} from '../../support/depth-workload.js';

/**
 * Durable steps at depth across a real SIGKILL (issue 25, item 5). One turn of `desk` asks the
 * `writer` sub-agent (agent as tool) for two lines, which it writes in two tool rounds of its
 * own turn, then hands the conversation to `closer`, which writes a third line and answers
 * (support/depth-workload.ts). A child process runs that turn on SQLite and on PostgreSQL side
 * by side and kills itself right after each store write of the turn, at either level — inside
 * the sub-agent (after its model calls, between its tool's result and its next model call,
 * after its answer, after its checkpoint), between its answer and the caller's next model
 * call, and in the handoff's continuation — and in the middle of each tool run. This process
 * then opens each store and sends the same message with the same key, as a retried request or
 * job would. Every model gives fresh random call ids and counts its calls; every tool run is
 * counted with its idempotency key. For every kill, at every level: lost turns, doubled turns,
 * finished calls run again, journalled model calls repeated, in-doubt calls and their keys.
 */
const PROCESS_TIMEOUT_MS = 60_000;
let child: string;

/**
 * Store writes of the workload's turn, in order: desk's first response (1); the writer's
 * turn — its first response (2), line 1 (3), its second response (4), line 2 (5), its answer
 * (6), its checkpoint (7); desk's result of ask_writer (8), desk's handoff response (9), the
 * handoff's result (10); closer's first response (11), line 3 (12), its answer (13); the
 * checkpoint (14).
 */
const WRITES = 14;
/** The `ask` case: the writer's tool is `lines.pay`, killed in its first run. */
const ASK = 'ask';
const KILLS = [
  ...Array.from({ length: WRITES }, (_, i) => `write:${i + 1}`),
  'tool:1',
  'tool:2',
  `tool:${CLOSER_LINE}`,
];

type StoreKind = 'sqlite' | 'postgres';

interface Tally {
  kills: number;
  lostTurns: number;
  doubledTurns: number;
  finishedCallsRunAgain: number;
  journalledModelCallsRepeated: number;
  inDoubtRerunSameKey: number;
  rerunWithAnotherKey: number;
}
const empty = (): Tally => ({
  kills: 0,
  lostTurns: 0,
  doubledTurns: 0,
  finishedCallsRunAgain: 0,
  journalledModelCallsRepeated: 0,
  inDoubtRerunSameKey: 0,
  rerunWithAnotherKey: 0,
});
const tally: Record<StoreKind, Tally> = { sqlite: empty(), postgres: empty() };

let root: string;
let schemas: PostgresSchemas | undefined;
let kinds: StoreKind[] = ['sqlite'];
/** Every kill point's store, by kill point: one child process ran them all. */
const planned = new Map<string, Target[]>();
let killed: { signal: NodeJS.Signals | null; stdout: string; stderr: string };

/** One store of a kill point: the child's run on it, and this process's own store on the same data. */
interface Target {
  readonly kind: StoreKind;
  readonly dir: string;
  readonly run: object;
  readonly open: () => Promise<SessionStore>;
}

function target(kind: StoreKind, name: string, run: { tool: string; kill?: string }): Target {
  const dir = join(root, `${kind}-${name}`);
  mkdirSync(dir);
  if (kind === 'sqlite') {
    const path = join(dir, 'trellis.db');
    return { kind, dir, run: { ...run, store: 'sqlite', target: path, dir }, open: async () => SqliteStore.open(path) };
  }
  const schema = schemas!.next();
  return {
    kind,
    dir,
    run: { ...run, store: 'postgres', target: schema, url: POSTGRES_URL, dir },
    open: () => PostgresStore.open({ url: POSTGRES_URL, schema, maxConnections: 4 }),
  };
}

/**
 * One child process runs the turn once per kill point and store, each run in an app and a
 * store of its own, stopped at its own point; the process is SIGKILLed once all are there.
 */
beforeAll(async () => {
  child = sharedTranspiledProject()('test/support/depth-process.ts');
  if (await haveService('postgres', 'durable steps kill test at depth on PostgreSQL')) {
    schemas = new PostgresSchemas();
    kinds = ['sqlite', 'postgres'];
  }
  root = mkdtempSync(join(tmpdir(), 'trellis-kill-depth-'));
  for (const kill of KILLS)
    planned.set(
      kill,
      kinds.map((kind) => target(kind, kill.replace(':', '-'), { tool: 'lines.write', kill })),
    );
  planned.set(
    ASK,
    kinds.map((kind) => target(kind, 'ask', { tool: 'lines.pay', kill: 'tool:1' })),
  );
  killed = await runChild({ runs: [...planned.values()].flat().map((t) => t.run) });
  reference = await uninterrupted();
}, 180_000);

/** What the turn comes to when nothing kills it: what every recovered turn must come to as well. */
interface Reference {
  readonly result: TurnResult;
  readonly writes: number;
  readonly models: string[];
  readonly transcript: string[];
  readonly usage: { top: unknown; child: unknown };
}
let reference: Reference;

async function uninterrupted(): Promise<Reference> {
  const dir = join(root, 'uninterrupted');
  mkdirSync(dir);
  const real = SqliteStore.open(join(dir, 'trellis.db'));
  let writes = 0;
  const counting = new Proxy(real, {
    get(t, prop) {
      const value = Reflect.get(t, prop, t) as unknown;
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(t);
      if (prop !== 'appendSteps' && prop !== 'checkpoint') return method;
      return (...args: unknown[]) => (writes++, method(...args));
    },
  });
  const { app, session } = await depthApp(counting, dir);
  const result = await session.send(MESSAGE, { key: TURN_KEY });
  const levels = await usageOf(real);
  const transcript = (await real.load('s1'))!.transcript.map((m) => m.content);
  await app.stop();
  await real.close();
  return { result, writes, models: readLedger(join(dir, 'model.txt'), String), transcript, usage: levels };
}

/** The usage the store recorded for the turn at each level (its tokens; tool time is the clock's). */
async function usageOf(store: SessionStore): Promise<{ top: unknown; child: unknown }> {
  const [child] = await childSessions(store);
  return {
    top: tokens((await store.load('s1'))!.turns[0]?.usage),
    child: child === undefined ? undefined : tokens((await store.load(child))!.turns[0]?.usage),
  };
}

/** `usage` without its time figures (`toolMs`, `hookMs`, `modelMs`), which measure the clock and differ from run to run. */
function tokens(usage: unknown): unknown {
  return JSON.parse(
    JSON.stringify(usage ?? null, (key, value: unknown) =>
      key === 'toolMs' || key === 'hookMs' || key === 'modelMs' ? undefined : value,
    ),
  );
}

afterAll(async () => {
  for (const [store, t] of Object.entries(tally))
    if (t.kills > 0) process.stdout.write(`durable steps at depth, ${store}: ${JSON.stringify(t)}\n`);
  await schemas?.dropAll();
  rmSync(root, { recursive: true, force: true });
});

/** Runs `check` on every store of a kill point, and fails with the first failure once all are done. */
async function onEachStore(kill: string, check: (target: Target) => Promise<void>): Promise<void> {
  const settled = await Promise.allSettled(planned.get(kill)!.map(check));
  for (const outcome of settled) if (outcome.status === 'rejected') throw outcome.reason;
}

function runChild(options: object): Promise<{ signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const running = spawn(process.execPath, ['--no-warnings', child, JSON.stringify(options)], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  running.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  running.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      running.kill('SIGKILL');
      reject(new Error(`depth process did not finish in ${PROCESS_TIMEOUT_MS} ms:\n${stdout}\n${stderr}`));
    }, PROCESS_TIMEOUT_MS);
    running.on('exit', (_code, signal) => {
      clearTimeout(timer);
      resolve({ signal, stdout, stderr });
    });
  });
}

/** What the store held at the kill, at every level: the steps it journalled, and the turns that had landed. */
interface AtKill {
  /** Keys (`<session>:<turn>:<round>:<position>`) of the calls whose result a journal held. */
  readonly finished: Set<string>;
  /** Sessions with a landed turn (all their calls finished). */
  readonly landed: Set<string>;
  /** Model calls (`<agent>:<round>`) whose response a journal held, or whose turn had landed. */
  readonly models: Set<string>;
}

async function atKill(store: SessionStore): Promise<AtKill> {
  const out: AtKill = { finished: new Set(), landed: new Set(), models: new Set() };
  for (const { id } of await store.list()) {
    const stored = (await store.load(id))!;
    if (stored.turns.some((t) => t.status === 'completed')) {
      out.landed.add(id);
      for (const call of id === 's1' ? MODEL_CALLS : MODEL_CALLS.filter((c) => c.startsWith('writer:')))
        out.models.add(call);
    }
    let agent = '';
    let turn = 0;
    for (const step of (stored.steps ?? []) as {
      k: string;
      agent?: string;
      turn?: number;
      round: number;
      at: number;
    }[]) {
      if (step.k === 'open') ({ agent, turn } = { agent: step.agent!, turn: step.turn! });
      // Journal rounds count from 1, the models' ledger from 0.
      if (step.k === 'model') out.models.add(`${agent}:${step.round - 1}`);
      if (step.k === 'result') out.finished.add(`${id}:${turn}:${step.round}:${step.at}`);
    }
  }
  return out;
}

async function recover(target: Target, tool: 'lines.write' | 'lines.pay') {
  const store = await target.open();
  const before = await atKill(store);
  const modelBefore = readLedger(join(target.dir, 'model.txt'), String);
  const { app, session } = await depthApp(store, target.dir, tool);
  const result = await session.send(MESSAGE, { key: TURN_KEY, waitForLease: 10_000 });
  return { store, app, session, result, before, modelBefore };
}

/** The child sessions the turn made: exactly one (the writer's, named after desk's call). */
async function childSessions(store: SessionStore): Promise<string[]> {
  return (await store.list()).map((s) => s.id).filter((id) => id !== 's1');
}

describe('a turn with a sub-agent and a handoff, killed at every step boundary at every level', () => {
  it('was killed, once every run had reached its point', () => {
    expect({ signal: killed.signal, stdout: killed.stdout }).toEqual({ signal: 'SIGKILL', stdout: '' });
  });

  it('makes 14 store writes and 7 model calls when nothing kills it', () => {
    expect(reference.result).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
    expect(reference.writes).toBe(WRITES);
    expect(reference.models).toEqual(['desk:0', 'writer:0', 'writer:1', 'writer:2', 'desk:1', 'closer:2', 'closer:3']);
  });

  it.each(KILLS)(
    'kill at %s: one turn at each level, nothing finished runs again, no journalled model call is made again',
    async (kill) => {
      await onEachStore(kill, async (target) => {
        const { store, app, result, before, modelBefore } = await recover(target, 'lines.write');
        try {
          const stored = (await store.load('s1'))!;
          const children = await childSessions(store);
          const childTurns = children.length === 1 ? (await store.load(children[0]!))!.turns : [];
          const usage = await usageOf(store);
          await app.stop();
          const runs = readLedger<DepthLine>(join(target.dir, 'tools.txt'));
          const models = readLedger(join(target.dir, 'model.txt'), String);

          const t = tally[target.kind];
          t.kills++;
          if (result.status !== 'completed' || stored.turns.length === 0 || childTurns.length === 0) t.lostTurns++;
          if (stored.turns.length > 1 || childTurns.length > 1 || children.length > 1) t.doubledTurns++;
          const byKey = new Map<string, DepthLine[]>();
          for (const line of runs) byKey.set(line.key, [...(byKey.get(line.key) ?? []), line]);
          const wasFinished = (line: DepthLine) => before.finished.has(line.key) || before.landed.has(line.session);
          for (const lines of byKey.values()) {
            if (lines.length > 1 && wasFinished(lines[0]!)) t.finishedCallsRunAgain++;
            else if (lines.length > 1) t.inDoubtRerunSameKey++;
          }
          const keysOfN = new Map<number, Set<string>>();
          for (const line of runs) keysOfN.set(line.n, (keysOfN.get(line.n) ?? new Set()).add(line.key));
          for (const keys of keysOfN.values()) if (keys.size > 1) t.rerunWithAnotherKey++;
          for (const call of MODEL_CALLS)
            if (before.models.has(call) && models.filter((m) => m === call).length > 1)
              t.journalledModelCallsRepeated++;

          expect(result).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
          expect(stored.turns.map((turn) => [turn.index, turn.key, turn.status])).toEqual([[0, TURN_KEY, 'completed']]);
          expect(stored.steps).toBeUndefined();
          expect(stored.transcript.map((m) => m.role)).toEqual([
            'user',
            'assistant',
            'tool',
            'assistant',
            'tool',
            'assistant',
            'tool',
            'assistant',
          ]);
          // The transcript and the usage as the uninterrupted turn has them: no step lost or counted twice.
          expect(stored.transcript.map((m) => m.content)).toEqual(reference.transcript);
          // A turn that had landed answers from its record, which keeps the totals and the split by model.
          const landed = before.landed.has('s1');
          const { inputTokens, outputTokens, totalTokens, byModel } = reference.result.usage;
          expect(tokens(result.usage)).toEqual(
            tokens(landed ? { inputTokens, outputTokens, totalTokens, byModel } : reference.result.usage),
          );
          expect(usage).toEqual(reference.usage);
          // The sub-agent: one child session, one turn, keyed by desk's call (round 1, position 0) — the same key after the kill.
          expect(children).toHaveLength(1);
          expect(childTurns.map((turn) => [turn.key, turn.status])).toEqual([['s1:0:1:0', 'completed']]);
          // Every model call of every level exactly once: each completed before the kill was journalled, and none was asked again.
          for (const call of modelBefore) expect(before.models).toContain(call);
          expect([...models].sort()).toEqual([...MODEL_CALLS].sort());
          // Every line under one key, whatever ids the models gave; finished calls once; in-doubt ones at most twice.
          expect([...keysOfN.keys()].sort()).toEqual([1, 2, 3]);
          for (const keys of keysOfN.values()) expect(keys.size).toBe(1);
          for (const lines of byKey.values()) if (wasFinished(lines[0]!)) expect(lines).toHaveLength(1);
          for (const lines of byKey.values()) expect(lines.length).toBeLessThanOrEqual(2);
          const cut = kill.startsWith('tool:') ? Number(kill.slice(5)) : undefined;
          for (const [n, keys] of keysOfN) expect(byKey.get([...keys][0]!)!.length).toBe(n === cut ? 2 : 1);
        } finally {
          await store.close();
        }
      });
    },
    30_000,
  );

  it("kill in the middle of the sub-agent's `ask` tool: the call comes back to the top as a retry/skip decision, and retry runs it once more with its key", async () => {
    await onEachStore(ASK, async (target) => {
      const { store, app, session, result } = await recover(target, 'lines.pay');
      try {
        expect(result.status).toBe('suspended');
        expect(result.suspended).toEqual([
          expect.objectContaining({
            tool: 'lines.pay',
            path: ['desk', 'writer'],
            ticket: expect.objectContaining({ allowedDecisions: ['retry', 'skip'] }),
          }),
        ]);
        expect(readLedger<DepthLine>(join(target.dir, 'tools.txt')).map((l) => l.n)).toEqual([1]);

        const done: TurnResult = await session.resume({
          decisions: [{ callId: result.suspended![0]!.callId, decision: 'retry' }],
        });
        await app.stop();

        expect(done).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
        const runs = readLedger<DepthLine>(join(target.dir, 'tools.txt'));
        const ones = runs.filter((l) => l.n === 1);
        expect(ones).toHaveLength(2);
        expect(ones[1]!.key).toBe(ones[0]!.key);
        expect(runs.filter((l) => l.n !== 1).map((l) => l.n)).toEqual([2, 3]);
        expect([...readLedger(join(target.dir, 'model.txt'), String)].sort()).toEqual([...MODEL_CALLS].sort());
      } finally {
        await store.close();
      }
    });
  }, 30_000);
});
