import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { Plugin, Tool, TrellisError, type PluginClass, type ToolContext, type Trellis } from '../../../index.js';
import { A2aRemoteAgent } from './a2a-remote-agent.js';

/** The input of a remote agent's `<name>.ask` tool. */
export class AskRemoteAgent {
  /** What to ask, or the answer to the remote agent's question. */
  @IsString()
  @MaxLength(100_000)
  message!: string;

  /** The remote task to continue: given when the agent answered `input-required`. */
  @IsOptional()
  @IsString()
  @MaxLength(200)
  taskId?: string;
}

/** What `<name>.ask` returns to the model. */
export interface RemoteAgentAnswer {
  /** The remote task's state: `completed`, `input-required`, `failed`, … */
  readonly state: string;
  readonly taskId?: string;
  /** The remote agent's reply, or its question. */
  readonly text: string;
  /** Data parts of the remote agent's last message (e.g. the calls it waits on). */
  readonly data?: readonly unknown[];
}

/** Options of {@link A2aAgentClient.connect}. */
export interface A2aClientOptions {
  /** The tool's description for the model. Default: from the agent card. */
  readonly description?: string;
  /** The SDK's client factory (transports, card resolver, interceptors). Default: JSON-RPC and REST. */
  readonly factory?: ClientFactory;
}

/**
 * A remote A2A agent as a tool of this app: a plugin named `name` with one tool
 * `<name>.ask`, so the call goes through `tool.gate` (approval), permissions, middleware and
 * events like any other. The remote context is the calling session's (one conversation
 * with the remote agent per Trellis session). A remote `input-required` (the other agent
 * waits for a human's decision) is the tool's answer `{ state: 'input-required', taskId, text }`:
 * the model relays the question, and calls the tool again with the answer and the `taskId`.
 *
 * @example
 * await A2aAgentClient.connect(app, 'billing', 'https://billing.example.com/');
 * app.agent({ name: 'front', model, instructions: 'Ask billing.ask about invoices.' });
 */
export class A2aAgentClient {
  private constructor(
    readonly name: string,
    private readonly remote: A2aRemoteAgent,
  ) {}

  /**
   * Reads the remote agent's card and installs the plugin.
   *
   * @throws TrellisError `A2aUnavailable` when the card cannot be read; the install's own error.
   */
  static async connect(
    app: Trellis,
    name: string,
    url: string,
    options: A2aClientOptions = {},
  ): Promise<A2aAgentClient> {
    let client: Client;
    try {
      client = await (options.factory ?? new ClientFactory()).createFromUrl(url);
    } catch (error) {
      throw new TrellisError(
        'A2aUnavailable',
        `The A2A agent at ${url} could not be reached: ${error instanceof Error ? error.message : String(error)}`,
        {
          hint: 'Check the URL (its /.well-known/agent-card.json must answer) and that the agent is up',
          kind: 'system',
          retryable: true,
        },
      );
    }
    const card = await client.getAgentCard();
    const remote = new A2aAgentClient(name, new A2aRemoteAgent(name, url, options.factory, client));
    await app.install(
      remote.pluginClass(
        options.description ??
          `Ask the remote agent '${card.name}': ${card.description}. Give it a whole question; its answer is text. If it answers input-required, relay its question and call again with the answer and its taskId.`,
      ),
    );
    return remote;
  }

  /** Sends one message to the remote agent and waits for the task to settle (or ask for input). */
  async ask(input: AskRemoteAgent, contextId: string, signal?: AbortSignal): Promise<RemoteAgentAnswer> {
    const sessionId = contextId.replace(/^trellis:/, '');
    return this.remote.ask(input.message, {
      sessionId,
      callId: '',
      idempotencyKey: '',
      ...(input.taskId !== undefined ? { taskId: input.taskId } : {}),
      ...(signal ? { signal } : {}),
    });
  }

  private pluginClass(description: string): PluginClass {
    const remote = this;
    const type = class {
      ask(input: AskRemoteAgent, ctx: ToolContext) {
        const contextId = `trellis:${ctx.sessionId}`;
        return remote.ask(input, contextId, ctx.signal);
      }
    };
    Object.defineProperty(type, 'name', { value: `A2aAgent_${this.name.replace(/\W/g, '_')}` });
    const proto = type.prototype as unknown as Record<string, unknown>;
    Tool({ name: `${this.name}.ask`, description, input: AskRemoteAgent, tags: ['a2a'] })(
      proto,
      'ask',
      Object.getOwnPropertyDescriptor(proto, 'ask')!,
    );
    Plugin({ name: this.name, version: '1.0.0', description: `The remote A2A agent '${this.name}'`, tags: ['a2a'] })(
      type,
    );
    return type;
  }
}
