import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { HttpAgent } from '@ag-ui/client';
import { EventType, type BaseEvent, type RunFinishedEvent } from '@ag-ui/core';
import { IsIn, IsString } from 'class-validator';
import { ScriptedModel, Trellis as TrellisApp, type Trellis } from 'trellis';
import { createAgUiHandler, TOOL_APPROVAL } from 'trellis/ag-ui';
import { exportApp, exportRuns } from '../../support/export-desk.js';

describe("AG-UI from createAgUiHandler, consumed by @ag-ui/client's HttpAgent", () => {
  let app: Trellis;
  let server: Server;
  let url: string;
  beforeEach(async () => {
    exportRuns.length = 0;
    const built = await exportApp();
    app = built.app;
    server = createServer(getRequestListener(createAgUiHandler({ agent: built.agent })));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ag-ui`;
  });
  afterEach(async () => {
    await new Promise((r) => server.close(r));
    await app.stop();
  });

  /** One run through the client; the events it accepted (after its own verification). */
  async function run(agent: HttpAgent, parameters: Parameters<HttpAgent['runAgent']>[0] = {}): Promise<BaseEvent[]> {
    const events: BaseEvent[] = [];
    await agent.runAgent(parameters, { onEvent: ({ event }) => void events.push(event) });
    return events;
  }

  it('a parked call ends the run with an interrupt; a resume entry approves it, the call runs once and the reply streams', async () => {
    const agent = new HttpAgent({ url, threadId: 'thread-1' });
    agent.addMessage({ id: 'm1', role: 'user', content: 'Export the top customers' });
    const first = await run(agent);
    const types = first.map((e) => e.type);
    expect(types[0]).toBe(EventType.RUN_STARTED);
    expect(types).toEqual(
      expect.arrayContaining([EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END]),
    );
    const finished = first.at(-1) as RunFinishedEvent;
    expect(finished.type).toBe(EventType.RUN_FINISHED);
    expect(finished.outcome).toMatchObject({
      type: 'interrupt',
      interrupts: [{ reason: TOOL_APPROVAL, message: 'Write the CSV file?', metadata: { tool: 'files.export' } }],
    });
    const interrupt = (finished.outcome as { interrupts: { id: string; toolCallId: string }[] }).interrupts[0]!;
    expect(interrupt.toolCallId).toBe(interrupt.id);
    expect(agent.messages.find((m) => m.role === 'assistant')).toMatchObject({
      toolCalls: [{ id: interrupt.id, function: { name: 'files.export', arguments: '{"name":"top-customers"}' } }],
    });
    expect(exportRuns).toEqual([]);

    const second = await run(agent, {
      resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { decision: 'approve' } }],
    });
    expect(second.find((e) => e.type === EventType.TOOL_CALL_RESULT)).toMatchObject({
      toolCallId: interrupt.id,
      content: '{"written":"top-customers.csv","rows":3}',
    });
    const text = second
      .filter((e) => e.type === EventType.TEXT_MESSAGE_CONTENT)
      .map((e) => (e as unknown as { delta: string }).delta)
      .join('');
    expect(text).toContain('Exported:');
    expect(second.at(-1)).toMatchObject({
      type: EventType.RUN_FINISHED,
      outcome: { type: 'success' },
      usage: [expect.objectContaining({ model: 'scripted' })],
    });
    expect(exportRuns).toEqual(['top-customers']);
  });

  it('a cancelled resume entry rejects the call: it never runs and the model is told', async () => {
    const agent = new HttpAgent({ url, threadId: 'thread-2' });
    agent.addMessage({ id: 'm1', role: 'user', content: 'Export the top customers' });
    const first = await run(agent);
    const id = ((first.at(-1) as RunFinishedEvent).outcome as { interrupts: { id: string }[] }).interrupts[0]!.id;
    const second = await run(agent, { resume: [{ interruptId: id, status: 'cancelled' }] });
    expect(
      second
        .filter((e) => e.type === EventType.TEXT_MESSAGE_CONTENT)
        .map((e) => (e as unknown as { delta: string }).delta)
        .join(''),
    ).toContain('I did not write the file.');
    expect(exportRuns).toEqual([]);
  });

  it('an input with nothing to run is a 400 with the Trellis code', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ threadId: 't', runId: 'r', messages: [] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      code: 'InvalidOptions',
      message: expect.stringContaining('neither resume entries nor a user message'),
    });
  });
});

describe('createAgUiHandler with a principal: a thread is the session of the user who opened it', () => {
  let app: Trellis;
  let server: Server;
  let url: string;
  beforeEach(async () => {
    exportRuns.length = 0;
    const built = await exportApp();
    app = built.app;
    server = createServer(
      getRequestListener(
        createAgUiHandler({ agent: built.agent, principal: (request) => request.headers.get('x-user') ?? undefined }),
      ),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ag-ui`;
  });
  afterEach(async () => {
    await new Promise((r) => server.close(r));
    await app.stop();
  });

  const post = (body: unknown, who?: string) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(who ? { 'x-user': who } : {}) },
      body: JSON.stringify(body),
    });

  it("answers another user 403 and nobody 401 on a run and on a resume; the owner's resume runs the call once", async () => {
    const alice = new HttpAgent({ url, threadId: 'owned-1', headers: { 'x-user': 'alice' } });
    alice.addMessage({ id: 'm1', role: 'user', content: 'Export the top customers' });
    const events: BaseEvent[] = [];
    await alice.runAgent({}, { onEvent: ({ event }) => void events.push(event) });
    const id = ((events.at(-1) as RunFinishedEvent).outcome as { interrupts: { id: string }[] }).interrupts[0]!.id;
    for (const [who, status, code] of [
      ['bob', 403, 'AuthDenied'],
      [undefined, 401, 'Unauthenticated'],
    ] as const) {
      const sent = await post(
        {
          threadId: 'owned-1',
          runId: 'r-bob',
          messages: [{ id: 'b1', role: 'user', content: 'What did alice export?' }],
        },
        who,
      );
      expect(sent.status).toBe(status);
      expect(await sent.json()).toMatchObject({ code });
      const decided = await post(
        {
          threadId: 'owned-1',
          runId: 'r-bob2',
          messages: [],
          resume: [{ interruptId: id, status: 'resolved', payload: { decision: 'approve' } }],
        },
        who,
      );
      expect(decided.status).toBe(status);
      expect(await decided.json()).toMatchObject({ code });
    }
    expect(exportRuns).toEqual([]);
    const second: BaseEvent[] = [];
    await alice.runAgent(
      { resume: [{ interruptId: id, status: 'resolved', payload: { decision: 'approve' } }] },
      { onEvent: ({ event }) => void second.push(event) },
    );
    expect(second.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: 'success' } });
    expect(exportRuns).toEqual(['top-customers']);
  });
});

describe("a typed agent's answer over AG-UI", () => {
  it('sends the object so far as CUSTOM trellis.output.partial events and the validated answer in RUN_FINISHED.result.output', async () => {
    class Triage {
      @IsIn(['low', 'high']) priority!: string;
      @IsString() summary!: string;
    }
    const app = TrellisApp.create();
    const agent = app.agent({
      name: 'triage',
      model: new ScriptedModel(['{"priority":"high","summary":"Refund blocked for a week"}']),
      instructions: 'Triage.',
      output: Triage,
    });
    const server = createServer(getRequestListener(createAgUiHandler({ agent })));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const client = new HttpAgent({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/ag-ui`,
        threadId: 'typed-1',
      });
      client.addMessage({ id: 'm1', role: 'user', content: 'My refund is stuck' });
      const events: BaseEvent[] = [];
      await client.runAgent({}, { onEvent: ({ event }) => void events.push(event) });
      const partials = events.filter(
        (e) => e.type === EventType.CUSTOM && (e as unknown as { name: string }).name === 'trellis.output.partial',
      );
      expect(partials.length).toBeGreaterThan(0);
      expect((partials.at(-1) as unknown as { value: unknown }).value).toEqual({
        priority: 'high',
        summary: 'Refund blocked for a week',
      });
      expect(events.at(-1)).toMatchObject({
        type: EventType.RUN_FINISHED,
        result: { status: 'completed', output: { priority: 'high', summary: 'Refund blocked for a week' } },
      });
    } finally {
      await new Promise((r) => server.close(r));
      await app.stop();
    }
  });
});
