/**
 * Session stores, beyond the classes the root entry has (`MemoryStore`, `SqliteStore`,
 * `PostgresStore`) and the `SessionStore` port: `import { canAudit, diagnoseSqliteStore } from 'trellis/stores'`.
 *
 * For store authors: what a store keeps (sessions, checkpoints, turn records), the optional
 * capabilities a store may implement with their type guards and limits, and the lease. For
 * operators: the SQLite and PostgreSQL checks and repairs `trellis doctor` runs, lease administration, and
 * the default locations. See docs/scaling.md and docs/reliability.md.
 */
export type {
  StoredSession,
  SessionCheckpoint,
  SessionSummary,
  TurnRecord,
  RevisionReader,
  Compactable,
} from './src/engine/stores/session-store.js';
export { canReadRevision, canCompact } from './src/engine/stores/session-store.js';
export type { SessionLease, LeaseAdmin, LeaseView, LeaseState } from './src/engine/stores/session-lease.js';
export { canAdministerLeases, LEASE_CLOCK_TOLERANCE_MS } from './src/engine/stores/session-lease.js';
export {
  canLogTurnEvents,
  TURN_EVENT_LIMITS,
  type TurnEventLog,
  type RecordedTurnEvent,
  type StoredTurnEvents,
} from './src/engine/stores/turn-event-log.js';
export { canJournalSteps, type StepJournal, type StepAppend } from './src/engine/stores/step-journal.js';
export {
  canAudit,
  type AuditLog,
  type AuditEntry,
  type AuditRecord,
  type AuditOutcome,
} from './src/engine/stores/audit-log.js';
export {
  hasRecordStore,
  type RecordStore,
  type StoredRecord,
  type RecordSelector,
} from './src/engine/stores/record-store.js';
export { canKeepCredentials, CREDENTIAL_LIMITS, type CredentialStore } from './src/engine/stores/credential-store.js';
export { canCountBudgets, type BudgetCounts } from './src/engine/stores/budget-counts.js';
export { PART_INLINE_BYTES } from './src/engine/stores/part-blobs.js';
export { DEFAULT_SQLITE_PATH } from './src/engine/stores/sqlite-store.js';
export { DEFAULT_POSTGRES_SCHEMA } from './src/engine/stores/postgres-store.js';
export type { DoctorReport, DoctorFinding, RepairReport } from './src/engine/stores/doctor-report.js';
export { diagnoseSqliteStore } from './src/engine/stores/sqlite-doctor.js';
export { repairSqliteStore } from './src/engine/stores/sqlite-repair.js';
export {
  diagnosePostgresStore,
  repairPostgresStore,
  type PostgresDoctorTarget,
} from './src/engine/stores/postgres-doctor.js';
