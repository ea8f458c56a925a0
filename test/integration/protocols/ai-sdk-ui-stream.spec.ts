import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { IsIn, IsString } from 'class-validator';
import { ScriptedModel, Trellis as TrellisApp, type Trellis } from 'trellis';
import { chatRequestListener, createChatHandler } from 'trellis/ai-sdk';
import { exportApp, exportRuns } from '../../support/export-desk.js';

type Part = UIMessage['parts'][number] & Record<string, unknown>;

/** The `error` chunks the reader reported (a useChat front end shows them as `chat.error`). */
const streamErrors: string[] = [];

/** Everything the ai package's own client makes of one response: the last message state. */
async function lastMessage(
  transport: DefaultChatTransport<UIMessage>,
  chatId: string,
  messages: UIMessage[],
): Promise<UIMessage> {
  const stream = await transport.sendMessages({
    chatId,
    messages,
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });
  // The reader updates the message it continues in place: give it a copy.
  const continued = messages.at(-1)?.role === 'assistant' ? structuredClone(messages.at(-1)) : undefined;
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({
    stream,
    message: continued,
    onError: (e) => void streamErrors.push(String((e as Error).message ?? e)),
  }))
    last = message;
  return last!;
}

const user = (text: string): UIMessage => ({ id: `u${Math.random()}`, role: 'user', parts: [{ type: 'text', text }] });

/** Answers every approval request of the message the way `addToolApprovalResponse` does. */
function answered(message: UIMessage, approved: boolean, reason?: string): UIMessage {
  return {
    ...message,
    parts: message.parts.map((p) => {
      const part = p as Part;
      if (part.state !== 'approval-requested') return p;
      return {
        ...part,
        state: 'approval-responded',
        approval: { ...(part.approval as object), approved, ...(reason ? { reason } : {}) },
      } as unknown as UIMessage['parts'][number];
    }),
  };
}

describe.each([
  ['a Node http server (chatRequestListener)', 'node'],
  ['a Hono app (createChatHandler)', 'hono'],
])("the AI SDK UI message stream from %s, read by the ai package's client", (_name, kind) => {
  let app: Trellis;
  let server: Server;
  let transport: DefaultChatTransport<UIMessage>;
  beforeEach(async () => {
    exportRuns.length = 0;
    streamErrors.length = 0;
    const built = await exportApp();
    app = built.app;
    if (kind === 'node') server = createServer(chatRequestListener({ agent: built.agent }));
    else {
      const chat = createChatHandler({ agent: built.agent });
      const hono = new Hono()
        .post('/api/chat', (c) => chat(c.req.raw))
        .get('/api/chat/:id/stream', (c) => chat(c.req.raw));
      const { getRequestListener } = await import('@hono/node-server');
      server = createServer(getRequestListener(hono.fetch));
    }
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    transport = new DefaultChatTransport({
      api: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`,
    });
  });
  afterEach(async () => {
    await new Promise((r) => server.close(r));
    await app.stop();
  });

  it('streams the tool call waiting for approval; the approval resumes the turn, runs the call once and streams the reply', async () => {
    const question = user('Export the top customers');
    const first = await lastMessage(transport, 'chat-1', [question]);
    const tool = first.parts.find((p) => p.type === 'dynamic-tool') as Part;
    expect(tool).toMatchObject({
      type: 'dynamic-tool',
      toolName: 'files.export',
      state: 'approval-requested',
      input: { name: 'top-customers' },
      approval: { id: tool.toolCallId },
    });
    expect(first.metadata).toMatchObject({ sessionId: 'chat-1', status: 'suspended' });
    expect(exportRuns).toEqual([]);

    const decided = answered(first, true);
    const second = await lastMessage(transport, 'chat-1', [question, decided]);
    expect(second.id).toBe(first.id);
    expect(second.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({
      state: 'output-available',
      output: { written: 'top-customers.csv', rows: 3 },
    });
    const text = second.parts
      .filter((p) => p.type === 'text')
      .map((p) => (p as { text: string }).text)
      .join('');
    expect(text).toContain('Exported:');
    expect(second.metadata).toMatchObject({ status: 'completed', usage: { totalTokens: expect.any(Number) } });
    expect(exportRuns).toEqual(['top-customers']);

    // The same approval sent again (a double click, a retry) runs nothing more.
    const again = await lastMessage(transport, 'chat-1', [question, decided]);
    expect(again.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ state: 'approval-responded' });
    expect(streamErrors.join('\n')).toMatch(/InvalidDecision: Session 'chat-1' has no suspended calls/);
    expect(exportRuns).toEqual(['top-customers']);
  });

  it('a rejection never runs the call; the part ends output-denied and the model is told', async () => {
    const question = user('Export the top customers');
    const first = await lastMessage(transport, 'chat-2', [question]);
    const second = await lastMessage(transport, 'chat-2', [question, answered(first, false, 'Not today')]);
    expect(second.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ state: 'output-denied' });
    expect(
      second.parts
        .filter((p) => p.type === 'text')
        .map((p) => (p as { text: string }).text)
        .join(''),
    ).toContain('I did not write the file.');
    expect(exportRuns).toEqual([]);
  });

  it('a bad request is a 400 with the Trellis code, before anything runs', async () => {
    const url = (transport as unknown as { api: string }).api;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'x', messages: [] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'InvalidOptions', message: expect.stringContaining('no message') });
    expect((await fetch(`${url}/nobody/stream`)).status).toBe(204);
    // A body past 1 MiB is refused while it streams in (no Content-Length to go by).
    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({ pull: (c) => (sent++ < 64 ? c.enqueue(chunk) : c.close()) });
    const big = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: endless,
      duplex: 'half',
    });
    expect(big.status).toBe(400);
    expect(await big.json()).toMatchObject({
      code: 'InvalidOptions',
      message: expect.stringContaining('over 1048576 bytes'),
    });
  });
});

describe('reconnecting to a running chat stream (GET <api>/:id/stream)', () => {
  it('replays the running turn from its first chunk, then the live ones; 204 once it ended', async () => {
    const { Trellis, ScriptedModel } = await import('trellis');
    const app = Trellis.create();
    const agent = app.agent({
      name: 'slow',
      model: new ScriptedModel(['A slow answer'], { delayMs: 400 }),
      instructions: '',
    });
    const server = createServer(chatRequestListener({ agent }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`;
    try {
      const transport = new DefaultChatTransport<UIMessage>({ api });
      const first = transport.sendMessages({
        chatId: 'slow-1',
        messages: [user('Take your time')],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      });
      await new Promise((r) => setTimeout(r, 150));
      // The client lost its connection and asks to resume (useChat({ resume: true })).
      const resumed = await transport.reconnectToStream({ chatId: 'slow-1' });
      expect(resumed).not.toBeNull();
      let last: UIMessage | undefined;
      for await (const message of readUIMessageStream({ stream: resumed! })) last = message;
      expect(
        last!.parts
          .filter((p) => p.type === 'text')
          .map((p) => (p as { text: string }).text)
          .join(''),
      ).toBe('A slow answer');
      expect(last!.metadata).toMatchObject({ status: 'completed' });
      for await (const _ of readUIMessageStream({ stream: await first })) void _;
      expect(await transport.reconnectToStream({ chatId: 'slow-1' })).toBeNull();
    } finally {
      await new Promise((r) => server.close(r));
      await app.stop();
    }
  });
});

describe('createChatHandler with a principal: a chat is the session of the user who opened it', () => {
  let app: Trellis;
  let server: Server;
  let api: string;
  beforeEach(async () => {
    exportRuns.length = 0;
    const built = await exportApp();
    app = built.app;
    const chat = createChatHandler({
      agent: built.agent,
      principal: (request) => request.headers.get('x-user') ?? undefined,
    });
    server = createServer(getRequestListener(chat));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    api = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`;
  });
  afterEach(async () => {
    await new Promise((r) => server.close(r));
    await app.stop();
  });

  const as = (who: string) => new DefaultChatTransport<UIMessage>({ api, headers: { 'x-user': who } });
  const post = (body: unknown, who?: string) =>
    fetch(api, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(who ? { 'x-user': who } : {}) },
      body: JSON.stringify(body),
    });

  it("answers another user 403 and nobody 401 on sending, approving and reconnecting; the owner's approval runs the call once", async () => {
    const question = user('Export the top customers');
    const first = await lastMessage(as('alice'), 'owned-1', [question]);
    const approval = answered(first, true);
    for (const [who, status, code] of [
      ['bob', 403, 'AuthDenied'],
      [undefined, 401, 'Unauthenticated'],
    ] as const) {
      for (const res of [
        await post({ id: 'owned-1', messages: [user('What did alice export?')] }, who),
        await post({ id: 'owned-1', messages: [question, approval] }, who),
        await fetch(`${api}/owned-1/stream`, { headers: who ? { 'x-user': who } : {} }),
      ]) {
        expect(res.status).toBe(status);
        expect(await res.json()).toMatchObject({ code });
      }
    }
    expect(exportRuns).toEqual([]);
    const second = await lastMessage(as('alice'), 'owned-1', [question, approval]);
    expect(second.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ state: 'output-available' });
    expect(exportRuns).toEqual(['top-customers']);
  });

  it('refuses a principal or policy that is not a function when the handler is built', () => {
    expect(() => createChatHandler({ agent: {} as never, principal: 'alice' as never })).toThrow(
      /principal must be a function/,
    );
    expect(() => createChatHandler({ agent: {} as never, policy: () => true })).toThrow(/a policy needs a principal/);
  });
});

describe("a typed agent's answer in the AI SDK UI message stream", () => {
  it('sends the object so far and the validated answer as one data-output part, replaced in place by the client', async () => {
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
    const server = createServer(chatRequestListener({ agent }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const transport = new DefaultChatTransport<UIMessage>({
        api: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`,
      });
      const message = await lastMessage(transport, 'typed-1', [user('My refund is stuck')]);
      const outputs = message.parts.filter((p) => p.type === 'data-output');
      expect(outputs).toEqual([
        { type: 'data-output', id: 'output', data: { priority: 'high', summary: 'Refund blocked for a week' } },
      ]);
      expect(message.metadata).toMatchObject({ status: 'completed' });
    } finally {
      await new Promise((r) => server.close(r));
      await app.stop();
    }
  });
});
