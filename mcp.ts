import 'reflect-metadata';

/**
 * MCP for Trellis: `import { connectMcpServers, serveMcp } from 'trellis/mcp'`. A separate
 * entry so that importing `trellis` does not load the MCP SDK and ajv.
 *
 * - {@link connectMcpServers} / {@link McpServerClient}: each MCP server's tools become one
 *   plugin of the app, run through the whole tool pipeline.
 * - {@link serveMcp}: the app's tools (and optionally an agent) served over MCP.
 */
export { McpServerClient, connectMcpServers, type McpClientOptions } from './src/hosts/mcp/client/mcp-server-client.js';
export {
  mcpSpecProblems,
  type McpServerSpec,
  type McpStdioServerSpec,
  type McpHttpServerSpec,
} from './src/hosts/mcp/client/mcp-server-spec.js';
export type { McpConnectionOptions } from './src/hosts/mcp/client/mcp-connection.js';
export type { McpElicitation, McpElicitationAnswer } from './src/hosts/mcp/client/mcp-elicitation-requests.js';
export type { McpElicitationOptions, ParkedElicitation } from './src/hosts/mcp/client/mcp-elicitation.js';
export { serveMcp, type ServeMcpOptions, type McpServing } from './src/hosts/mcp/server/serve-mcp.js';
export {
  APPROVAL_REQUIRED,
  servedCallModel,
  type ServedApprovalOptions,
} from './src/hosts/mcp/server/served-approval.js';
export {
  memoryTokenStore,
  mcpTokensIn,
  type McpOAuthSpec,
  type McpClientCredentialsSpec,
  type McpAuthorizationCodeSpec,
  type McpTokenStore,
} from './src/hosts/mcp/client/mcp-oauth.js';
