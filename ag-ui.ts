import 'reflect-metadata';

/**
 * AG-UI for Trellis sessions: `import { createAgUiHandler } from 'trellis/ag-ui'`, so an
 * AG-UI client (`@ag-ui/client`'s `HttpAgent`, CopilotKit) runs a Trellis agent — text, tool
 * calls and results, approvals as the `interrupt` outcome answered by `resume` entries. A
 * separate entry so that importing `trellis` does not load `@ag-ui/*`. See docs/ag-ui.md.
 */
export {
  createAgUiHandler,
  agUiEvents,
  type AgUiHandlerOptions,
  type AgUiRunOptions,
} from './src/hosts/ag-ui/ag-ui-handler.js';
export { AgUiEventWriter, TOOL_APPROVAL, APPROVAL_SCHEMA } from './src/hosts/ag-ui/ag-ui-event-writer.js';
export { readRunInput, type AgUiRun } from './src/hosts/ag-ui/run-input.js';
export { streamable, type TurnSession, type TurnAction } from './src/hosts/ui-turns/turn-session.js';
