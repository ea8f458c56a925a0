import { TrellisError } from '../../../../index.js';
import type {} from '../mcp-error-codes.js';
import {
  Client,
  ErrorCode,
  McpError,
  type GetPromptResult,
  type ListPromptsResult,
  type ListResourcesResult,
  type ReadResourceResult,
  StdioClientTransport,
  StreamableHTTPClientTransport,
  StreamableHTTPError,
  ToolListChangedNotificationSchema,
  UnauthorizedError,
  type OAuthClientProvider,
  type CallToolResult,
  type McpToolDescription,
} from '../sdk.js';
import { answerElicitations, type McpElicitation, type McpElicitationAnswer } from './mcp-elicitation-requests.js';
import { describeSpec, isStdioSpec, type McpServerSpec } from './mcp-server-spec.js';
import {
  authorizationCodeProvider,
  clientCredentialsProvider,
  isAuthorizationCode,
  memoryTokenStore,
  type McpAuthorizationCodeSpec,
  type McpTokenStore,
} from './mcp-oauth.js';
import { LoopbackRedirect } from './mcp-oauth-redirect.js';

/** How a connection waits and retries; every field has a default. */
export interface McpConnectionOptions {
  /** How long the first connection (spawn + initialize + tools/list) may take. Default 30 s. */
  readonly connectTimeoutMs?: number;
  /** First delay between reconnection attempts, doubled (with jitter) up to `maxDelayMs`. Default 100 ms. */
  readonly initialDelayMs?: number;
  /** Default 5 s. */
  readonly maxDelayMs?: number;
  /** How long a tool call waits for a lost connection to come back before failing (retryable). Default 15 s. */
  readonly callWaitMs?: number;
  /** The MCP request timeout of one tool call. Default 10 min (use `timeoutMs` on the agent's tools for less). */
  readonly callTimeoutMs?: number;
  /**
   * Answers a server's elicitation (a question it asks a human in the middle of a call, such
   * as "book this flight?") in place. Given, the client announces the elicitation capability
   * and hands it every question; without it `McpServerClient` parks each question as a
   * Trellis approval (see `McpClientOptions.elicitation`). See {@link McpElicitation}.
   */
  readonly onElicitation?: (request: McpElicitation) => Promise<McpElicitationAnswer> | McpElicitationAnswer;
  /**
   * Where what OAuth gave the client for HTTP servers with `oauth` (tokens, a client
   * registration) is kept. `mcpTokensIn(store)` keeps it in the Trellis store (the `trellis`
   * CLI does); default: in this process only, so every run signs in again.
   */
  readonly tokenStore?: McpTokenStore;
  /**
   * A human must sign in to an HTTP server with `oauth: { flow: 'authorization_code' }`:
   * open `url` in their browser. The client waits up to `authorizeTimeoutMs` for the browser
   * to come back to its loopback redirect. Default: a Node process warning naming the URL.
   */
  readonly onAuthorize?: (request: { readonly server: string; readonly url: string }) => void | Promise<void>;
  /** How long a sign-in may take. Default 5 minutes. */
  readonly authorizeTimeoutMs?: number;
}

/** What a connection reports to its owner. */
export interface McpConnectionEvents {
  /** The server's tool list changed (a `list_changed` notification, or a reconnect found other tools). */
  toolsChanged(tools: readonly McpToolDescription[]): void;
  /** Something went wrong in the background (a failed reconnect attempt). */
  error(error: unknown): void;
}

const CLIENT_INFO = { name: 'trellis', version: '0.1.0' };
const STDERR_TAIL = 2000;

/**
 * One live link to an MCP server. It reconnects with backoff when the link drops (a stdio
 * child that exited is spawned again) and re-initialises when an HTTP server answers that
 * it no longer knows the session. A call that could not have reached the server is sent
 * again once, on the new link; a call cut off mid-way is not, since it may have run.
 */
export class McpConnection {
  private client: Client | undefined;
  private reconnecting: Promise<Client> | undefined;
  private closed = false;
  private tools: readonly McpToolDescription[] = [];
  private tokens: McpTokenStore | undefined;
  private stderr = '';
  private lastError: unknown;
  private readonly wake = new Set<() => void>();
  /** Clients replaced because the server no longer knew them: nothing sent on them can have run. */
  private readonly dropped = new WeakSet<Client>();

  constructor(
    readonly server: string,
    readonly spec: McpServerSpec,
    private readonly events: McpConnectionEvents,
    private readonly options: McpConnectionOptions = {},
  ) {}

  /** The tools the server listed on the latest connection. */
  get toolList(): readonly McpToolDescription[] {
    return this.tools;
  }

  /** The version the server announced (`0.0.0` when it gave none). */
  get serverVersion(): string {
    return this.client?.getServerVersion()?.version || '0.0.0';
  }

  /** The stdio child's process id while it runs. */
  get pid(): number | undefined {
    const transport = this.client?.transport;
    return transport instanceof StdioClientTransport ? (transport.pid ?? undefined) : undefined;
  }

  /**
   * Connects for the first time and lists the tools.
   *
   * @throws TrellisError `McpServerFailed` naming the server, how it is reached, the reason
   * and the end of its stderr.
   */
  async open(): Promise<readonly McpToolDescription[]> {
    try {
      this.client = await this.attempt(this.options.connectTimeoutMs ?? 30_000);
      return this.tools;
    } catch (error) {
      throw new TrellisError(
        'McpServerFailed',
        `MCP server '${this.server}' (${describeSpec(this.spec)}) could not be started: ${reason(error)}${this.stderrNote()}`,
        {
          hint: isStdioSpec(this.spec)
            ? 'Check the command, its arguments and that it speaks MCP on stdout'
            : 'Check the URL, the headers and that the server is up',
          kind: 'system',
          details: { server: this.server },
          cause: error,
        },
      );
    }
  }

  /** Whether the server offers resources (`resources/list`, `resources/read`). */
  get hasResources(): boolean {
    return this.client?.getServerCapabilities()?.resources !== undefined;
  }

  /** Whether the server offers prompts. */
  get hasPrompts(): boolean {
    return this.client?.getServerCapabilities()?.prompts !== undefined;
  }

  /** Every resource the server lists (all pages). */
  async listResources(signal?: AbortSignal): Promise<ListResourcesResult['resources']> {
    const client = await this.ready(signal);
    const resources: ListResourcesResult['resources'] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listResources(cursor === undefined ? {} : { cursor }, {
        signal,
        timeout: this.options.callTimeoutMs ?? 600_000,
      });
      resources.push(...page.resources);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return resources;
  }

  /** One resource's contents. */
  async readResource(uri: string, signal?: AbortSignal): Promise<ReadResourceResult> {
    const client = await this.ready(signal);
    try {
      return await client.readResource({ uri }, { signal, timeout: this.options.callTimeoutMs ?? 600_000 });
    } catch (error) {
      throw this.callError(`resource ${uri}`, error, signal);
    }
  }

  /** Every prompt the server lists (all pages). */
  async listPrompts(signal?: AbortSignal): Promise<ListPromptsResult['prompts']> {
    const client = await this.ready(signal);
    const prompts: ListPromptsResult['prompts'] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listPrompts(cursor === undefined ? {} : { cursor }, { signal });
      prompts.push(...page.prompts);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return prompts;
  }

  /** A prompt filled in with its arguments: the messages to put before a model. */
  async getPrompt(
    name: string,
    args: Readonly<Record<string, string>> = {},
    signal?: AbortSignal,
  ): Promise<GetPromptResult> {
    const client = await this.ready(signal);
    try {
      return await client.getPrompt({ name, arguments: { ...args } }, { signal });
    } catch (error) {
      throw this.callError(`prompt ${name}`, error, signal);
    }
  }

  /** Calls a tool of the server; see the class comment for what is retried. */
  async callTool(name: string, args: unknown, signal?: AbortSignal): Promise<CallToolResult> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.ready(signal);
      try {
        const timeout = this.options.callTimeoutMs ?? 600_000;
        return (await client.callTool({ name, arguments: args as Record<string, unknown> }, undefined, {
          signal,
          timeout,
        })) as CallToolResult;
      } catch (error) {
        if (error instanceof UnauthorizedError) {
          // The server wants a new sign-in (its refresh token was refused): the next call connects again and asks for it.
          this.drop(client);
          throw new TrellisError(
            'McpUnavailable',
            `MCP server '${this.server}' needs a new sign-in; the next call asks for it`,
            { retryable: true, kind: 'system' },
          );
        }
        const unsent =
          notDelivered(error) ||
          (this.dropped.has(client) &&
            error instanceof McpError &&
            (error.code as ErrorCode) === ErrorCode.ConnectionClosed);
        if (attempt === 0 && unsent && !signal?.aborted) {
          this.drop(client);
          continue;
        }
        throw this.callError(name, error, signal);
      }
    }
  }

  /** Closes the link for good: a stdio child gets stdin closed, then SIGTERM, then SIGKILL. */
  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.wake) wake();
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => undefined);
    await this.reconnecting?.catch(() => undefined);
  }

  /**
   * One connection: initialize and list the tools. An HTTP server with the authorization-code
   * flow may send a human to sign in first: the client listens for the redirect, finishes the
   * sign-in (the tokens go to the token store) and connects again.
   */
  private async attempt(timeoutMs: number): Promise<Client> {
    const oauth = isStdioSpec(this.spec) ? undefined : this.spec.oauth;
    if (!oauth || !isAuthorizationCode(oauth))
      return this.connectOnce(
        timeoutMs,
        oauth ? clientCredentialsProvider(this.server, oauth, this.tokenStore()) : undefined,
      );
    return this.signedIn(timeoutMs, oauth);
  }

  private async signedIn(timeoutMs: number, oauth: McpAuthorizationCodeSpec): Promise<Client> {
    const redirect = await LoopbackRedirect.listen(this.server, oauth.redirectUrl);
    let closeSignIn = () => {};
    try {
      const signIn =
        this.options.onAuthorize ??
        (({ server, url }) =>
          process.emitWarning(`MCP server '${server}' needs you to sign in: open ${url}`, 'TrellisMcpSignIn'));
      // A sign-in asked for after this attempt (a refresh refused mid-call) would send the
      // browser to a redirect nobody listens on: the next connection asks for it instead.
      let listening = true;
      let code: Promise<string> | undefined;
      const provider = authorizationCodeProvider(this.server, oauth, this.tokenStore(), redirect.url, (url) => {
        if (!listening) return undefined;
        // Ready for the browser before anyone is sent to it.
        code = redirect.code(() => provider.expectedState, this.options.authorizeTimeoutMs ?? 300_000);
        code.catch(() => undefined);
        return signIn({ server: this.server, url: url.href });
      });
      closeSignIn = () => void (listening = false);
      let transport: StreamableHTTPClientTransport | undefined;
      try {
        return await this.connectOnce(timeoutMs, provider, (made) => (transport = made));
      } catch (error) {
        if (!(error instanceof UnauthorizedError) || !code || !transport) throw error;
      }
      await transport.finishAuth(await code);
      return await this.connectOnce(timeoutMs, provider);
    } finally {
      closeSignIn();
      await redirect.close();
    }
  }

  private tokenStore(): McpTokenStore {
    return (this.tokens ??= this.options.tokenStore ?? memoryTokenStore());
  }

  private async connectOnce(
    timeoutMs: number,
    authProvider: OAuthClientProvider | undefined,
    made?: (transport: StreamableHTTPClientTransport) => void,
  ): Promise<Client> {
    const onElicitation = this.options.onElicitation;
    const client = new Client(CLIENT_INFO, { capabilities: onElicitation ? { elicitation: {} } : {} });
    if (onElicitation) answerElicitations(client, this.server, onElicitation);
    const transport = isStdioSpec(this.spec)
      ? new StdioClientTransport({
          command: this.spec.command,
          args: [...(this.spec.args ?? [])],
          env: this.spec.env ? { ...this.spec.env } : undefined,
          cwd: this.spec.cwd,
          stderr: 'pipe',
        })
      : new StreamableHTTPClientTransport(new URL(this.spec.url), {
          requestInit: { headers: { ...this.spec.headers } },
          authProvider,
        });
    if (transport instanceof StreamableHTTPClientTransport) made?.(transport);
    if (transport instanceof StdioClientTransport) {
      transport.stderr?.on(
        'data',
        (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_TAIL)),
      );
    }
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void this.refresh(client));
    client.onclose = () => this.lost(client);
    try {
      await client.connect(transport, { timeout: timeoutMs });
      this.tools = await listTools(client, timeoutMs);
      if (this.closed) throw new TrellisError('Cancelled', `MCP server '${this.server}': the connection was closed`);
      return client;
    } catch (error) {
      client.onclose = undefined;
      await client.close().catch(() => undefined);
      throw error;
    }
  }

  /** The current client, or the one a reconnection brings within `callWaitMs`. */
  private async ready(signal?: AbortSignal): Promise<Client> {
    if (this.client) return this.client;
    if (this.closed)
      throw new TrellisError(
        'McpUnavailable',
        `MCP server '${this.server}' is closed (the app stopped or the plugin was uninstalled)`,
      );
    const waitMs = this.options.callWaitMs ?? 15_000;
    const reconnected = this.reconnect();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const gaveUp = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.unavailable(waitMs)), waitMs);
      onAbort = () => reject(new TrellisError('Cancelled', `The call to MCP server '${this.server}' was cancelled`));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([reconnected, gaveUp]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }

  private reconnect(): Promise<Client> {
    if (!this.reconnecting) {
      this.reconnecting = this.reconnectLoop().finally(() => (this.reconnecting = undefined));
      this.reconnecting.catch(() => undefined);
    }
    return this.reconnecting;
  }

  private async reconnectLoop(): Promise<Client> {
    const before = JSON.stringify(this.tools);
    let delay = this.options.initialDelayMs ?? 100;
    for (;;) {
      if (this.closed) throw new TrellisError('McpUnavailable', `MCP server '${this.server}' is closed`);
      try {
        const client = await this.attempt(this.options.connectTimeoutMs ?? 30_000);
        this.client = client;
        if (JSON.stringify(this.tools) !== before) this.events.toolsChanged(this.tools);
        return client;
      } catch (error) {
        this.lastError = error;
        this.events.error(
          new TrellisError(
            'McpUnavailable',
            `Reconnecting to MCP server '${this.server}' failed: ${reason(error)}; trying again in ${Math.round(delay)} ms`,
            { retryable: true, kind: 'system' },
          ),
        );
      }
      await this.sleep(delay * (0.8 + Math.random() * 0.4));
      delay = Math.min(delay * 2, this.options.maxDelayMs ?? 5000);
    }
  }

  /** The link dropped by itself (the child exited, the stream closed): reconnect in the background. */
  private lost(client: Client): void {
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    void this.reconnect().catch(() => undefined);
  }

  /** The server no longer knows this link (or never got the request): replace it. */
  private drop(client: Client): void {
    this.dropped.add(client);
    if (this.client === client) this.client = undefined;
    client.onclose = undefined;
    void client.close().catch(() => undefined);
  }

  private async refresh(client: Client): Promise<void> {
    try {
      this.tools = await listTools(client, this.options.connectTimeoutMs ?? 30_000);
      this.events.toolsChanged(this.tools);
    } catch (error) {
      this.events.error(error);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake.add(done);
    });
  }

  private callError(name: string, error: unknown, signal?: AbortSignal): TrellisError {
    if (TrellisError.is(error)) return error;
    const where = `${this.server}/${name}`;
    if (signal?.aborted) return new TrellisError('Cancelled', `The call to MCP tool ${where} was cancelled`);
    if (error instanceof McpError && (error.code as ErrorCode) === ErrorCode.ConnectionClosed) {
      return new TrellisError(
        'McpDisconnected',
        `The connection to MCP server '${this.server}' dropped during the call to ${name}; it may or may not have run`,
        {
          retryable: true,
          kind: 'system',
          hint: 'Check whether it took effect before calling it again',
        },
      );
    }
    if (error instanceof McpError && (error.code as ErrorCode) === ErrorCode.RequestTimeout) {
      return new TrellisError('ToolTimeout', `MCP tool ${where} did not answer in time`, {
        retryable: true,
        kind: 'system',
      });
    }
    return new TrellisError('ToolFailed', `MCP tool ${where} failed: ${reason(error)}`, {
      kind: 'system',
      cause: error,
    });
  }

  private unavailable(waitMs: number): TrellisError {
    const last = this.lastError === undefined ? '' : ` (last attempt: ${reason(this.lastError)})`;
    return new TrellisError(
      'McpUnavailable',
      `MCP server '${this.server}' (${describeSpec(this.spec)}) has been unreachable for ${waitMs} ms${last}${this.stderrNote()}`,
      {
        retryable: true,
        kind: 'system',
        hint: 'Trellis keeps reconnecting; try again shortly',
      },
    );
  }

  private stderrNote(): string {
    const tail = this.stderr.trim();
    return tail ? `\n--- end of its stderr ---\n${tail}` : '';
  }
}

async function listTools(client: Client, timeout: number): Promise<McpToolDescription[]> {
  const tools: McpToolDescription[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

/**
 * Errors that prove the request never reached a server that could run it: no transport
 * (the stdio child is gone), the HTTP session is unknown (404: the server restarted), or
 * the connection was refused.
 */
function notDelivered(error: unknown): boolean {
  if (error instanceof StreamableHTTPError) return error.code === 404;
  // Duck-typed: fetch's errors may come from another realm (a test VM), where instanceof fails.
  const e = error as { message?: unknown; cause?: { code?: unknown } } | undefined;
  return e?.message === 'Not connected' || e?.cause?.code === 'ECONNREFUSED';
}

function reason(error: unknown): string {
  const message = (error as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : String(error);
}
