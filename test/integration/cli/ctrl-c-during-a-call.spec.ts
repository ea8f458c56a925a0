import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { ScriptedModel, SqliteStore, Trellis, type ModelRequest } from '../../../index.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { SlowPaymentsPlugin } from '../../fixtures/cli/slow-payments.plugin.js';
import { fakeCliIo } from '../../support/fake-cli-io.js';
import { PROJECT_ROOT, TS_NODE_ARGS, tsNodeEnv } from '../../support/ts-node-child.js';

/**
 * Ctrl-C (a real SIGINT to a real `trellis` process) while a payment tool runs: the tool
 * writes its charge at once and takes 1.5 s more (6 s for the double press), ignoring its signal, as a payment API call
 * does once sent. Issue 34: the payment happened, the turn was recorded `cancelled` with no
 * trace of the call and nothing pending, and a second Ctrl-C left the session `SessionBusy`.
 */
const CLI = fileURLToPath(new URL('./support/cli-process.ts', import.meta.url));
const PLUGIN = fileURLToPath(new URL('../../fixtures/cli/slow-payments.plugin.ts', import.meta.url));
const TESTING = fileURLToPath(new URL('../../../testing.ts', import.meta.url));
/** ts-node compiles the kernel on every start; on a busy machine that takes a while. */
const PROCESS_TIMEOUT_MS = 90_000;

// Fresh random call ids, as real providers give, so ids never repeat across processes.
const script = (request: ModelRequest) => {
  const last = request.messages.at(-1)!;
  if (last.role === 'tool') return `Done: ${last.content}`;
  return {
    toolCalls: [
      {
        id: `call_${randomUUID()}`,
        name: 'payments.charge',
        args: { amount: Number(/\d+/.exec(String(last.content))![0]) },
      },
    ],
  };
};

let cwd: string;
let db: string;
beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-ctrl-c-call-')));
  db = join(cwd, 'pay.db');
  writeFileSync(
    join(cwd, 'trellis.config.mjs'),
    `import { randomUUID } from 'node:crypto';
     import { ScriptedModel } from '${TESTING}';
     import { SlowPaymentsPlugin } from '${PLUGIN}';
     const script = ${script.toString()};
     export default { agent: { name: 'payer' }, plugins: [SlowPaymentsPlugin], store: 'pay.db', model: new ScriptedModel(script) };`,
  );
});
afterEach(() => rmSync(cwd, { recursive: true, force: true }));

interface Exit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Milliseconds from the first SIGINT to the exit. */
  readonly afterInterruptMs: number;
}

/** Runs `trellis <args>` in a child process and sends it `presses` SIGINTs once the charge is in the ledger (the tool is running). */
function interruptDuringCharge(args: readonly string[], presses: number, confirmMs = 1_500): Promise<Exit> {
  const child = spawn(process.execPath, [...TS_NODE_ARGS, CLI, cwd, ...args], {
    cwd: PROJECT_ROOT,
    env: tsNodeEnv({ PAYMENT_CONFIRM_MS: String(confirmMs) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let interruptedAt = 0;
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ledger = join(cwd, 'ledger.txt');
  const poll = setInterval(() => {
    if (interruptedAt !== 0 || !existsSync(ledger)) return;
    interruptedAt = Date.now();
    child.kill('SIGINT');
    if (presses > 1) setTimeout(() => child.kill('SIGINT'), 100);
  }, 20);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`trellis ${args.join(' ')} did not end in ${PROCESS_TIMEOUT_MS} ms:\n${stdout}\n${stderr}`));
    }, PROCESS_TIMEOUT_MS);
    child.on('exit', (code) => {
      clearTimeout(timer);
      clearInterval(poll);
      resolve({ code, stdout, stderr, afterInterruptMs: Date.now() - interruptedAt });
    });
  });
}

function ledgerLines(): string[] {
  const ledger = join(cwd, 'ledger.txt');
  return existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean) : [];
}

function leaseRows(): unknown[] {
  const conn = new Database(db, { readonly: true });
  try {
    return conn.prepare('SELECT * FROM session_leases').all();
  } finally {
    conn.close();
  }
}

async function stored(sessionId: string) {
  const store = new SqliteStore({ path: db, readonly: true });
  try {
    return (await store.load(sessionId))!;
  } finally {
    await store.close();
  }
}

/** A session whose charge of `amount` waits for approval, made in this process; its call id. */
async function waitingCharge(sessionId: string, amount: number): Promise<string> {
  const store = SqliteStore.open(db);
  const app = Trellis.create({ store });
  await app.install(SlowPaymentsPlugin);
  const asked = await app
    .agent({ name: 'payer', model: new ScriptedModel(script), instructions: '' })
    .session(sessionId)
    .send(`pay ${amount}`);
  await app.stop();
  await store.close();
  expect(asked.status).toBe('suspended');
  return asked.suspended![0]!.callId;
}

describe('Ctrl-C while a tool call runs in trellis run / resume (a real SIGINT)', () => {
  it(
    'run: the first Ctrl-C lets the running charge finish, records the call and its result in the cancelled turn, and frees the session',
    async () => {
      const exit = await interruptDuringCharge(['run', '-s', 'p1', 'pay 5'], 1);

      expect(exit.code).toBe(130);
      expect(exit.stderr).toContain('Cancelling the turn');
      expect(ledgerLines()).toEqual(['charged 5']);
      const session = await stored('p1');
      expect(session.turns.map((t) => [t.status, t.toolCalls])).toEqual([['cancelled', 1]]);
      expect(session.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
      expect(session.transcript[2]!.content).toContain('paid 5');
      expect(leaseRows()).toEqual([]);
    },
    2 * PROCESS_TIMEOUT_MS,
  );

  it(
    'resume --approve: the approved charge finishes and is recorded; nothing is left pending or leased',
    async () => {
      const callId = await waitingCharge('p2', 500);
      const exit = await interruptDuringCharge(['resume', 'p2', '--approve', callId], 1);

      expect(exit.code).toBe(130);
      expect(ledgerLines()).toEqual(['charged 500']);
      const session = await stored('p2');
      expect(session.suspension).toBeNull();
      expect(session.turns.map((t) => [t.status, t.toolCalls])).toEqual([['cancelled', 1]]);
      expect(session.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
      expect(session.transcript[2]).toMatchObject({ toolCallId: callId, name: 'payments.charge' });
      expect(session.transcript[2]!.content).toContain('paid 500');
      expect(leaseRows()).toEqual([]);
    },
    2 * PROCESS_TIMEOUT_MS,
  );

  it(
    'resume --approve, Ctrl-C twice: exits at once, releases its lease, and the cut-off charge waits for --retry/--skip',
    async () => {
      const callId = await waitingCharge('p3', 500);
      const exit = await interruptDuringCharge(['resume', 'p3', '--approve', callId], 2, 6_000);

      expect(exit.code).toBe(130);
      expect(exit.stderr).toContain('Exiting now');
      // At once: long before the charge's confirmation (6 s) came back.
      expect(exit.afterInterruptMs).toBeLessThan(5_000);
      expect(ledgerLines()).toEqual(['charged 500']);
      expect(leaseRows()).toEqual([]);

      const shown = fakeCliIo(cwd);
      expect(await runCli(['node', 'trellis', 'sessions', 'show', 'p3'], shown)).toBe(0);
      expect(shown.text()).toContain(
        `cut off mid-run (it may or may not have run): trellis resume p3 --retry ${callId}`,
      );
      // No SessionBusy: the session is free the moment the process is gone.
      const skipped = fakeCliIo(cwd);
      expect(await runCli(['node', 'trellis', 'resume', 'p3', '--skip', callId], skipped)).toBe(0);
      expect(ledgerLines()).toEqual(['charged 500']);
    },
    3 * PROCESS_TIMEOUT_MS,
  );
});
