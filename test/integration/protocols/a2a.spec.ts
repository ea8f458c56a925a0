import 'reflect-metadata';
import { Role, TaskState, type Message, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  createAuthenticatingFetchWithRetry,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { Hook, ScriptedModel, suspend, Trellis, type ToolCallInfo, type TrellisEvent } from 'trellis';
import { A2aAgentClient, a2aAgent, agentCardOf, serveA2a, type A2aServing } from 'trellis/a2a';
import { exportApp, exportRuns } from '../../support/export-desk.js';

const text = (value: string) => ({
  content: { $case: 'text' as const, value },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});
const userMessage = (value: string, ids: { taskId?: string; contextId?: string } = {}): Message => ({
  messageId: randomUUID(),
  role: Role.ROLE_USER,
  parts: [text(value)],
  taskId: ids.taskId ?? '',
  contextId: ids.contextId ?? '',
  extensions: [],
  metadata: {},
  referenceTaskIds: [],
});
const send = (client: Client, message: Message) =>
  client.sendMessage({ tenant: '', message, configuration: undefined, metadata: {} }) as Promise<Task>;
const textOf = (m: Message | undefined) =>
  (m?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

describe("a Trellis agent served over A2A, driven by the SDK's own client", () => {
  let app: Trellis;
  let serving: A2aServing;
  let client: Client;
  beforeEach(async () => {
    exportRuns.length = 0;
    const built = await exportApp();
    app = built.app;
    serving = await serveA2a(app, built.agent);
    client = await new ClientFactory().createFromUrl(serving.url);
  });
  afterEach(async () => {
    await serving.close();
    await app.stop();
  });

  it('publishes an agent card from the agent: its name, description and tools as skills', async () => {
    const card = (await (await fetch(serving.cardUrl)).json()) as { skills: { id: string; description: string }[] };
    expect(card).toMatchObject({ name: 'desk', description: 'You export reports.', capabilities: { streaming: true } });
    expect(card.skills.map((s: { id: string }) => s.id).sort()).toEqual(['files.count', 'files.export', 'files.purge']);
    expect(card.skills.find((s: { id: string }) => s.id === 'files.export')?.description).toBe(
      'Export a report to a file.',
    );
  });

  it('a suspended turn is the task state input-required; the next message approves it, the call runs once and the task completes', async () => {
    const contextId = randomUUID();
    const task = await send(client, userMessage('Export the top customers', { contextId }));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(textOf(task.status?.message)).toContain('files.export');
    const pending = task.status?.message?.parts.find((p) => p.content?.$case === 'data')?.content as {
      value: { pending: { tool: string; message: string }[] };
    };
    expect(pending.value.pending).toEqual([
      expect.objectContaining({ tool: 'files.export', message: 'Write the CSV file?' }),
    ]);
    expect(exportRuns).toEqual([]);

    const done = await send(client, userMessage('approve', { taskId: task.id, contextId }));
    expect(done.id).toBe(task.id);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(done.status?.message)).toContain('Exported:');
    expect(exportRuns).toEqual(['top-customers']);
  });

  it('streams the task over SSE: working, the reply as artifact chunks, then completed', async () => {
    const contextId = randomUUID();
    const first = await send(client, userMessage('Export it', { contextId }));
    const states: TaskState[] = [];
    let streamed = '';
    for await (const event of client.sendMessageStream({
      tenant: '',
      message: userMessage('reject not today', { taskId: first.id, contextId }),
      configuration: undefined,
      metadata: {},
    })) {
      if (event.payload?.$case === 'statusUpdate') states.push(event.payload.value.status!.state);
      if (event.payload?.$case === 'artifactUpdate')
        streamed += textOf({ parts: event.payload.value.artifact!.parts } as Message);
    }
    expect(states).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]);
    expect(streamed).toContain('I did not write the file.');
    expect(exportRuns).toEqual([]);
  });
});

describe("a remote A2A agent as a tool of a Trellis agent (the remote is the SDK's own server)", () => {
  let remote: Server;
  let remoteUrl: string;
  const asked: string[] = [];
  beforeAll(async () => {
    // A plain SDK agent: answers questions, and asks for confirmation of anything said with "refund".
    const executor: AgentExecutor = {
      execute: async (request, bus) => {
        const { taskId, contextId } = request;
        const said = textOf(request.userMessage);
        asked.push(said);
        bus.publish(
          AgentEvent.task(
            request.task ?? {
              id: taskId,
              contextId,
              status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: undefined, message: undefined },
              artifacts: [],
              history: [request.userMessage],
              metadata: {},
            },
          ),
        );
        const waiting = /refund/.test(said) && !request.task;
        const reply = waiting
          ? 'Confirm the refund of 40 EUR?'
          : request.task
            ? `Refund done (${said})`
            : `Invoice total: 120 EUR (${contextId})`;
        const message: Message = {
          messageId: randomUUID(),
          role: Role.ROLE_AGENT,
          parts: [text(reply)],
          taskId,
          contextId,
          extensions: [],
          metadata: {},
          referenceTaskIds: [],
        };
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: {
              state: waiting ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_COMPLETED,
              timestamp: undefined,
              message,
            },
            metadata: undefined,
          }),
        );
      },
      cancelTask: async () => undefined,
    };
    const web = express();
    remote = web.listen(0, '127.0.0.1');
    await new Promise((r) => remote.once('listening', r));
    remoteUrl = `http://127.0.0.1:${(remote.address() as AddressInfo).port}/`;
    const card = {
      ...agentCardOf(Trellis.create(), { spec: { name: 'billing', instructions: 'Billing questions.' } } as never, {
        url: remoteUrl,
      }),
      skills: [],
    };
    const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
    web.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
    web.use(jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  });
  afterAll(() => new Promise((r) => remote.close(r)));
  beforeEach(() => void (asked.length = 0));

  it('the call goes through the gate (approval) and events like any tool, and the answer reaches the model', async () => {
    const app = Trellis.create();
    await A2aAgentClient.connect(app, 'billing', remoteUrl);
    class Gate {
      @Hook('tool.gate')
      gate(call: ToolCallInfo) {
        return call.tool === 'billing.ask' ? suspend('Ask billing?') : undefined;
      }
    }
    const { Plugin } = await import('trellis');
    Plugin({ name: 'gatekeeper', version: '1.0.0' })(Gate);
    await app.install(Gate);
    const model = new ScriptedModel((req) =>
      req.messages.at(-1)!.role === 'user'
        ? {
            toolCalls: [
              { id: `c_${randomUUID()}`, name: 'billing.ask', args: { message: 'What is the invoice total?' } },
            ],
          }
        : `Billing says: ${req.messages.at(-1)!.content}`,
    );
    const session = app.agent({ name: 'front', model, instructions: '' }).session('s1');
    const events: TrellisEvent[] = [];
    session.events$.subscribe((e) => events.push(e));
    const parked = await session.send('How much do I owe?');
    expect(parked.status).toBe('suspended');
    expect(asked).toEqual([]);
    const result = await session.resume({ decisions: [{ callId: parked.suspended![0]!.callId, decision: 'approve' }] });
    expect(result.status).toBe('completed');
    expect(result.reply).toContain('Invoice total: 120 EUR (trellis:s1)');
    expect(asked).toEqual(['What is the invoice total?']);
    expect(
      events.filter((e) => e.type === 'tool.finished').map((e) => (e as { tool: string; ok: boolean }).tool),
    ).toEqual(['billing.ask']);
    await app.stop();
  });

  it("the remote agent's input-required comes back as the answer with its taskId; calling again with it continues that task", async () => {
    const app = Trellis.create();
    await A2aAgentClient.connect(app, 'billing', remoteUrl);
    let taskId = '';
    const model = new ScriptedModel((req, call) => {
      if (call === 0)
        return { toolCalls: [{ id: `c_${randomUUID()}`, name: 'billing.ask', args: { message: 'refund order 7' } }] };
      if (call === 1) {
        const answer = JSON.parse(String(req.messages.at(-1)!.content)) as {
          state: string;
          taskId: string;
          text: string;
        };
        expect(answer).toMatchObject({ state: 'input-required', text: 'Confirm the refund of 40 EUR?' });
        taskId = answer.taskId;
        return { toolCalls: [{ id: `c_${randomUUID()}`, name: 'billing.ask', args: { message: 'yes', taskId } }] };
      }
      return `Done: ${req.messages.at(-1)!.content}`;
    });
    const result = await app.agent({ name: 'front', model, instructions: '' }).session('s2').send('Refund order 7');
    expect(result.reply).toContain('Refund done (yes)');
    expect(asked).toEqual(['refund order 7', 'yes']);
    await app.stop();
  });

  it("as an entry of the agent's `agents` (a2aAgent): gated, tagged and evented like any tool, the reply reaches the model", async () => {
    const app = Trellis.create();
    const gated: ToolCallInfo[] = [];
    class Gate {
      @Hook('tool.gate')
      gate(call: ToolCallInfo) {
        gated.push(call);
        return call.tags.includes('a2a') ? suspend('Ask billing?') : undefined;
      }
    }
    const { Plugin } = await import('trellis');
    Plugin({ name: 'gatekeeper', version: '1.0.0' })(Gate);
    await app.install(Gate);
    const model = new ScriptedModel((req) =>
      req.messages.at(-1)!.role === 'user'
        ? {
            toolCalls: [
              { id: `c_${randomUUID()}`, name: 'ask_billing', args: { input: 'What is the invoice total?' } },
            ],
          }
        : `Billing says: ${req.messages.at(-1)!.content}`,
    );
    const agent = app.agent({
      name: 'front',
      model,
      instructions: '',
      agents: [a2aAgent({ name: 'ask_billing', agent: 'billing', url: remoteUrl })],
    });
    const session = agent.session('s3');
    const events: TrellisEvent[] = [];
    session.events$.subscribe((e) => events.push(e));
    const parked = await session.send('How much do I owe?');
    expect(parked.status).toBe('suspended');
    expect(gated.map((c) => [c.tool, [...c.tags].sort()])).toEqual([['ask_billing', ['a2a', 'agent']]]);
    expect(asked).toEqual([]);
    const result = await session.resume({ decisions: [{ callId: parked.suspended![0]!.callId, decision: 'approve' }] });
    expect(result.status).toBe('completed');
    expect(result.reply).toBe('Billing says: Invoice total: 120 EUR (trellis:s3)');
    expect(asked).toEqual(['What is the invoice total?']);
    expect(
      events.filter((e) => e.type === 'tool.finished').map((e) => (e as { tool: string; ok: boolean }).tool),
    ).toEqual(['ask_billing']);
    await app.stop();
  });

  it('as an entry of `agents`: an input-required answer carries its taskId, and the call with it continues that task', async () => {
    const app = Trellis.create();
    const model = new ScriptedModel((req, call) => {
      if (call === 0)
        return { toolCalls: [{ id: `c_${randomUUID()}`, name: 'ask_billing', args: { input: 'refund order 9' } }] };
      if (call === 1) {
        const answer = JSON.parse(String(req.messages.at(-1)!.content)) as {
          state: string;
          taskId: string;
          text: string;
        };
        expect(answer).toMatchObject({ state: 'input-required', text: 'Confirm the refund of 40 EUR?' });
        return {
          toolCalls: [{ id: `c_${randomUUID()}`, name: 'ask_billing', args: { input: 'yes', taskId: answer.taskId } }],
        };
      }
      return `Done: ${req.messages.at(-1)!.content}`;
    });
    const result = await app
      .agent({ name: 'front', model, instructions: '', agents: [a2aAgent({ name: 'ask_billing', url: remoteUrl })] })
      .session('s4')
      .send('Refund order 9');
    expect(result.reply).toBe('Done: Refund done (yes)');
    expect(asked).toEqual(['refund order 9', 'yes']);
    await app.stop();
  });

  it('as an entry of `agents`: an agent that is not up fails the call with A2aUnavailable for the model, and is reached once it is', async () => {
    const app = Trellis.create();
    const seen: string[] = [];
    const model = new ScriptedModel((req) => {
      const last = req.messages.at(-1)!;
      if (last.role === 'user')
        return { toolCalls: [{ id: `c_${randomUUID()}`, name: 'ask_later', args: { input: 'hello' } }] };
      seen.push(String(last.content));
      return 'ok';
    });
    const result = await app
      .agent({
        name: 'front',
        model,
        instructions: '',
        agents: [a2aAgent({ name: 'ask_later', url: 'http://127.0.0.1:1/' })],
      })
      .session('s5')
      .send('hi');
    expect(result.status).toBe('completed');
    expect(seen.join('\n')).toContain('A2aUnavailable');
    expect(() =>
      app.agent({
        name: 'bad',
        model,
        instructions: '',
        agents: [{ agent: 'x', name: 'x', description: 'x', remote: {} as never }],
      }),
    ).toThrow(/agents\[0\]\.remote must be a remote agent/);
    await app.stop();
  });

  it('an unreachable agent fails to connect with A2aUnavailable', async () => {
    await expect(A2aAgentClient.connect(Trellis.create(), 'nobody', 'http://127.0.0.1:1/')).rejects.toMatchObject({
      code: 'A2aUnavailable',
    });
  });
});

describe('Trellis to Trellis over A2A: a front agent uses a served desk agent as a tool', () => {
  it("the desk's gate parks its export as input-required; the front agent answers approve on that task and the export runs once", async () => {
    exportRuns.length = 0;
    const desk = await exportApp();
    const serving = await serveA2a(desk.app, desk.agent);
    const front = Trellis.create();
    try {
      await A2aAgentClient.connect(front, 'desk', serving.url);
      const model = new ScriptedModel((req, call) => {
        const last = req.messages.at(-1)!;
        if (call === 0)
          return {
            toolCalls: [{ id: `c_${randomUUID()}`, name: 'desk.ask', args: { message: 'Export the top customers' } }],
          };
        const answer = JSON.parse(String(last.content)) as { state: string; taskId: string; text: string };
        if (answer.state === 'input-required')
          return {
            toolCalls: [
              { id: `c_${randomUUID()}`, name: 'desk.ask', args: { message: 'approve', taskId: answer.taskId } },
            ],
          };
        return `Desk: ${answer.text}`;
      });
      const result = await front
        .agent({ name: 'front', model, instructions: '' })
        .session('f1')
        .send('Get me the export');
      expect(result.reply).toContain('Desk: Exported:');
      expect(exportRuns).toEqual(['top-customers']);
    } finally {
      await front.stop();
      await serving.close();
      await desk.app.stop();
    }
  });
});

describe('serveA2a with a principal: a context is the session of the caller who opened it', () => {
  let app: Trellis;
  let serving: A2aServing;
  beforeEach(async () => {
    exportRuns.length = 0;
    const built = await exportApp();
    app = built.app;
    serving = await serveA2a(app, built.agent, {
      principal: (req) => (typeof req.headers['x-user'] === 'string' ? req.headers['x-user'] : undefined),
    });
  });
  afterEach(async () => {
    await serving.close();
    await app.stop();
  });

  /** The SDK's own client, sending `x-user: <who>` with every request (none without a name). */
  const clientAs = (who?: string) => {
    const fetchImpl = createAuthenticatingFetchWithRetry(fetch, {
      headers: async (): Promise<Record<string, string>> => (who ? { 'x-user': who } : {}),
      shouldRetryWithHeaders: async () => undefined,
    });
    const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
    });
    return new ClientFactory(options).createFromUrl(serving.url);
  };

  it("refuses another user's message into the context, hides the task from them, asks nobody to sign in; the owner approves once", async () => {
    const alice = await clientAs('alice');
    const contextId = randomUUID();
    const task = await send(alice, userMessage('Export the top customers', { contextId }));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);

    const bob = await clientAs('bob');
    const intruding = await send(bob, userMessage('approve', { contextId }));
    expect(intruding.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(textOf(intruding.status?.message)).toMatch(/^AuthDenied: 'bob' may not send session 'a2a:/);
    // The SDK keeps tasks per authenticated user: alice's task id finds nothing for bob.
    await expect(send(bob, userMessage('approve', { taskId: task.id, contextId }))).rejects.toThrow(/not found/i);
    await expect(bob.getTask({ tenant: '', id: task.id, historyLength: undefined })).rejects.toThrow(/not found/i);
    const nobody = await send(await clientAs(undefined), userMessage('approve', { contextId }));
    expect(nobody.status?.state).toBe(TaskState.TASK_STATE_AUTH_REQUIRED);
    expect(exportRuns).toEqual([]);

    const done = await send(alice, userMessage('approve', { taskId: task.id, contextId }));
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(exportRuns).toEqual(['top-customers']);
  });
});
