import type { ChildSuspension } from '../../contract/delegation.js';
import type { PendingApproval } from '../../contract/suspension.js';
import type { ToolCallRecord } from '../../contract/tool-result.js';

/** How one call ended, for the turn loop (internal: the public record is `ToolCallRecord`). */
export type CallEnd =
  | { readonly kind: 'result'; readonly record: ToolCallRecord; readonly content: string; readonly done: boolean }
  | { readonly kind: 'blocked'; readonly reason: string; readonly by: string }
  | { readonly kind: 'suspended'; readonly pending: PendingApproval; readonly child?: ChildSuspension };

/** A call's result as the turn loop keeps it: the record, what the model reads, whether it ends the turn. */
export type CallResultEnd = Extract<CallEnd, { readonly kind: 'result' }>;
