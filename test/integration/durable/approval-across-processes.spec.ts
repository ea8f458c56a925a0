import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { PROJECT_ROOT } from '../../support/ts-node-child.js';
import { sharedTranspiledProject } from '../../support/transpiled-tree.js';

/**
 * Human approval across a restart, with real processes on one SQLite file:
 * each step below is a fresh `node` process running support/approval-process.ts, so
 * nothing survives between steps except what the store holds.
 */
/** The child, as the project's path of its source (it runs from the run's transpiled tree). */
const CHILD = 'test/integration/durable/support/approval-process.ts';
/** A child starts in about a second; a busy machine can make it many. */
const PROCESS_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 4 * PROCESS_TIMEOUT_MS;

interface ChildOutput {
  readonly exitCode: number | null;
  readonly stderr: string;
  readonly result: {
    readonly status?: string;
    readonly reply?: string;
    readonly suspended?: readonly string[];
    readonly toolCalls?: readonly { callId: string; ok: boolean; error?: { code: string } }[];
    readonly error?: { readonly code: string; readonly message: string };
  };
}

const APPROVE = { callId: 'call_approved', decision: 'approve' };
const REJECT = { callId: 'call_rejected', decision: 'reject' };

let dir: string;
let db: string;
let ledger: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-durable-'));
  db = join(dir, 'trellis.db');
  ledger = join(dir, 'ledger.txt');
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

function runProcess(session: string, mode: 'suspend' | 'resume', decisions?: readonly object[]): Promise<ChildOutput> {
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
      reject(new Error(`approval process (${mode}) did not finish in ${PROCESS_TIMEOUT_MS} ms:\n${stdout}\n${stderr}`));
    }, PROCESS_TIMEOUT_MS);
    child.on('exit', (exitCode) => {
      clearTimeout(timer);
      const line = stdout.trim().split('\n').at(-1) ?? '';
      try {
        resolve({ exitCode, stderr, result: JSON.parse(line) as ChildOutput['result'] });
      } catch {
        reject(new Error(`approval process (${mode}) printed no result (exit ${exitCode}):\n${stdout}\n${stderr}`));
      }
    });
  });
}

function ledgerLines(): string[] {
  return existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean) : [];
}

function sessionRow(session: string): { revision: number; suspension: string } {
  const conn = new Database(db, { readonly: true });
  try {
    return conn.prepare('SELECT revision, suspension FROM sessions WHERE id = ?').get(session) as {
      revision: number;
      suspension: string;
    };
  } finally {
    conn.close();
  }
}

describe('approval across processes on one SQLite file', () => {
  it(
    'runs the approved call exactly once, never the rejected one, and ignores a repeated resume',
    async () => {
      const first = await runProcess('s1', 'suspend');
      expect(first.result).toMatchObject({ status: 'suspended', suspended: ['call_approved', 'call_rejected'] });
      expect(ledgerLines()).toEqual([]);

      const second = await runProcess('s1', 'resume', [APPROVE, REJECT]);
      expect(second.exitCode).toBe(0);
      expect(second.result.status).toBe('completed');
      expect(second.result.reply).toBe('The ledger is updated.');
      expect(second.result.toolCalls).toEqual([
        expect.objectContaining({ callId: 'call_approved', ok: true }),
        expect.objectContaining({
          callId: 'call_rejected',
          ok: false,
          error: expect.objectContaining({ code: 'Rejected' }),
        }),
      ]);
      expect(ledgerLines()).toEqual(['approved-line']);
      const stored = sessionRow('s1');

      const third = await runProcess('s1', 'resume', [APPROVE, REJECT]);
      expect(third.exitCode).not.toBe(0);
      expect(third.result.error?.code).toBe('InvalidDecision');
      expect(ledgerLines()).toEqual(['approved-line']);
      expect(sessionRow('s1')).toEqual(stored);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'keeps waiting for undecided calls after a partial resume, and applies each decision once',
    async () => {
      await runProcess('s2', 'suspend');

      const partial = await runProcess('s2', 'resume', [APPROVE]);
      expect(partial.result).toMatchObject({ status: 'suspended', suspended: ['call_rejected'] });
      expect(ledgerLines()).toEqual(['approved-line']);

      // The approval is repeated alongside the new decision: it was applied already, so it is ignored.
      const rest = await runProcess('s2', 'resume', [APPROVE, REJECT]);
      expect(rest.result.status).toBe('completed');
      expect(ledgerLines()).toEqual(['approved-line']);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'fails closed on a suspension record of an unknown version: InvalidCheckpoint, and nothing runs',
    async () => {
      await runProcess('s3', 'suspend');
      const conn = new Database(db);
      conn.prepare(`UPDATE sessions SET suspension = json_set(suspension, '$.version', 99) WHERE id = ?`).run('s3');
      conn.close();
      const tampered = sessionRow('s3');

      const resumed = await runProcess('s3', 'resume', [APPROVE, REJECT]);

      expect(resumed.exitCode).not.toBe(0);
      expect(resumed.result.error?.code).toBe('InvalidCheckpoint');
      expect(resumed.result.error?.message).toMatch(/schema version is 99.*nothing was run/);
      expect(ledgerLines()).toEqual([]);
      expect(sessionRow('s3')).toEqual(tampered);
    },
    TEST_TIMEOUT_MS,
  );
});
