import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { IsInt } from 'class-validator';
import {
  Hook,
  MemoryStore,
  Plugin,
  ScriptedModel,
  SqliteStore,
  suspend,
  Tool,
  Trellis,
  type ToolCallInfo,
} from '../../../index.js';
import type { AuditEntry, AuditLog, AuditRecord } from '../../../stores.js';
import { argumentsHash, verifyAuditChain } from '../../../governance.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService } from '../../support/services.js';

function entry(i: number, approver = `approver-${i}`): AuditEntry {
  return {
    at: new Date(1_700_000_000_000 + i).toISOString(),
    sessionId: 's1',
    turn: 0,
    callId: `call_${i}`,
    tool: 'payments.refund',
    argumentsHash: argumentsHash({ amount: i }),
    decision: 'approve',
    outcome: 'approved',
    approver: { id: approver, roles: ['finance'] },
    reason: `reason ${i}`,
  };
}

/** What every store's log must do: chain in order across appends, read back what was written, verify. */
async function conformance(log: AuditLog): Promise<readonly AuditRecord[]> {
  expect(await log.readAudit()).toEqual([]);
  const first = await log.appendAudit([entry(1), entry(2)]);
  const second = await log.appendAudit([entry(3)]);
  expect([...first, ...second].map((r) => r.seq)).toEqual([1, 2, 3]);
  expect(second[0]!.prevHash).toBe(first[1]!.hash);
  const stored = await log.readAudit();
  expect(stored).toEqual([...first, ...second]);
  expect(await log.readAudit({ after: 1, limit: 1 })).toEqual([first[1]]);
  expect(verifyAuditChain(stored)).toEqual({ ok: true, count: 3, head: second[0]!.hash });
  return stored;
}

describe('the audit log in each store: append-only, hash-chained, tampering detected', () => {
  it('MemoryStore: a changed, a removed and a reordered record each break the chain at that record', async () => {
    const store = new MemoryStore();
    const stored = await conformance(store);
    // Tampering with what the store holds, as someone with access to the process could.
    const rows = store['audit'];
    const original = [...rows];
    rows[1] = rows[1]!.replace('approver-2', 'mallory');
    expect(verifyAuditChain(await store.readAudit())).toMatchObject({
      ok: false,
      broken: { seq: 2, problem: expect.stringContaining('does not match its contents') },
    });
    rows.splice(0, rows.length, original[0]!, original[2]!);
    expect(verifyAuditChain(await store.readAudit())).toMatchObject({ ok: false, broken: { seq: 3 } });
    rows.splice(0, rows.length, original[1]!, original[0]!, original[2]!);
    expect(verifyAuditChain(await store.readAudit())).toMatchObject({ ok: false, broken: { seq: 2 } });
    // Cutting records off the end is only seen against a head kept elsewhere.
    rows.splice(0, rows.length, original[0]!, original[1]!);
    expect(verifyAuditChain(await store.readAudit()).ok).toBe(true);
    expect(verifyAuditChain(await store.readAudit(), stored[2]!.hash)).toMatchObject({
      ok: false,
      broken: { problem: expect.stringContaining('removed from its end') },
    });
  });

  it('SqliteStore: the table refuses UPDATE and DELETE; an edit made after dropping the guard is detected', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trellis-audit-'));
    try {
      const path = join(dir, 'audit.db');
      const store = SqliteStore.open(path);
      await conformance(store);
      // A second process appends to the same file: the chain goes on from the last row.
      const other = SqliteStore.open(path);
      const [fourth] = await other.appendAudit([entry(4)]);
      expect(fourth!.seq).toBe(4);
      await other.close();
      const raw = new Database(path);
      expect(() => raw.prepare("UPDATE audit_log SET entry = '{}' WHERE seq = 2").run()).toThrow(/append-only/);
      expect(() => raw.prepare('DELETE FROM audit_log WHERE seq = 4').run()).toThrow(/append-only/);
      raw.exec('DROP TRIGGER audit_log_no_update');
      raw.prepare('UPDATE audit_log SET entry = replace(entry, ?, ?) WHERE seq = 2').run('reason 2', 'reason forged');
      raw.close();
      const result = verifyAuditChain(await store.readAudit());
      expect(result).toMatchObject({ ok: false, count: 4, broken: { seq: 2 } });
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const pgUp = await haveService('postgres', 'the audit log on PostgreSQL');

(pgUp ? describe : describe.skip)('the audit log on PostgreSQL', () => {
  it('chains appends from two instances in one order (concurrently), refuses UPDATE/DELETE/TRUNCATE, and detects an edit', async () => {
    const schemas = new PostgresSchemas();
    try {
      const schema = schemas.next();
      const a = await schemas.open(schema);
      const b = await schemas.open(schema);
      await conformance(a);
      // Two instances appending at once: one chain, no gap, no fork.
      await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).appendAudit([entry(10 + i), entry(100 + i)])),
      );
      const all = await b.readAudit();
      expect(all.map((r) => r.seq)).toEqual(Array.from({ length: 43 }, (_, i) => i + 1));
      expect(verifyAuditChain(all).ok).toBe(true);
      const q = `"${schema}".audit_log`;
      await expect(schemas.admin.query(`UPDATE ${q} SET hash = 'x' WHERE seq = 5`)).rejects.toThrow(/append-only/);
      await expect(schemas.admin.query(`DELETE FROM ${q} WHERE seq = 43`)).rejects.toThrow(/append-only/);
      await expect(schemas.admin.query(`TRUNCATE ${q}`)).rejects.toThrow(/append-only/);
      await schemas.admin.query(`ALTER TABLE ${q} DISABLE TRIGGER audit_log_no_change`);
      await schemas.admin.query(
        `UPDATE ${q} SET entry = json_build_object('at', entry->>'at', 'sessionId', 's1', 'turn', 0, 'callId', entry->>'callId', 'tool', 'payments.refund', 'argumentsHash', entry->>'argumentsHash', 'decision', 'approve', 'outcome', 'approved', 'approver', json_build_object('id', 'mallory'), 'reason', entry->>'reason') WHERE seq = 7`,
      );
      expect(verifyAuditChain(await a.readAudit())).toMatchObject({ ok: false, broken: { seq: 7 } });
      await a.close();
      await b.close();
    } finally {
      await schemas.dropAll();
    }
  });
});

class Amount {
  @IsInt() amount!: number;
}

let refunds = 0;

@Plugin({ name: 'payments', version: '1.0.0' })
class Payments {
  @Tool({ name: 'payments.refund', description: 'Refunds.', input: Amount })
  refund() {
    refunds++;
    return 'refunded';
  }

  @Hook('tool.gate')
  ask(call: ToolCallInfo) {
    return call.tool === 'payments.refund' ? suspend({ message: 'Refund?' }) : undefined;
  }
}

describe('a decision and its audit entry are written in one transaction (SqliteStore)', () => {
  it('an audit entry that cannot be written leaves the decision unwritten too; the resume then goes through once, audited once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trellis-audit-'));
    try {
      const path = join(dir, 'audit.db');
      const store = SqliteStore.open(path);
      expect(store.auditsInCheckpoint).toBe(true);
      const app = Trellis.create({ store });
      await app.install(Payments);
      const callId = `call_${randomUUID()}`;
      const session = app
        .agent({
          name: 'desk',
          model: new ScriptedModel([
            { toolCalls: [{ id: callId, name: 'payments.refund', args: { amount: 5 } }] },
            'refunded',
          ]),
          instructions: '',
        })
        .session('r1');
      expect((await session.send('refund')).status).toBe('suspended');
      // The audit table refuses inserts now, as a full disk or a broken log would.
      const raw = new Database(path);
      raw.exec(
        "CREATE TRIGGER audit_log_broken BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'the audit log cannot be written'); END;",
      );
      await expect(
        session.resume({ decisions: [{ callId, decision: 'approve' }], approver: { id: 'alice' } }),
      ).rejects.toThrow(/audit log cannot be written/);
      // Neither the decision nor an entry: the call still waits, undecided, and did not run.
      const stored = (await store.load('r1'))!.suspension as { decisions: unknown[]; pending: unknown[] };
      expect(stored.decisions).toEqual([]);
      expect(stored.pending).toHaveLength(1);
      expect(refunds).toBe(0);
      expect(await store.readAudit()).toEqual([]);
      raw.exec('DROP TRIGGER audit_log_broken');
      raw.close();
      const again = Trellis.create({ store: SqliteStore.open(path) });
      await again.install(Payments);
      const result = await again
        .agent({ name: 'desk', model: new ScriptedModel(['refunded']), instructions: '' })
        .session('r1')
        .resume({ decisions: [{ callId, decision: 'approve' }], approver: { id: 'alice' } });
      expect(result.status).toBe('completed');
      expect(refunds).toBe(1);
      expect((await store.readAudit()).map((r) => `${r.entry.outcome}:${r.entry.approver?.id}`)).toEqual([
        'approved:alice',
      ]);
      await again.stop();
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
