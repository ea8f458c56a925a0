/**
 * The MCP host's error codes, added to the closed code union by declaration merging:
 * `McpServerFailed` (a server did not start or answer at install), `McpUnavailable` (a call
 * found the server unreachable for too long; retryable), `McpDisconnected` (the link dropped
 * during a call, which may or may not have run; retryable).
 */
declare module '../../errors/trellis-error.js' {
  interface TrellisErrorCodes {
    McpServerFailed: true;
    McpUnavailable: true;
    McpDisconnected: true;
  }
}

export {};
