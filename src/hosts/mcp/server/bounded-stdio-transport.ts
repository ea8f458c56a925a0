import type { Readable, Writable } from 'node:stream';
import { JSONRPCMessageSchema, type JSONRPCMessage, type McpTransport } from '../sdk.js';

/** The longest JSON-RPC message a stdio connection takes by default: 4 MiB. */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** JSON-RPC's codes for a message that is not JSON, and one that is not a valid request. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

/**
 * A stdio transport for the MCP server that bounds each message and keeps serving. The
 * SDK's own closes the connection (and `trellis mcp` exits) when one line passes 10 MB;
 * this one drops the line, answers the JSON-RPC error `-32600` (with the request's id when
 * its opening bytes show one) and goes on with the next. A line that is not JSON is answered
 * `-32700`. Until the server answered an `initialize` request with a result, any other request
 * is answered `-32600` ("not initialized") rather than served: the protocol's lifecycle starts
 * there (an `initialize` notification, or one the server refused, initializes nothing).
 */
export class BoundedStdioTransport implements McpTransport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  #chunks: Buffer[] = [];
  #size = 0;
  /** Dropping an over-long line until its newline; the start of it, for its id. */
  #dropping: string | undefined;
  #initialized = false;
  /** Ids of `initialize` requests not answered yet: the connection is initialized when one is answered with a result. */
  readonly #initializing = new Set<string | number>();
  #closed = false;

  constructor(
    private readonly stdin: Readable,
    private readonly stdout: Writable,
    private readonly maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES,
  ) {}

  start(): Promise<void> {
    this.stdin.on('data', this.#onData);
    this.stdin.on('error', this.#onError);
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (
      !this.#initialized &&
      'id' in message &&
      this.#initializing.delete(message.id as string | number) &&
      'result' in message
    )
      this.#initialized = true;
    return new Promise((resolve) => {
      if (this.#closed) return resolve();
      if (this.stdout.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.stdout.once('drain', resolve);
    });
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.stdin.off('data', this.#onData);
    this.stdin.off('error', this.#onError);
    if (this.stdin.listenerCount('data') === 0) this.stdin.pause();
    this.#chunks = [];
    this.onclose?.();
    return Promise.resolve();
  }

  readonly #onError = (error: Error): void => this.onerror?.(error);

  readonly #onData = (chunk: Buffer | string): void => {
    let data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    while (data.length > 0) {
      const newline = data.indexOf(10);
      this.#take(newline < 0 ? data : data.subarray(0, newline));
      if (newline < 0) return;
      this.#endOfLine();
      data = data.subarray(newline + 1);
    }
  };

  /** Keeps a piece of the current line, or starts dropping it once it passes the bound. */
  #take(part: Buffer): void {
    if (this.#dropping !== undefined || part.length === 0) return;
    if (this.#size + part.length > this.maxMessageBytes) {
      this.#dropping = Buffer.concat([...this.#chunks, part]).toString('utf8', 0, 256);
      this.#chunks = [];
      this.#size = 0;
      return;
    }
    this.#chunks.push(part);
    this.#size += part.length;
  }

  #endOfLine(): void {
    if (this.#dropping !== undefined) return this.#tooLong();
    const line = Buffer.concat(this.#chunks).toString('utf8').replace(/\r$/, '');
    this.#chunks = [];
    this.#size = 0;
    this.#line(line);
  }

  #tooLong(): void {
    const head = this.#dropping ?? '';
    this.#dropping = undefined;
    const id = /"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")/.exec(head)?.[1];
    this.#reply(
      id === undefined ? null : (JSON.parse(id) as string | number),
      INVALID_REQUEST,
      `The message is larger than ${this.maxMessageBytes} bytes, the most this server takes; it was dropped`,
    );
  }

  #line(line: string): void {
    if (line.trim() === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      return this.#reply(null, PARSE_ERROR, 'The message is not JSON');
    }
    const parsed = JSONRPCMessageSchema.safeParse(raw);
    if (!parsed.success) {
      const id = (raw as { id?: unknown } | null)?.id;
      return this.#reply(
        typeof id === 'string' || typeof id === 'number' ? id : null,
        INVALID_REQUEST,
        'The message is not a JSON-RPC 2.0 request, notification or response',
      );
    }
    const message = parsed.data;
    if (!this.#initialized && 'method' in message) {
      // Only an initialize request the server answers with a result initializes: not a notification, nor one it refused.
      if (message.method === 'initialize') {
        if (!('id' in message)) return;
        this.#initializing.add(message.id);
      } else if ('id' in message && message.method !== 'ping') {
        return this.#reply(
          message.id,
          INVALID_REQUEST,
          `The server is not initialized: send 'initialize' before '${message.method}'`,
        );
      }
    }
    this.onmessage?.(message);
  }

  #reply(id: string | number | null, code: number, message: string): void {
    // A JSON-RPC error answers a request that could not be read; its id is null when unknown.
    void this.send({ jsonrpc: '2.0', id, error: { code, message } } as unknown as JSONRPCMessage);
  }
}
