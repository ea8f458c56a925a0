/**
 * A JSON-RPC error a request handler throws. The SDK sends a thrown error's `code`, `message`
 * and `data` as they are; its own `McpError` puts "MCP error <code>: " into the message, and
 * the SDK's client adds that prefix again on receipt, so a client read it twice. This one
 * carries the bare message.
 */
export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'ProtocolError';
  }
}
