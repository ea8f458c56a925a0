/**
 * Running one agent platform for many teams: `import { RedisBudgetCounter, verifyAuditChain } from 'trellis/governance'`.
 *
 * The settings of `Trellis.create({ approvals, budgets })` and their counters, the audit
 * chain's check, plugin contracts and their diff, what `app.erase()` and `app.expirePending()`
 * take and report, and usage attributed by plugin and owner. The store side of these (the
 * `AuditLog` and `BudgetCounts` capabilities) is in `trellis/stores`. See docs/governance.md.
 */

// Approval policies and their expiry
export type { ApprovalPolicy, ApprovalSettings, SweepContext } from './src/agent/approval/approval-policy.js';
export type { ExpiryReport } from './src/app/expiry-sweep.js';

// The audit log's hash chain
export {
  verifyAuditChain,
  argumentsHash,
  AUDIT_GENESIS,
  type AuditVerification,
} from './src/engine/stores/audit-chain.js';

// Ownership and attribution
export type { AttributedUsage, UsageSplit } from './src/contract/agent-usage.js';

// Contract versions
export { CONTRACT_VERSION, type PluginContract } from './src/app/plugin-contract.js';
export { diffContracts, type ContractChange, type ContractDiff } from './src/app/contract-diff.js';

// Budgets
export type {
  BudgetLimit,
  BudgetSettings,
  BudgetRefusal,
  BudgetWindow,
  BudgetPrice,
  BudgetLimitKind,
} from './src/engine/budgets/budgets.js';
export {
  MemoryBudgetCounter,
  RedisBudgetCounter,
  StoreBudgetCounter,
  type BudgetCounter,
  type RedisLike,
  type RedisPipelineLike,
} from './src/engine/budgets/budget-counter.js';
export {
  PostgresBudgetCounter,
  type PostgresBudgetCounterOptions,
} from './src/engine/budgets/postgres-budget-counter.js';

// Erasure and retention
export type {
  EraseSelector,
  EraseRequest,
  EraseReport,
  EraseOptions,
  SessionEraser,
} from './src/engine/erasure/erasure.js';
