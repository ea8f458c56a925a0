import { TaskState, type Message, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import {
  TrellisError,
  type AgentToolSpec,
  type RemoteAgent,
  type RemoteAgentCall,
  type RemoteAgentReply,
} from '../../../index.js';
import { a2aMessage, dataOf, textOf, textPart } from './a2a-parts.js';

/** Options of {@link a2aAgent}. */
export interface A2aAgentOptions {
  /** The tool's name, as the model sees it. */
  readonly name: string;
  /** The agent's base URL (its `/.well-known/agent-card.json` is read at the first call). */
  readonly url: string;
  /** When to use this agent: a prompt for the model. Default: says to relay an `input-required` question. */
  readonly description?: string;
  /** The remote agent's label in events and errors. Default: `name`. */
  readonly agent?: string;
  /** The SDK's client factory (transports, card resolver, interceptors). Default: JSON-RPC and REST. */
  readonly factory?: ClientFactory;
}

/**
 * A remote A2A agent as an entry of an agent's `agents`: the model calls it as the tool
 * `name` (`{ input, taskId? }`), through gates, permissions, middleware and events like any
 * tool. The card is read at the first call, so the spec can be written before the remote
 * agent is up. A remote `input-required` comes back as `{ state: 'input-required', taskId,
 * text }`; the model relays the question and calls again with the answer and that `taskId`.
 *
 * @example
 * app.agent({ name: 'front', model, instructions: '…',
 *   agents: [a2aAgent({ name: 'ask_billing', url: 'https://billing.example.com/' })] });
 */
export function a2aAgent(options: A2aAgentOptions): AgentToolSpec {
  const label = options.agent ?? options.name;
  return {
    agent: label,
    name: options.name,
    description:
      options.description ??
      `Ask the remote agent '${label}'. Give it a whole question; its answer is text. If it answers input-required, relay its question and call again with the answer and its taskId.`,
    remote: new A2aRemoteAgent(label, options.url, options.factory),
  };
}

/** A remote A2A agent reached through the SDK's client, connected at its first call. */
export class A2aRemoteAgent implements RemoteAgent {
  readonly tags = ['a2a'] as const;
  #client: Promise<Client> | undefined;

  constructor(
    readonly name: string,
    readonly url: string,
    private readonly factory: ClientFactory = new ClientFactory(),
    client?: Client,
  ) {
    if (client) this.#client = Promise.resolve(client);
  }

  /** The SDK client, reading the card once; a failed read is tried again at the next call. */
  client(): Promise<Client> {
    this.#client ??= this.factory.createFromUrl(this.url).catch((error: unknown) => {
      this.#client = undefined;
      throw new TrellisError(
        'A2aUnavailable',
        `The A2A agent at ${this.url} could not be reached: ${error instanceof Error ? error.message : String(error)}`,
        {
          hint: 'Check the URL (its /.well-known/agent-card.json must answer) and that the agent is up',
          kind: 'system',
          retryable: true,
        },
      );
    });
    return this.#client;
  }

  /** Sends one message in the calling session's context (`trellis:<session id>`) and waits for the task to settle or ask for input. */
  async ask(text: string, call: RemoteAgentCall): Promise<RemoteAgentReply> {
    const client = await this.client();
    const message: Message = a2aMessage('user', [textPart(text)], {
      contextId: `trellis:${call.sessionId}`,
      taskId: call.taskId,
    });
    let result: Message | Task;
    try {
      result = await client.sendMessage(
        {
          tenant: '',
          message,
          configuration: {
            acceptedOutputModes: ['text/plain', 'application/json'],
            taskPushNotificationConfig: undefined,
            returnImmediately: false,
          },
          metadata: {},
        },
        { signal: call.signal },
      );
    } catch (error) {
      if (call.signal?.aborted)
        throw new TrellisError('Cancelled', `The call to the A2A agent '${this.name}' was cancelled`);
      throw new TrellisError(
        'ToolFailed',
        `The A2A agent '${this.name}' failed: ${error instanceof Error ? error.message : String(error)}`,
        { kind: 'system', cause: error },
      );
    }
    if ('messageId' in result && !('status' in result)) return { state: 'completed', text: textOf(result) };
    const task = result as Task;
    const state = stateName(task.status?.state);
    const said = task.status?.message;
    const reply = task.artifacts.find((a) => a.artifactId === 'reply') ?? task.artifacts.at(-1);
    const answer =
      state === 'completed' ? textOf(said) || (reply ? textOf({ parts: reply.parts } as Message) : '') : textOf(said);
    const data = dataOf(said);
    return { state, taskId: task.id, text: answer, ...(data.length > 0 ? { data } : {}) };
  }
}

function stateName(state: TaskState | undefined): string {
  switch (state) {
    case TaskState.TASK_STATE_COMPLETED:
      return 'completed';
    case TaskState.TASK_STATE_INPUT_REQUIRED:
      return 'input-required';
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      return 'auth-required';
    case TaskState.TASK_STATE_FAILED:
      return 'failed';
    case TaskState.TASK_STATE_CANCELED:
      return 'canceled';
    case TaskState.TASK_STATE_REJECTED:
      return 'rejected';
    case TaskState.TASK_STATE_WORKING:
      return 'working';
    default:
      return 'submitted';
  }
}
