/**
 * Every import of `@modelcontextprotocol/sdk` (1.x) goes through this file, so moving to
 * the 2.x split packages (`@modelcontextprotocol/client`, `…/server`) is a change here only.
 */
export { Client } from '@modelcontextprotocol/sdk/client/index.js';
export { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
export { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
export { Server } from '@modelcontextprotocol/sdk/server/index.js';
export { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
export {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ElicitRequestSchema,
  ErrorCode,
  type ElicitRequest,
  type ElicitResult,
  type GetPromptResult,
  type ListPromptsResult,
  type ListResourcesResult,
  type ReadResourceResult,
  ListToolsRequestSchema,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool as McpToolDescription,
} from '@modelcontextprotocol/sdk/types.js';
export { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
export type { Transport as McpTransport } from '@modelcontextprotocol/sdk/shared/transport.js';
export { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
export { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
export type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
