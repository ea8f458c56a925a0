import { createHash } from 'node:crypto';
import type { AuditEntry, AuditRecord } from './audit-log.js';

/** The `prevHash` of the first record. */
export const AUDIT_GENESIS = '0'.repeat(64);

/**
 * JSON with object keys sorted at every level, so an entry hashes the same whichever
 * store wrote it and however its JSON column reorders keys (PostgreSQL's `jsonb` does).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const keys = Object.keys(value)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
}

/** The hash of a record: SHA-256 over the previous hash, the sequence number and the entry. */
export function auditHash(prevHash: string, seq: number, entry: AuditEntry): string {
  return createHash('sha256')
    .update(`${prevHash}\n${seq}\n${canonicalJson(entry)}`)
    .digest('hex');
}

/** Chains `entries` after the record `last` (undefined: the log is empty). */
export function chainAuditEntries(
  last: { readonly seq: number; readonly hash: string } | undefined,
  entries: readonly AuditEntry[],
): AuditRecord[] {
  let seq = last?.seq ?? 0;
  let prevHash = last?.hash ?? AUDIT_GENESIS;
  return entries.map((entry) => {
    seq += 1;
    const hash = auditHash(prevHash, seq, entry);
    const record: AuditRecord = { seq, prevHash, hash, entry };
    prevHash = hash;
    return record;
  });
}

/** What `verifyAuditChain` found. */
export interface AuditVerification {
  readonly ok: boolean;
  /** Records checked. */
  readonly count: number;
  /** The last record's hash: keep it somewhere else to detect a log cut short later. */
  readonly head: string;
  /** The first record that does not fit, and why. */
  readonly broken?: { readonly seq: number; readonly problem: string };
}

/**
 * Checks a whole log, oldest first: sequence numbers 1, 2, 3 … with no gap, each record's
 * `prevHash` the hash of the one before, each hash recomputed from its entry. A changed,
 * removed, inserted or reordered record breaks the chain at that record. Removing records
 * from the end cannot be seen from the log alone: compare `head` with one kept elsewhere
 * (`trellis audit verify --head`).
 */
export function verifyAuditChain(records: readonly AuditRecord[], expectedHead?: string): AuditVerification {
  let prevHash = AUDIT_GENESIS;
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    const broken = (problem: string): AuditVerification => ({
      ok: false,
      count: records.length,
      head: records.at(-1)!.hash,
      broken: { seq: record.seq, problem },
    });
    if (record.seq !== i + 1)
      return broken(`expected sequence number ${i + 1}, found ${record.seq} (a record is missing or was inserted)`);
    if (record.prevHash !== prevHash) return broken('its prevHash is not the hash of the record before it');
    if (auditHash(record.prevHash, record.seq, record.entry) !== record.hash)
      return broken('its hash does not match its contents (the entry was changed)');
    prevHash = record.hash;
  }
  const head = records.at(-1)?.hash ?? AUDIT_GENESIS;
  // A head kept earlier must still be in the log: the log may have grown past it, not lost it.
  if (expectedHead !== undefined && expectedHead !== AUDIT_GENESIS && !records.some((r) => r.hash === expectedHead)) {
    return {
      ok: false,
      count: records.length,
      head,
      broken: {
        seq: records.length + 1,
        problem: 'the expected head hash is not in the log: records were removed from its end, or this is another log',
      },
    };
  }
  return { ok: true, count: records.length, head };
}

/** SHA-256 (hex) of a call's arguments as JSON text, canonicalised when it parses. */
export function argumentsHash(args: unknown): string {
  let text: string;
  if (typeof args === 'string') {
    try {
      text = canonicalJson(JSON.parse(args));
    } catch {
      text = args;
    }
  } else text = canonicalJson(args);
  return createHash('sha256').update(text).digest('hex');
}
