import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai';
import { MemoryStore, type PostgresStore } from 'trellis';
import { exportRuns, slowTurns } from '../../support/export-desk.js';
import { bootChatApp, USER_HEADER } from '../../support/nest-chat.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService, REDIS_URL } from '../../support/services.js';

type Part = Record<string, unknown>;

async function chat(api: string, chatId: string, messages: UIMessage[], user = 'alice'): Promise<UIMessage> {
  const transport = new DefaultChatTransport<UIMessage>({ api, headers: { [USER_HEADER]: user } });
  const stream = await transport.sendMessages({
    chatId,
    messages,
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });
  const continued = messages.at(-1)?.role === 'assistant' ? structuredClone(messages.at(-1)) : undefined;
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream, message: continued })) last = message;
  return last!;
}

function approveAll(message: UIMessage): UIMessage {
  return {
    ...message,
    parts: message.parts.map((p) =>
      (p as Part).state === 'approval-requested'
        ? ({
            ...p,
            state: 'approval-responded',
            approval: { ...((p as Part).approval as object), approved: true },
          } as UIMessage['parts'][number])
        : p,
    ),
  };
}

const question: UIMessage = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Export the top customers' }] };

/** Send, see the call wait, approve, see it run once and the reply: what a useChat front end does. */
async function approveFlow(api: string, chatId: string): Promise<void> {
  const first = await chat(api, chatId, [question]);
  expect(first.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({
    toolName: 'files.export',
    state: 'approval-requested',
  });
  const second = await chat(api, chatId, [question, approveAll(first)]);
  expect(second.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({
    state: 'output-available',
    output: { written: 'top-customers.csv' },
  });
  expect(
    second.parts
      .filter((p) => p.type === 'text')
      .map((p) => (p as { text: string }).text)
      .join(''),
  ).toContain('Exported:');
}

/** A raw useChat POST as `user` (no header without one): status and JSON body, the stream left unread. */
async function post(api: string, body: unknown, user?: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(api, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(user ? { [USER_HEADER]: user } : {}) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

async function reconnect(api: string, chatId: string, user?: string): Promise<Response> {
  return fetch(`${api}/${chatId}/stream`, { headers: user ? { [USER_HEADER]: user } : {} });
}

/**
 * Bob on every route of alice's chat, and nobody signed in: 403s and 401s, her call still
 * waiting and never run; then alice approves it and it runs once.
 */
async function foreignUserRefused(api: string, chatId: string): Promise<void> {
  const first = await chat(api, chatId, [question], 'alice');
  expect(first.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ state: 'approval-requested' });
  const approval = approveAll(first);
  for (const [user, status, code] of [
    ['bob', 403, 'AuthDenied'],
    [undefined, 401, 'Unauthenticated'],
  ] as const) {
    expect(
      await post(
        api,
        {
          id: chatId,
          messages: [{ id: 'b1', role: 'user', parts: [{ type: 'text', text: 'What did alice export?' }] }],
        },
        user,
      ),
    ).toEqual({ status, body: expect.objectContaining({ statusCode: status, code }) });
    expect(await post(api, { id: chatId, messages: [question, approval] }, user)).toEqual({
      status,
      body: expect.objectContaining({ code }),
    });
    const res = await reconnect(api, chatId, user);
    expect(res.status).toBe(status);
    expect(await res.json()).toMatchObject({ code });
  }
  expect(exportRuns).toEqual([]);
  expect((await reconnect(api, chatId, 'alice')).status).toBe(204);
  const second = await chat(api, chatId, [question, approval], 'alice');
  expect(second.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ state: 'output-available' });
  expect(exportRuns).toEqual(['top-customers']);
}

/**
 * While alice's first turn runs (her session has no owner in the store yet), bob can neither
 * stream it nor send into it; alice's reconnect gets her stream.
 */
async function firstTurnIsTheCallers(api: string, chatId: string): Promise<void> {
  let release!: () => void;
  slowTurns.gate = new Promise<void>((resolve) => (release = resolve));
  try {
    const slow: UIMessage = {
      id: 'u-slow',
      role: 'user',
      parts: [{ type: 'text', text: 'Export the top customers slowly' }],
    };
    const running = chat(api, chatId, [slow], 'alice');
    // The stream is recorded once the request is in; wait for alice's reconnect to find it.
    let mine: Response | undefined;
    for (let i = 0; i < 200 && !mine; i++) {
      const res = await reconnect(api, chatId, 'alice');
      if (res.status === 200) mine = res;
      else await new Promise((r) => setTimeout(r, 25));
    }
    expect(mine?.status).toBe(200);
    const theirs = await reconnect(api, chatId, 'bob');
    expect(theirs.status).toBe(403);
    expect(
      await post(
        api,
        { id: chatId, messages: [{ id: 'b2', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] },
        'bob',
      ),
    ).toMatchObject({ status: 403 });
    release();
    const first = await running;
    expect(first.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ state: 'approval-requested' });
    expect(await mine!.text()).toContain('tool-approval-request');
  } finally {
    release();
    slowTurns.gate = undefined;
  }
}

describe('TrellisChatModule (a Nest endpoint for useChat) with turns in process', () => {
  let app: INestApplication;
  let api: string;
  beforeAll(async () => {
    const booted = await bootChatApp(new MemoryStore());
    app = booted.app;
    api = `${booted.url}/api/chat`;
  });
  afterAll(() => app.close());
  beforeEach(() => void (exportRuns.length = 0));

  it("streams a call waiting for approval to the ai package's client; the approval resumes the turn and the call runs once", async () => {
    await approveFlow(api, 'nest-1');
    expect(exportRuns).toEqual(['top-customers']);
  });

  it('answers a body that is not a chat request with 400 and the Trellis code', async () => {
    const res = await fetch(api, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [USER_HEADER]: 'alice' },
      body: JSON.stringify({ id: 'nest-2', messages: [{ role: 'system', parts: [] }] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'InvalidOptions' });
    expect((await reconnect(api, 'nest-2', 'alice')).status).toBe(204);
  });

  it("keeps a chat its opener's: another user gets 403 on sending, approving and reconnecting, nobody signed in 401", async () => {
    await foreignUserRefused(api, 'nest-3');
  });

  it("counts a first turn still running as its caller's: bob cannot stream or join it", async () => {
    await firstTurnIsTheCallers(api, 'nest-4');
  });

  it("asks the host's policy: a supervisor may stream and approve a user's chat", async () => {
    const booted = await bootChatApp(new MemoryStore(), undefined, undefined, undefined, {
      policy: (r) =>
        r.principal === 'supervisor' ? r.opened : r.owner === undefined ? !r.opened : r.owner === r.principal,
    });
    try {
      const url = `${booted.url}/api/chat`;
      const first = await chat(url, 'nest-5', [question], 'alice');
      expect(await post(url, { id: 'nest-5', messages: [question, approveAll(first)] }, 'bob')).toMatchObject({
        status: 403,
      });
      const approved = await chat(url, 'nest-5', [question, approveAll(first)], 'supervisor');
      expect(approved.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ state: 'output-available' });
      expect(exportRuns).toEqual(['top-customers']);
    } finally {
      await booted.app.close();
    }
  });
});

const queued =
  (await haveService('redis', 'TrellisChatModule on the worker queue')) &&
  (await haveService('postgres', 'TrellisChatModule on the worker queue'));

(queued ? describe : describe.skip)('TrellisChatModule with turns on the worker queue (Redis, PostgreSQL)', () => {
  const schemas = new PostgresSchemas();
  const prefix = `trellis_chat${process.pid}_${Date.now().toString(36)}`;
  const stores: PostgresStore[] = [];
  const apps: INestApplication[] = [];
  let api: string;
  beforeAll(async () => {
    const schema = schemas.next();
    const open = async () => {
      const store = await schemas.open(schema);
      stores.push(store);
      return store;
    };
    apps.push((await bootChatApp(await open(), { url: REDIS_URL, prefix, pollMs: 200 }, true)).app);
    const web = await bootChatApp(await open(), { url: REDIS_URL, prefix, pollMs: 200 });
    apps.push(web.app);
    api = `${web.url}/api/chat`;
  });
  afterAll(async () => {
    for (const app of apps.reverse()) await app.close();
    for (const store of stores) await store.close().catch(() => undefined);
    await schemas.dropAll();
    const { Redis } = await import('ioredis');
    const client = new Redis(REDIS_URL);
    const keys = await client.keys(`${prefix}:*`);
    if (keys.length > 0) await client.del(...keys);
    await client.quit();
  });
  beforeEach(() => void (exportRuns.length = 0));

  it('streams the turn run by a worker, and the approval resumes it through the queue', async () => {
    await approveFlow(api, 'queued-1');
    expect(exportRuns).toEqual(['top-customers']);
  });

  it("keeps a queued chat its opener's: 403 for another user on every route, 401 for nobody", async () => {
    await foreignUserRefused(api, 'queued-2');
  });

  it("counts a first turn running on a worker (no owner in the store yet) as its caller's", async () => {
    await firstTurnIsTheCallers(api, 'queued-3');
  });
});
