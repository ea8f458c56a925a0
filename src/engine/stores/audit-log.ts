/**
 * Who decided on a suspended call, as the host vouches for them: the Nest request's user,
 * the CLI's configured identity, the dev page's token. Never read from a request body.
 */
export interface Approver {
  /** A stable id for the person or system (an email, a subject claim, `cli:alice`). */
  readonly id: string;
  /** What the host says they may do; approval policies match on these. */
  readonly roles?: readonly string[];
}

/** What happened to one decision, as the audit log records it. */
export type AuditOutcome =
  /** The call ran (approved, or edited and run with the edited arguments). */
  | 'approved'
  | 'edited'
  | 'rejected'
  /** One approval of a quorum: recorded, the call keeps waiting for the rest. */
  | 'vote'
  /** Nobody decided within the policy's window: rejected, and the model told so. */
  | 'expired'
  /** The decision was refused (role, quorum, reason): nothing was applied. */
  | 'refused'
  | 'retried'
  | 'skipped';

/** One decision on one call, with who made it and what came of it. */
export interface AuditEntry {
  /** ISO time the decision was made. */
  readonly at: string;
  readonly sessionId: string;
  readonly turn: number;
  readonly callId: string;
  readonly tool: string;
  /** SHA-256 (hex) of the arguments the call would run with (the edited ones for `edit`). */
  readonly argumentsHash: string;
  readonly decision: 'approve' | 'reject' | 'edit' | 'retry' | 'skip' | 'expire';
  readonly outcome: AuditOutcome;
  /** Null when the host vouched for nobody (allowed only where no policy applies) or for an expiry. */
  readonly approver: Approver | null;
  readonly reason?: string;
  /** The approval policy that applied, by name. */
  readonly policy?: string;
  /** With a quorum: distinct approvals so far and how many are needed. */
  readonly quorum?: { readonly have: number; readonly need: number };
  /** Why a decision was refused. */
  readonly problem?: string;
}

/** An entry as stored: its place in the log and the hashes that chain it to the one before. */
export interface AuditRecord {
  /** 1, 2, 3, … with no gaps. */
  readonly seq: number;
  /** The previous record's hash; 64 zeros for the first. */
  readonly prevHash: string;
  /** SHA-256 (hex) over `prevHash`, `seq` and the entry (see `auditHash`). */
  readonly hash: string;
  readonly entry: AuditEntry;
}

/**
 * An optional store capability: an append-only, hash-chained log of approval decisions.
 * Appends from many processes are serialised by the store (a lock or a transaction), so the
 * chain has one order. Deleting a session leaves its entries: the log outlives sessions.
 */
export interface AuditLog {
  /** Appends entries in order, each chained to the last one stored; returns them as stored. */
  appendAudit(entries: readonly AuditEntry[]): Promise<readonly AuditRecord[]>;
  /** Records with `seq` greater than `after` (default 0), oldest first, at most `limit` (default all). */
  readAudit(options?: { readonly after?: number; readonly limit?: number }): Promise<readonly AuditRecord[]>;
}

/** Whether `store` keeps an audit log (the built-in stores do). */
export function canAudit<T extends object>(store: T): store is T & AuditLog {
  const log = store as Partial<AuditLog>;
  return typeof log.appendAudit === 'function' && typeof log.readAudit === 'function';
}
