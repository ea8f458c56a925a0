/**
 * For hosts: a server, a CLI, a worker or a protocol adapter that drives sessions on behalf
 * of users (`import { authorizeSessionAccess, redactMessage } from 'trellis/host'`). The
 * package's own hosts (`trellis/nestjs`, `trellis/queue`, `trellis/mcp`, the protocol entries,
 * the CLI and the dev page) use these too.
 *
 * The one session access check, arguments bounded before any DTO is built, transcripts
 * redacted for display, a suspension record read back, and what `app.describe()` lists.
 * The redactor itself (`redactSecrets`, `redactText`) is in `trellis/plugin`.
 */

// Who may use a session: the check every host that takes user requests asks (the policies are in the root entry)
export { authorizeSessionAccess, userIdPrincipal, type SessionAccessCheck } from './src/agent/session-policy.js';
export { waitForLeaseProblem } from './src/agent/durability/session-lease.js';

// Arguments from outside, bounded before any DTO is built or schema asked
export {
  checkArgumentShape,
  checkArgumentSize,
  MAX_ARGUMENT_CHARS,
  MAX_ARGUMENT_DEPTH,
} from './src/engine/validation/argument-limits.js';

// What a host shows: redacted transcripts, suspension records, the app's description
export { redactMessage, type SecretFieldsOf } from './src/engine/models/message-redaction.js';
export { redactArguments } from './src/redaction/redactor.js';
export { parseSuspension, type SuspensionRecord } from './src/agent/durability/suspension-record.js';
export type { PluginInfo, ToolInfo, HookInfo } from './src/app/app-description.js';
export { isPluginClass } from './src/engine/plugin/plugin-explorer.js';
