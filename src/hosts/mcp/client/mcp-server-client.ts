import type { Trellis } from '../../../../index.js';
import { TrellisError } from '../../../../index.js';
import { KERNEL_KEYS } from '../../../../plugin.js';
import type { PluginClass } from '../../../../index.js';
import type { McpToolDescription } from '../sdk.js';
import { McpConnection, type McpConnectionOptions } from './mcp-connection.js';
import type { McpElicitation, McpElicitationAnswer } from './mcp-elicitation-requests.js';
import {
  ElicitationParking,
  elicitationOptionsProblem,
  type ElicitationCaller,
  type McpElicitationOptions,
} from './mcp-elicitation.js';
import { buildMcpPluginClass, type McpPluginSource } from './mcp-plugin-class.js';
import { describeSpec, mcpSpecProblems, type McpServerSpec } from './mcp-server-spec.js';

/** Options of {@link McpServerClient.connect} and {@link connectMcpServers}. */
export interface McpClientOptions extends McpConnectionOptions {
  /** Tool names are `<prefix>.<mcp tool name>`. Default: the server's name. */
  readonly prefix?: string;
  /** Problems found in the background (a reconnect attempt, a failed reload). Default: a Node process warning. */
  readonly onError?: (error: unknown) => void;
  /**
   * A server's questions to a human (elicitation) during a call, when `onElicitation` does not
   * answer them in place: each is parked as a suspended call of a session of its own
   * (`<caller session>:elicitation-<uuid>`), decided like any approval — `trellis resume`, the
   * dev page, the Nest sessions API, `session.resume` — while the server's request waits (see
   * {@link McpElicitationOptions}). `false`: the client does not announce elicitation, and a
   * server that asks usually fails its call. Default: parked, with the defaults.
   */
  readonly elicitation?: McpElicitationOptions | false;
}

/**
 * An MCP server's tools as a Trellis plugin named after the server: installed on connect,
 * swapped (`app.reload`) when the server's tool list changes, and disconnected — its stdio
 * child stopped — when the app stops or the plugin is uninstalled.
 *
 * @example
 * await McpServerClient.connect(app, 'files', { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'] });
 * // tools: files.read_file, files.list_directory, … — gated, permissioned, middlewared like any tool
 */
export class McpServerClient {
  private current: PluginClass | undefined;
  private swaps: Promise<void> = Promise.resolve();
  private readonly connection: McpConnection;
  private readonly report: (error: unknown) => void;
  /** Puts the server's questions to humans as approvals; undefined with `onElicitation` or `elicitation: false`. */
  private readonly parking: ElicitationParking | undefined;
  private elicitationTool = '';
  /** The tool calls running on the server's connection now: a question the server asks meanwhile is theirs. */
  private readonly running = new Set<ElicitationCaller>();

  private constructor(
    private readonly app: Trellis,
    readonly name: string,
    spec: McpServerSpec,
    private readonly options: McpClientOptions,
  ) {
    this.report =
      options.onError ??
      ((error) => process.emitWarning(error instanceof Error ? error.message : String(error), 'TrellisMcpWarning'));
    const parks = options.onElicitation === undefined && options.elicitation !== false;
    this.parking = parks
      ? new ElicitationParking(app, name, name, () => this.elicitationTool, options.elicitation || {})
      : undefined;
    const onElicitation =
      options.onElicitation ?? (this.parking ? (question: McpElicitation) => this.ask(question) : undefined);
    this.connection = new McpConnection(
      name,
      spec,
      { toolsChanged: (tools) => this.swap(tools), error: this.report },
      { ...options, onElicitation },
    );
  }

  /** A server's question, parked for a human; its answer once decided. */
  private async ask(question: McpElicitation): Promise<McpElicitationAnswer> {
    const answer = await this.parking!.ask(question, [...this.running]);
    return answer.action === 'accept'
      ? { action: 'accept', content: answer.content as McpElicitationAnswer['content'] }
      : answer;
  }

  /**
   * Connects to the server, lists its tools and installs them as plugin `name`.
   *
   * @throws TrellisError `InvalidConfig` for a bad spec, `McpServerFailed` when the server
   * does not start or answer (with the end of its stderr), or the install's own error.
   */
  static async connect(
    app: Trellis,
    name: string,
    spec: McpServerSpec,
    options: McpClientOptions = {},
  ): Promise<McpServerClient> {
    const problems = mcpSpecProblems(name, spec);
    if (problems.length > 0)
      throw new TrellisError('InvalidConfig', `MCP server '${name}' is misconfigured:\n- ${problems.join('\n- ')}`, {
        hint: 'See docs/mcp.md',
      });
    const problem = elicitationOptionsProblem(options.elicitation);
    if (problem) throw problem;
    const client = new McpServerClient(app, name, spec, options);
    const tools = await client.connection.open();
    try {
      client.current = client.build(tools);
      await app.install(client.current);
    } catch (error) {
      client.current = undefined;
      await client.connection.close();
      throw error;
    }
    return client;
  }

  /** The Trellis names of the server's tools, as installed now. */
  get toolNames(): readonly string[] {
    return (
      this.installed()
        ?.tools.filter((t) => !t.tags.includes('mcp-elicitation'))
        .map((t) => t.name) ?? []
    );
  }

  /** The stdio child's process id while it runs. */
  get pid(): number | undefined {
    return this.connection.pid;
  }

  /** The server's resources (all pages); also offered to the model as `<prefix>.list_resources`. */
  listResources(signal?: AbortSignal): ReturnType<McpConnection['listResources']> {
    return this.connection.listResources(signal);
  }

  /** One resource's contents (`resources/read`). */
  readResource(uri: string, signal?: AbortSignal): ReturnType<McpConnection['readResource']> {
    return this.connection.readResource(uri, signal);
  }

  /** The server's prompts (all pages): templates a host offers its users, e.g. as slash commands. */
  listPrompts(signal?: AbortSignal): ReturnType<McpConnection['listPrompts']> {
    return this.connection.listPrompts(signal);
  }

  /**
   * A prompt filled in with its arguments. Its text messages, in order, are what
   * `session.send` takes: `(await mcp.getPrompt('review', { file })).messages`.
   */
  getPrompt(
    name: string,
    args?: Readonly<Record<string, string>>,
    signal?: AbortSignal,
  ): ReturnType<McpConnection['getPrompt']> {
    return this.connection.getPrompt(name, args, signal);
  }

  /** Resolves once every tool-list change seen so far is installed. */
  settled(): Promise<void> {
    return this.swaps;
  }

  private installed() {
    return this.app.describe().plugins.find((p) => p.name === this.name);
  }

  private build(tools: readonly McpToolDescription[]): PluginClass {
    const source: McpPluginSource = {
      server: this.name,
      via: describeSpec(this.connection.spec),
      prefix: this.options.prefix ?? this.name,
      version: this.connection.serverVersion,
      callTool: async (tool, args, ctx) => {
        const owner = ctx.get(KERNEL_KEYS.owner);
        const caller: ElicitationCaller = {
          sessionId: ctx.sessionId,
          owner: typeof owner === 'string' ? owner : undefined,
        };
        this.running.add(caller);
        try {
          return await this.connection.callTool(tool, args, ctx.signal);
        } finally {
          this.running.delete(caller);
        }
      },
      hasResources: this.connection.hasResources,
      listResources: (signal) => this.connection.listResources(signal),
      readResource: (uri, signal) => this.connection.readResource(uri, signal),
      released: async (type) => {
        if (type === this.current) await this.connection.close();
      },
      skipped: (tool, reason) =>
        this.report(
          new TrellisError('UnsupportedSchema', `MCP tool '${tool}' of server '${this.name}' was left out: ${reason}`),
        ),
      ...(this.parking && { elicitation: { named: (tool: string) => void (this.elicitationTool = tool) } }),
    };
    return buildMcpPluginClass(source, tools);
  }

  private swap(tools: readonly McpToolDescription[]): void {
    this.swaps = this.swaps.then(async () => {
      if (this.current === undefined || !this.installed()) return;
      const previous = this.current;
      const next = this.build(tools);
      this.current = next;
      try {
        await this.app.reload(this.name, next);
      } catch (error) {
        this.current = previous;
        this.report(error);
      }
    });
  }
}

/** Connects every server of a `mcpServers` config, in order; see {@link McpServerClient.connect}. */
export async function connectMcpServers(
  app: Trellis,
  servers: Readonly<Record<string, McpServerSpec>>,
  options: McpClientOptions = {},
): Promise<McpServerClient[]> {
  const clients: McpServerClient[] = [];
  for (const [name, spec] of Object.entries(servers))
    clients.push(await McpServerClient.connect(app, name, spec, options));
  return clients;
}
