import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../support/ts-node-child.js';
import { sharedTranspiledProject } from '../../support/transpiled-tree.js';

/**
 * Approvals two sub-agents deep, across processes (issue 14): each step is a fresh `node`
 * process running support/delegation-process.ts (top → mid → leaf, leaf's ledger calls
 * parked by a gate) on one SQLite file, so only the store connects the steps.
 */
/** The child, as the project's path of its source (it runs from the run's transpiled tree). */
const CHILD = 'test/integration/durable/support/delegation-process.ts';
const PROCESS_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 5 * PROCESS_TIMEOUT_MS;

interface ChildOutput {
  readonly exitCode: number | null;
  readonly result: {
    readonly status?: string;
    readonly reply?: string;
    readonly suspended?: readonly { callId: string; path?: string[]; allowed?: string[] }[];
    readonly usage?: { totalTokens: number; byAgent?: Record<string, unknown> };
    readonly error?: { readonly code: string; readonly message: string };
  } | null;
}

const APPROVE = { callId: 't1/m1/l_yes', decision: 'approve' };
const REJECT = { callId: 't1/m1/l_no', decision: 'reject' };

let dir: string;
let db: string;
let ledger: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-depth-'));
  db = join(dir, 'trellis.db');
  ledger = join(dir, 'ledger.txt');
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

function runProcess(
  session: string,
  mode: 'suspend' | 'resume' | 'resume-crash' | 'pending',
  decisions?: readonly object[],
): Promise<ChildOutput> {
  const args = [
    '--no-warnings',
    sharedTranspiledProject()(CHILD),
    db,
    ledger,
    session,
    mode,
    ...(decisions ? [JSON.stringify(decisions)] : []),
  ];
  const child = spawn(process.execPath, args, { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`delegation process (${mode}) did not finish in ${PROCESS_TIMEOUT_MS} ms:\n${stdout}\n${stderr}`),
      );
    }, PROCESS_TIMEOUT_MS);
    child.on('exit', (exitCode) => {
      clearTimeout(timer);
      const line = stdout.trim().split('\n').at(-1) ?? '';
      if (line === '') return resolve({ exitCode, result: null });
      try {
        resolve({ exitCode, result: JSON.parse(line) as ChildOutput['result'] });
      } catch {
        reject(new Error(`delegation process (${mode}) printed no result (exit ${exitCode}):\n${stdout}\n${stderr}`));
      }
    });
  });
}

function ledgerLines(): string[] {
  return existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean) : [];
}

describe('approval two sub-agents deep, across processes on one SQLite file', () => {
  it(
    'lists the deep calls at the top, runs the approved one exactly once from a new process, never the rejected one',
    async () => {
      const first = await runProcess('d1', 'suspend');
      expect(first.result?.status).toBe('suspended');
      expect(first.result?.suspended).toEqual([
        { callId: 't1/m1/l_yes', path: ['top', 'mid', 'leaf'], allowed: ['approve', 'reject'] },
        { callId: 't1/m1/l_no', path: ['top', 'mid', 'leaf'], allowed: ['approve', 'reject'] },
      ]);
      expect(ledgerLines()).toEqual([]);

      const second = await runProcess('d1', 'resume', [APPROVE, REJECT]);
      expect(second.exitCode).toBe(0);
      expect(second.result?.status).toBe('completed');
      expect(second.result?.reply).toMatch(/^t1: m1: leaf: appended approved-line; .*Rejected/);
      expect(Object.keys(second.result?.usage?.byAgent ?? {}).sort()).toEqual(['leaf', 'mid', 'top']);
      expect(ledgerLines()).toEqual(['approved-line']);

      const third = await runProcess('d1', 'resume', [APPROVE, REJECT]);
      expect(third.exitCode).not.toBe(0);
      expect(third.result?.error?.code).toBe('InvalidDecision');
      expect(ledgerLines()).toEqual(['approved-line']);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'after a crash inside the deep call, neither re-runs it nor forgets it: the top asks retry or skip',
    async () => {
      await runProcess('d2', 'suspend');

      const crashed = await runProcess('d2', 'resume-crash', [APPROVE, REJECT]);
      expect(crashed.exitCode).toBe(9);
      expect(ledgerLines()).toEqual(['approved-line']);

      // Before anyone resumes, the top already lists the cut-off call as the leaf's journal
      // has it: waiting for retry or skip, beside the rejected one still to be applied.
      const listed = await runProcess('d2', 'pending');
      expect(listed.result?.suspended).toEqual([
        { callId: 't1/m1/l_yes', path: ['top', 'mid', 'leaf'], allowed: ['retry', 'skip'] },
        { callId: 't1/m1/l_no', path: ['top', 'mid', 'leaf'], allowed: ['approve', 'reject'] },
      ]);

      // The decisions were claimed before the crash; repeating them changes nothing, and the
      // call cut off mid-run comes back to the top as a retry/skip decision.
      const after = await runProcess('d2', 'resume', [APPROVE, REJECT]);
      expect(after.result?.status).toBe('suspended');
      expect(after.result?.suspended).toEqual([
        { callId: 't1/m1/l_yes', path: ['top', 'mid', 'leaf'], allowed: ['retry', 'skip'] },
      ]);
      expect(ledgerLines()).toEqual(['approved-line']);

      const skipped = await runProcess('d2', 'resume', [{ callId: 't1/m1/l_yes', decision: 'skip' }]);
      expect(skipped.result?.status).toBe('completed');
      expect(skipped.result?.reply).toContain('Skipped');
      expect(ledgerLines()).toEqual(['approved-line']);
    },
    TEST_TIMEOUT_MS,
  );
});
