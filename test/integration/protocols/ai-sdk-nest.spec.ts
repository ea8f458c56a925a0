import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai';
import { MemoryStore, type PostgresStore } from 'trellis';
import { exportRuns } from '../../support/export-desk.js';
import { bootChatApp } from '../../support/nest-chat.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService, REDIS_URL } from '../../support/services.js';

type Part = Record<string, unknown>;

async function chat(api: string, chatId: string, messages: UIMessage[]): Promise<UIMessage> {
  const transport = new DefaultChatTransport<UIMessage>({ api });
  const stream = await transport.sendMessages({ chatId, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
  const continued = messages.at(-1)?.role === 'assistant' ? structuredClone(messages.at(-1)) : undefined;
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream, message: continued })) last = message;
  return last!;
}

function approveAll(message: UIMessage): UIMessage {
  return { ...message, parts: message.parts.map((p) => ((p as Part).state === 'approval-requested' ? ({ ...p, state: 'approval-responded', approval: { ...((p as Part).approval as object), approved: true } } as UIMessage['parts'][number]) : p)) };
}

/** Send, see the call wait, approve, see it run once and the reply: what a useChat front end does. */
async function approveFlow(api: string, chatId: string): Promise<void> {
  const question: UIMessage = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Export the top customers' }] };
  const first = await chat(api, chatId, [question]);
  expect(first.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ toolName: 'files.export', state: 'approval-requested' });
  const second = await chat(api, chatId, [question, approveAll(first)]);
  expect(second.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ state: 'output-available', output: { written: 'top-customers.csv' } });
  expect(second.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('')).toContain('Exported:');
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
    const res = await fetch(api, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'nest-2', messages: [{ role: 'system', parts: [] }] }) });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'InvalidOptions' });
    expect((await fetch(`${api}/nest-2/stream`)).status).toBe(204);
  });
});

const queued = (await haveService('redis', 'TrellisChatModule on the worker queue')) && (await haveService('postgres', 'TrellisChatModule on the worker queue'));

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

  it('streams the turn run by a worker, and the approval resumes it through the queue', async () => {
    exportRuns.length = 0;
    await approveFlow(api, 'queued-1');
    expect(exportRuns).toEqual(['top-customers']);
  });
});
