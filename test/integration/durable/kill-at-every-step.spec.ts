import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  PostgresStore,
  ScriptedModel,
  SqliteStore,
  Trellis,
  type SessionStore,
  type TurnResult,
} from '../../../index.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService, POSTGRES_URL } from '../../support/services.js';
import { PROJECT_ROOT } from '../../support/ts-node-child.js';
import { sharedTranspiledProject } from '../../support/transpiled-tree.js';
import {
  FINAL_REPLY,
  LedgerPlugin,
  readLedger,
  stepsScript,
  useLedgers,
  type Ledgers,
} from '../../support/steps-workload.js';

/**
 * Durable steps across a real SIGKILL (issue 25): a child process runs a turn of three tool
 * rounds (one call, two at once, one) on SQLite or PostgreSQL and kills itself right after
 * each store write in turn — after each journalled model response, between each tool result
 * and the next model call, after the final answer, after the checkpoint — and in the middle of
 * each tool run. This process then opens the same store and sends the same message with the
 * same key, as a retried request or job would. The model gives fresh random call ids; tools and
 * model count their runs in files. Counted for every kill: lost turns, doubled turns, finished
 * calls run again, journalled model calls repeated, in-doubt calls and what became of them.
 */
const PROCESS_TIMEOUT_MS = 60_000;
/** The children run the project transpiled once to JavaScript (they start in about a second). */
let child: string;

beforeAll(() => {
  child = sharedTranspiledProject()('test/support/steps-process.ts');
}, 120_000);

/** Store writes of the workload's turn: 8 journal appends, then the checkpoint. */
const WRITES = 9;
const KILLS = [...Array.from({ length: WRITES }, (_, i) => `write:${i + 1}`), 'tool:1', 'tool:2', 'tool:3', 'tool:4'];

interface Line {
  readonly key: string;
  readonly n: number;
}

type StoreKind = 'sqlite' | 'postgres';

/** What every kill of one store came to, summed: printed once, and asserted per kill. */
interface Tally {
  kills: number;
  lostTurns: number;
  doubledTurns: number;
  finishedCallsRunAgain: number;
  modelCallsRepeated: number;
  inDoubtRerunSameKey: number;
  rerunWithAnotherKey: number;
}
const empty = (): Tally => ({
  kills: 0,
  lostTurns: 0,
  doubledTurns: 0,
  finishedCallsRunAgain: 0,
  modelCallsRepeated: 0,
  inDoubtRerunSameKey: 0,
  rerunWithAnotherKey: 0,
});
const tally: Record<StoreKind, Tally> = { sqlite: empty(), postgres: empty() };

let dir: string;
let files: Ledgers;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-kill-'));
  files = { model: join(dir, 'model.txt'), tools: join(dir, 'tools.txt') };
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

afterAll(() => {
  for (const [store, t] of Object.entries(tally))
    if (t.kills > 0) process.stdout.write(`durable steps, ${store}: ${JSON.stringify(t)}\n`);
});

/** Runs the child with `kill`; resolves with its exit signal and output. */
function runChild(
  options: object,
): Promise<{ signal: NodeJS.Signals | null; code: number | null; stdout: string; stderr: string }> {
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
      reject(new Error(`steps process did not finish in ${PROCESS_TIMEOUT_MS} ms:\n${stdout}\n${stderr}`));
    }, PROCESS_TIMEOUT_MS);
    running.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ signal, code, stdout, stderr });
    });
  });
}

/** The keys of calls whose result the store's journal holds (`<session>:<turn>:<round>:<position>`). */
function finishedKeys(steps: readonly unknown[] | undefined): Set<string> {
  const keys = new Set<string>();
  for (const step of (steps ?? []) as { k: string; round: number; at: number }[])
    if (step.k === 'result') keys.add(`s1:0:${step.round}:${step.at}`);
  return keys;
}

async function recover(
  store: SessionStore,
  tool: 'ledger.write' | 'ledger.pay',
): Promise<{ app: Trellis; result: TurnResult; session: ReturnType<ReturnType<Trellis['agent']>['session']> }> {
  useLedgers(files);
  const app = Trellis.create({ store, leaseTtlMs: 1_000 });
  await app.install(LedgerPlugin);
  const session = app
    .agent({
      name: 'writer',
      model: new ScriptedModel(stepsScript(tool)),
      instructions: 'Write the lines.',
      toolConcurrency: 2,
    })
    .session('s1');
  const result = await session.send('write four lines', { key: 'turn-1', waitForLease: 10_000 });
  return { app, result, session };
}

describe.each<StoreKind>(['sqlite', 'postgres'])('a turn killed at every step boundary, on %s', (kind) => {
  let schemas: PostgresSchemas | undefined;
  let available = true;

  beforeAll(async () => {
    if (kind === 'postgres') {
      available = await haveService('postgres', 'durable steps kill test on PostgreSQL');
      if (available) schemas = new PostgresSchemas();
    }
  });

  afterAll(async () => {
    await schemas?.dropAll();
  });

  /** The child's store options, and this process's own store on the same data. */
  async function target(): Promise<{ options: object; open: () => Promise<SessionStore> }> {
    if (kind === 'sqlite') {
      const path = join(dir, 'trellis.db');
      return { options: { store: 'sqlite', target: path }, open: async () => SqliteStore.open(path) };
    }
    const schema = schemas!.next();
    return {
      options: { store: 'postgres', target: schema, url: POSTGRES_URL },
      open: () => PostgresStore.open({ url: POSTGRES_URL, schema, maxConnections: 4 }),
    };
  }

  it.each(KILLS)(
    'kill at %s: the turn lands once, nothing finished runs again, in-doubt calls rerun with their key',
    async (kill) => {
      if (!available) return;
      const { options, open } = await target();
      const killed = await runChild({ ...options, dir, tool: 'ledger.write', key: 'turn-1', kill });
      expect({ signal: killed.signal, stderr: killed.stderr }).toEqual({
        signal: 'SIGKILL',
        stderr: expect.any(String),
      });

      const store = await open();
      try {
        const atKill = await store.load('s1');
        const finished = finishedKeys(atKill?.steps);
        const modelBefore = readLedger(files.model, Number).length;
        const { app, result } = await recover(store, 'ledger.write');
        const stored = (await store.load('s1'))!;
        await app.stop();
        const runs = readLedger<Line>(files.tools);
        const modelCalls = readLedger(files.model, Number).length;
        const t = tally[kind];
        t.kills++;
        // Lost or doubled turns: exactly one turn record, completed, its message once.
        if (result.status !== 'completed' || stored.turns.length === 0) t.lostTurns++;
        if (stored.turns.length > 1 || stored.transcript.filter((m) => m.role === 'user').length > 1) t.doubledTurns++;
        // Finished calls run again, and in-doubt ones: by idempotency key.
        const byKey = new Map<string, number>();
        for (const line of runs) byKey.set(line.key, (byKey.get(line.key) ?? 0) + 1);
        for (const [key, times] of byKey) {
          if (times > 1 && finished.has(key)) t.finishedCallsRunAgain++;
          else if (times > 1) t.inDoubtRerunSameKey++;
        }
        // Every line is written under one key, whatever ids the model gave on either side of the kill.
        const keysOfN = new Map<number, Set<string>>();
        for (const line of runs) keysOfN.set(line.n, (keysOfN.get(line.n) ?? new Set()).add(line.key));
        for (const keys of keysOfN.values()) if (keys.size > 1) t.rerunWithAnotherKey++;
        // Model calls: 4 in all, none repeated (a kill only ever comes after a journalled response).
        if (modelCalls > 4) t.modelCallsRepeated += modelCalls - 4;

        expect(result).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
        expect(stored.turns.map((turn) => [turn.index, turn.key, turn.status])).toEqual([[0, 'turn-1', 'completed']]);
        expect(stored.steps).toBeUndefined();
        expect(stored.transcript.map((m) => m.role)).toEqual([
          'user',
          'assistant',
          'tool',
          'assistant',
          'tool',
          'tool',
          'assistant',
          'tool',
          'assistant',
        ]);
        expect(modelCalls).toBe(4);
        expect(modelBefore).toBeLessThanOrEqual(4);
        expect([...keysOfN.keys()].sort()).toEqual([1, 2, 3, 4]);
        for (const keys of keysOfN.values()) expect(keys.size).toBe(1);
        for (const key of finished) expect(byKey.get(key)).toBe(1);
        for (const times of byKey.values()) expect(times).toBeLessThanOrEqual(2);
        if (kill.startsWith('tool:')) expect(byKey.get([...keysOfN.get(Number(kill.slice(5)))!][0]!)).toBe(2);
      } finally {
        await store.close();
      }
    },
    PROCESS_TIMEOUT_MS * 2,
  );

  it(
    'kill in the middle of an `ask` tool: the call comes back as a retry/skip decision, and retry runs it once more with its key',
    async () => {
      if (!available) return;
      const { options, open } = await target();
      const killed = await runChild({ ...options, dir, tool: 'ledger.pay', key: 'turn-1', kill: 'tool:1' });
      expect(killed.signal).toBe('SIGKILL');

      const store = await open();
      try {
        const { app, result, session } = await recover(store, 'ledger.pay');
        expect(result.status).toBe('suspended');
        expect(result.suspended).toEqual([
          expect.objectContaining({
            tool: 'ledger.pay',
            ticket: expect.objectContaining({ allowedDecisions: ['retry', 'skip'] }),
          }),
        ]);
        expect(readLedger<Line>(files.tools).map((l) => l.n)).toEqual([1]);

        const done = await session.resume({ decisions: [{ callId: result.suspended![0]!.callId, decision: 'retry' }] });
        await app.stop();

        expect(done).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
        const ones = readLedger<Line>(files.tools).filter((l) => l.n === 1);
        expect(ones).toHaveLength(2);
        expect(ones[1]!.key).toBe(ones[0]!.key);
        expect(readLedger(files.model, Number)).toHaveLength(4);
      } finally {
        await store.close();
      }
    },
    PROCESS_TIMEOUT_MS * 2,
  );
});
