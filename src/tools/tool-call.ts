export type { ToolCallInfo, ToolCallOutcome, TurnExchange } from '../contract/hook-payloads.js';
