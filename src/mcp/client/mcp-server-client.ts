import type { Trellis } from '../../../index.js';
import { TrellisError } from '../../../index.js';
import type { PluginClass } from '../../../index.js';
import type { McpToolDescription } from '../sdk.js';
import { McpConnection, type McpConnectionOptions } from './mcp-connection.js';
import { buildMcpPluginClass, type McpPluginSource } from './mcp-plugin-class.js';
import { describeSpec, mcpSpecProblems, type McpServerSpec } from './mcp-server-spec.js';

/** Options of {@link McpServerClient.connect} and {@link connectMcpServers}. */
export interface McpClientOptions extends McpConnectionOptions {
  /** Tool names are `<prefix>.<mcp tool name>`. Default: the server's name. */
  readonly prefix?: string;
  /** Problems found in the background (a reconnect attempt, a failed reload). Default: a Node process warning. */
  readonly onError?: (error: unknown) => void;
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

  private constructor(
    private readonly app: Trellis,
    readonly name: string,
    spec: McpServerSpec,
    private readonly options: McpClientOptions,
  ) {
    this.report = options.onError ?? ((error) => process.emitWarning(error instanceof Error ? error.message : String(error), 'TrellisMcpWarning'));
    this.connection = new McpConnection(name, spec, { toolsChanged: (tools) => this.swap(tools), error: this.report }, options);
  }

  /**
   * Connects to the server, lists its tools and installs them as plugin `name`.
   *
   * @throws TrellisError `InvalidConfig` for a bad spec, `McpServerFailed` when the server
   * does not start or answer (with the end of its stderr), or the install's own error.
   */
  static async connect(app: Trellis, name: string, spec: McpServerSpec, options: McpClientOptions = {}): Promise<McpServerClient> {
    const problems = mcpSpecProblems(name, spec);
    if (problems.length > 0) throw new TrellisError('InvalidConfig', `MCP server '${name}' is misconfigured:\n- ${problems.join('\n- ')}`, { hint: 'See docs/mcp.md' });
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
    return this.installed()?.tools.map((t) => t.name) ?? [];
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
  getPrompt(name: string, args?: Readonly<Record<string, string>>, signal?: AbortSignal): ReturnType<McpConnection['getPrompt']> {
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
      callTool: (tool, args, signal) => this.connection.callTool(tool, args, signal),
      hasResources: this.connection.hasResources,
      listResources: (signal) => this.connection.listResources(signal),
      readResource: (uri, signal) => this.connection.readResource(uri, signal),
      released: async (type) => {
        if (type === this.current) await this.connection.close();
      },
      skipped: (tool, reason) => this.report(new TrellisError('UnsupportedSchema', `MCP tool '${tool}' of server '${this.name}' was left out: ${reason}`)),
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
export async function connectMcpServers(app: Trellis, servers: Readonly<Record<string, McpServerSpec>>, options: McpClientOptions = {}): Promise<McpServerClient[]> {
  const clients: McpServerClient[] = [];
  for (const [name, spec] of Object.entries(servers)) clients.push(await McpServerClient.connect(app, name, spec, options));
  return clients;
}
