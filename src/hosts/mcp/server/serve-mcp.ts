import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import type { Agent } from '../../../../index.js';
import type { Trellis } from '../../../../index.js';
import { hostName, isLoopback } from '../../../net/loopback.js';
import { StreamableHTTPServerTransport } from '../sdk.js';
import { BoundedStdioTransport } from './bounded-stdio-transport.js';
import type { ServedApprovalOptions } from './served-approval.js';
import { createMcpToolServer, McpClientSessions, toolOnlyAgent, type McpToolHost } from './mcp-tool-server.js';

/** Options of {@link serveMcp}. */
export interface ServeMcpOptions {
  /** `stdio` (default: this process's stdin/stdout) or Streamable HTTP in stateless mode. */
  readonly transport:
    | {
        readonly kind: 'stdio';
        readonly stdin?: Readable;
        readonly stdout?: Writable;
        /** The longest message taken; a longer one is answered with a JSON-RPC error and the connection goes on. Default 4 MiB. */
        readonly maxMessageBytes?: number;
      }
    | { readonly kind: 'http'; readonly port?: number; readonly host?: string; readonly path?: string };
  /** Tool names or globs (`orders.*`) to expose; default all of the agent's tools. */
  readonly tools?: readonly string[];
  /** The agent whose sessions run the calls (its `plugins` filter applies). Default: all plugins, no model. */
  readonly agent?: Agent;
  /** Agents exposed as one `ask_<name>` tool each, running a whole turn. */
  readonly ask?: readonly Agent[];
  /**
   * HTTP: maps the request's bearer token (or `undefined` without one) to host context
   * (`app.*` keys, e.g. `{ 'app.scopes': [...] }`) that permissions and `AuthMiddleware`
   * read; return `undefined` to refuse the request (401). Default: no auth, no context.
   */
  readonly authenticate?: (
    token: string | undefined,
    request: IncomingMessage,
  ) => Promise<Readonly<Record<string, unknown>> | undefined> | Readonly<Record<string, unknown>> | undefined;
  /**
   * Session context (`app.*` keys) every MCP session gets, as `agent.session(id, { context })`
   * gives it (what `trellis mcp` passes from the config's `context`). Over HTTP the keys
   * `authenticate` returns are added over these.
   */
  readonly context?: Readonly<Record<string, unknown>>;
  /**
   * A call a gate suspends: asked of the client by elicitation when it supports it, else
   * parked in a session of its own for `trellis resume` / the dev page / `session.resume`,
   * and waited for up to `waitMs` (default 10 minutes). See docs/mcp.md.
   */
  readonly approvals?: ServedApprovalOptions;
  /** Announced to clients. Default `trellis` / `0.1.0`. */
  readonly name?: string;
  readonly version?: string;
}

/** A running MCP endpoint. */
export interface McpServing {
  /** HTTP: where clients connect (`http://host:port/mcp`). */
  readonly url?: string;
  /** Resolves when a stdio client disconnects (stdin closed) or after `close()`. */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves the app's tools over MCP. Each call runs through the whole tool pipeline in a
 * session of its own MCP client: stdio has one per connection; stateless HTTP has no MCP
 * session, so each request gets a fresh session, ended when the response is sent.
 *
 * @example
 * const serving = await serveMcp(app, { transport: { kind: 'http', port: 3333 }, tools: ['orders.*'],
 *   authenticate: (token) => (token === process.env.TOKEN ? { 'app.scopes': ['orders:read'] } : undefined) });
 */
export async function serveMcp(app: Trellis, options: ServeMcpOptions): Promise<McpServing> {
  const host: McpToolHost = {
    app,
    agent: options.agent ?? toolOnlyAgent(app),
    allow: options.tools,
    ask: options.ask,
    name: options.name ?? 'trellis',
    version: options.version ?? '0.1.0',
    approvals: options.approvals,
  };
  const context = options.context ?? {};
  return options.transport.kind === 'stdio'
    ? serveStdio(host, options.transport, context)
    : serveHttp(host, options.transport, options.authenticate, context);
}

async function serveStdio(
  stateless: McpToolHost,
  transport: { stdin?: Readable; stdout?: Writable; maxMessageBytes?: number },
  context: Readonly<Record<string, unknown>>,
): Promise<McpServing> {
  const sessions = new McpClientSessions(`mcp-stdio-${randomUUID()}`, context);
  // One connection for the whole session: the server can ask the client mid-call (elicitation).
  const server = createMcpToolServer({ ...stateless, canElicit: true }, sessions);
  let done!: () => void;
  const closed = new Promise<void>((resolve) => (done = resolve));
  server.onclose = () => void sessions.end().finally(done);
  const stdin = transport.stdin ?? process.stdin;
  // The transport does not notice the end of its input: closing stdin ends the connection.
  stdin.once('end', () => void server.close());
  await server.connect(new BoundedStdioTransport(stdin, transport.stdout ?? process.stdout, transport.maxMessageBytes));
  return { closed, close: () => server.close() };
}

async function serveHttp(
  host: McpToolHost,
  where: { port?: number; host?: string; path?: string },
  authenticate: ServeMcpOptions['authenticate'],
  base: Readonly<Record<string, unknown>>,
): Promise<McpServing> {
  const path = where.path ?? '/mcp';
  // Bound to this machine, the endpoint answers only this machine's names and pages: a web
  // page (DNS rebinding, or a plain cross-site POST) cannot call tools through a browser.
  const loopbackOnly = isLoopback(where.host ?? '127.0.0.1');
  const http = createServer((req, res) => {
    void (async () => {
      if (new URL(req.url ?? '/', 'http://x').pathname !== path) return void res.writeHead(404).end();
      if (req.method !== 'POST')
        return void res.writeHead(405, { allow: 'POST' }).end('This MCP endpoint is stateless: POST only');
      const foreign = loopbackOnly ? foreignRequest(req) : undefined;
      if (foreign) return void res.writeHead(403).end(foreign);
      const auth = req.headers.authorization;
      const token = auth?.startsWith('Bearer ') ? auth.slice(7).trim() : undefined;
      const granted = authenticate ? await authenticate(token, req) : {};
      if (granted === undefined)
        return void res.writeHead(401, { 'www-authenticate': 'Bearer' }).end('A valid bearer token is required');
      const sessions = new McpClientSessions(`mcp-http-${randomUUID()}`, { ...base, ...granted });
      const server = createMcpToolServer(host, sessions);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on(
        'close',
        () =>
          void transport
            .close()
            .finally(() => server.close())
            .finally(() => sessions.end()),
      );
      await server.connect(transport);
      await transport.handleRequest(req, res);
    })().catch((error: unknown) => {
      if (!res.headersSent)
        res.writeHead(500).end(`Internal error: ${error instanceof Error ? error.message : String(error)}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(where.port ?? 0, where.host ?? '127.0.0.1', resolve);
  });
  const address = http.address() as AddressInfo;
  const url = `http://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}${path}`;
  let done!: () => void;
  const closed = new Promise<void>((resolve) => (done = resolve));
  const close = () =>
    new Promise<void>((resolve) => {
      http.closeAllConnections();
      http.close(() => resolve());
    }).finally(done);
  return { url, closed, close };
}

/**
 * Why a request to a loopback-bound endpoint is refused: a Host header that names another
 * machine (DNS rebinding), or an `Origin` of a page that is not served from this machine.
 * MCP clients outside a browser send no `Origin`.
 */
function foreignRequest(req: IncomingMessage): string | undefined {
  const host = req.headers.host ?? '';
  if (!isLoopback(hostName(host)))
    return `Host "${host}" is not this machine; this MCP endpoint answers loopback names only`;
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  let originHost: string;
  try {
    originHost = new URL(origin).hostname;
  } catch {
    return `Origin "${origin}" is not a URL`;
  }
  return isLoopback(originHost)
    ? undefined
    : `Origin "${origin}" is not this machine; this MCP endpoint refuses calls from other sites' pages`;
}
