import 'reflect-metadata';
import { IsString } from 'class-validator';
import {
  AnthropicModel,
  OpenAIModel,
  Plugin,
  Tool,
  Trellis,
  type ChatMessage,
  type ModelRequest,
  type ToolContext,
} from '../../../index.js';
import { toolContent } from '../../../plugin.js';
import { FakeVendorServer } from '../../support/fake-vendor-server.js';

/**
 * Wire tests: the official `openai` and `@anthropic-ai/sdk` clients talk to a local server
 * that records the exact bodies they send. The expected shapes are the providers' documented
 * formats (OpenAI "Images and vision" / "File inputs" for chat completions, Anthropic
 * "Vision", "PDF support" and "Prompt caching"); the replayed streams are the documented
 * usage objects with cached tokens.
 */
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const PNG64 = PNG.toString('base64');
const PDF64 = Buffer.from('%PDF-1.4 invoice total 42 EUR').toString('base64');
const TXT64 = Buffer.from('line one\nline two').toString('base64');

const userWithParts: ChatMessage = {
  role: 'user',
  content: 'Compare these.',
  parts: [
    { type: 'text', text: 'Compare these.' },
    { type: 'image', url: 'https://example.com/a.png' },
    { type: 'image', data: PNG64, mediaType: 'image/png' },
    { type: 'file', data: PDF64, mediaType: 'application/pdf', name: 'invoice.pdf' },
    { type: 'file', data: TXT64, mediaType: 'text/plain', name: 'notes.txt' },
  ],
};

const toolWithImage: ChatMessage[] = [
  { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'scans.fetch', arguments: '{"id":"7"}' }] },
  {
    role: 'tool',
    toolCallId: 'call_1',
    name: 'scans.fetch',
    content: JSON.stringify(
      toolContent({ type: 'text', text: 'Scan 7' }, { type: 'image', data: PNG, mediaType: 'image/png' }),
    ),
  },
];

function request(messages: readonly ChatMessage[], tools: ModelRequest['tools'] = []): ModelRequest {
  return { messages, tools, inference: {} };
}

const fetchTool = {
  name: 'scans.fetch',
  description: 'Fetch a scan.',
  inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
};

class ScanInput {
  @IsString() id!: string;
}

@Plugin({ name: 'scans', version: '1.0.0' })
class ScansPlugin {
  @Tool({
    name: 'scans.fetch',
    description: 'Fetches the scan of an invoice. Use when asked about an invoice.',
    input: ScanInput,
  })
  fetch(input: ScanInput, _ctx: ToolContext) {
    return `scan ${input.id}: total 42`;
  }
}

const freshId = (): string => `call_${Math.random().toString(36).slice(2, 10)}`;

describe('OpenAI chat completions on the wire', () => {
  let server: FakeVendorServer;
  let model: OpenAIModel;
  beforeEach(async () => {
    server = await FakeVendorServer.start('openai');
    model = new OpenAIModel({ model: 'gpt-test', apiKey: 'k', baseURL: server.baseURL, maxRetries: 0 });
  });
  afterEach(() => server.close());

  it('sends text, image_url (URL and data: URL) and file parts; a text file is inlined as text', async () => {
    server.enqueue({ type: 'stream', textPieces: ['ok'] });
    await model.call(request([{ role: 'system', content: 'Be brief.' }, userWithParts]));
    expect(server.requests[0]!.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Compare these.' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG64}` } },
          { type: 'file', file: { filename: 'invoice.pdf', file_data: `data:application/pdf;base64,${PDF64}` } },
          { type: 'text', text: '<file name="notes.txt">\nline one\nline two\n</file>' },
        ],
      },
    ]);
  });

  it('sends a tool result with an image as text in the tool message and the image in a user message after it', async () => {
    server.enqueue({ type: 'stream', textPieces: ['ok'] });
    await model.call(request([{ role: 'user', content: 'Show scan 7' }, ...toolWithImage], [fetchTool]));
    const messages = server.requests[0]!.body.messages;
    expect(messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'call_1', content: 'Scan 7\n[image image/png, 16 B]' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Content returned by tool scans.fetch (call call_1):' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG64}` } },
        ],
      },
    ]);
  });

  it('keeps the prefix byte-stable across the calls of a session: each body starts with the previous one’s tools and messages, byte for byte', async () => {
    const app = Trellis.create();
    await app.install(ScansPlugin);
    await app.start();
    server.enqueue(
      { type: 'stream', toolCalls: [{ id: freshId(), name: 'scans__fetch', argumentPieces: ['{"id":', '"7"}'] }] },
      { type: 'stream', textPieces: ['Total 42.'] },
      { type: 'stream', textPieces: ['Yes.'] },
    );
    const session = app.agent({ name: 'desk', model, instructions: 'You read invoices.' }).session('s');
    await session.send('What is the total of invoice 7?');
    await session.send('Is that in euros?');
    await app.stop();
    const raws = server.requests.map((r) => r.raw);
    expect(raws).toHaveLength(3);
    for (let at = 1; at < raws.length; at++) {
      const before = server.requests[at - 1]!.body;
      const after = server.requests[at]!.body;
      // The messages array of the earlier call, without its closing bracket, appears at the same offset in the later body.
      const earlier = JSON.stringify(before.messages).slice(0, -1);
      const offset = raws[at - 1]!.indexOf(earlier);
      expect(offset).toBeGreaterThan(0);
      expect(raws[at]!.slice(0, offset + earlier.length)).toBe(raws[at - 1]!.slice(0, offset + earlier.length));
      expect(JSON.stringify(after.tools)).toBe(JSON.stringify(before.tools));
      expect(after.messages.length).toBeGreaterThan(before.messages.length);
    }
  });

  it('reads cached tokens from the documented usage object (prompt_tokens_details.cached_tokens)', async () => {
    const chunk = (body: object): string => `data: ${JSON.stringify(body)}\n\n`;
    const base = {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-4o-2024-08-06',
      system_fingerprint: 'fp_1',
    };
    server.enqueue({
      type: 'raw',
      frames: [
        chunk({
          ...base,
          choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' }, logprobs: null, finish_reason: null }],
        }),
        chunk({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] }),
        chunk({
          ...base,
          choices: [],
          usage: {
            prompt_tokens: 2006,
            completion_tokens: 300,
            total_tokens: 2306,
            prompt_tokens_details: { cached_tokens: 1920, audio_tokens: 0 },
            completion_tokens_details: {
              reasoning_tokens: 0,
              audio_tokens: 0,
              accepted_prediction_tokens: 0,
              rejected_prediction_tokens: 0,
            },
          },
        }),
        'data: [DONE]\n\n',
      ],
    });
    const response = await model.call(request([{ role: 'user', content: 'Hi' }]));
    expect(response.usage).toEqual({
      inputTokens: 2006,
      outputTokens: 300,
      totalTokens: 2306,
      cachedInputTokens: 1920,
    });
  });

  it('reports no cache fields when the server gives no details (compatible servers)', async () => {
    server.enqueue({ type: 'stream', textPieces: ['ok'], usage: { inputTokens: 9, outputTokens: 2 } });
    expect((await model.call(request([{ role: 'user', content: 'Hi' }]))).usage).toEqual({
      inputTokens: 9,
      outputTokens: 2,
      totalTokens: 11,
    });
  });
});

describe('Anthropic messages on the wire', () => {
  let server: FakeVendorServer;
  beforeEach(async () => {
    server = await FakeVendorServer.start('anthropic');
  });
  afterEach(() => server.close());
  const modelWith = (options: Partial<ConstructorParameters<typeof AnthropicModel>[0]> = {}) =>
    new AnthropicModel({ model: 'claude-test', apiKey: 'k', baseURL: server.baseURL, maxRetries: 0, ...options });

  it('sends image blocks (url and base64 sources) and document blocks (base64 PDF, text source) with their titles', async () => {
    server.enqueue({ type: 'stream', textPieces: ['ok'] });
    await modelWith({ promptCache: false }).call(request([userWithParts]));
    expect(server.requests[0]!.body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Compare these.' },
          { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG64 } },
          {
            type: 'document',
            title: 'invoice.pdf',
            source: { type: 'base64', media_type: 'application/pdf', data: PDF64 },
          },
          {
            type: 'document',
            title: 'notes.txt',
            source: { type: 'text', media_type: 'text/plain', data: 'line one\nline two' },
          },
        ],
      },
    ]);
  });

  it('puts a tool’s image inside its tool_result block', async () => {
    server.enqueue({ type: 'stream', textPieces: ['ok'] });
    await modelWith({ promptCache: false }).call(
      request([{ role: 'user', content: 'Show scan 7' }, ...toolWithImage], [fetchTool]),
    );
    expect(server.requests[0]!.body.messages[2]).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'call_1',
          content: [
            { type: 'text', text: 'Scan 7' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG64 } },
          ],
        },
      ],
    });
  });

  it('marks the stable prefix: the last tool, the system prompt, the end of earlier turns and the last block (four breakpoints at most)', async () => {
    const app = Trellis.create();
    await app.install(ScansPlugin);
    await app.start();
    server.enqueue(
      { type: 'stream', textPieces: ['First answer.'] },
      { type: 'stream', toolCalls: [{ id: freshId(), name: 'scans__fetch', argumentPieces: ['{"id":"7"}'] }] },
      { type: 'stream', textPieces: ['Total 42.'] },
    );
    const session = app.agent({ name: 'desk', model: modelWith(), instructions: 'You read invoices.' }).session('s');
    await session.send('Hello');
    await session.send('What is the total of invoice 7?');
    await app.stop();
    const ephemeral = { type: 'ephemeral' };
    const [first, , third] = server.requests.map((r) => r.body);
    expect(first!.system).toEqual([{ type: 'text', text: 'You read invoices.', cache_control: ephemeral }]);
    expect(first!.tools.at(-1).cache_control).toEqual(ephemeral);
    // The first turn: no earlier transcript, so only the latest block is marked in the messages.
    expect(first!.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hello', cache_control: ephemeral }] },
    ]);
    // The second turn's second round: the end of turn one, and the tool result that ends the request.
    const marked = third!.messages
      .flatMap((m: { content: unknown }, at: number) =>
        Array.isArray(m.content)
          ? m.content.map((b: { cache_control?: unknown; type: string }) => ({
              at,
              type: b.type,
              cached: b.cache_control !== undefined,
            }))
          : [],
      )
      .filter((b: { cached: boolean }) => b.cached);
    expect(marked).toEqual([
      { at: 1, type: 'text', cached: true },
      { at: 4, type: 'tool_result', cached: true },
    ]);
    expect(third!.messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'First answer.', cache_control: ephemeral }],
    });
    const count = (body: Record<string, any>): number => JSON.stringify(body).split('"cache_control"').length - 1;
    expect(server.requests.map((r) => count(r.body))).toEqual([3, 4, 4]);
  });

  it('sends no cache_control with promptCache: false, and the chosen breakpoints and ttl otherwise', async () => {
    server.enqueue({ type: 'stream', textPieces: ['ok'] }, { type: 'stream', textPieces: ['ok'] });
    const messages: ChatMessage[] = [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
      { role: 'user', content: 'c' },
    ];
    await modelWith({ promptCache: false }).call(request(messages, [fetchTool]));
    expect(server.requests[0]!.raw).not.toContain('cache_control');
    expect(server.requests[0]!.body.system).toBe('S');
    await modelWith({ promptCache: { breakpoints: ['system'], ttl: '1h' } }).call(request(messages, [fetchTool]));
    const body = server.requests[1]!.body;
    expect(body.system).toEqual([{ type: 'text', text: 'S', cache_control: { type: 'ephemeral', ttl: '1h' } }]);
    expect(server.requests[1]!.raw.split('"cache_control"')).toHaveLength(2);
  });

  it('reads cache reads and writes from the documented usage (input_tokens excludes them; inputTokens counts them)', async () => {
    const event = (name: string, data: object): string =>
      `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
    server.enqueue({
      type: 'raw',
      frames: [
        event('message_start', {
          message: {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            content: [],
            model: 'claude-sonnet-4-5',
            stop_reason: null,
            stop_sequence: null,
            usage: {
              input_tokens: 21,
              cache_creation_input_tokens: 188086,
              cache_read_input_tokens: 0,
              output_tokens: 1,
            },
          },
        }),
        event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello' } }),
        event('content_block_stop', { index: 0 }),
        event('message_delta', {
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: 393 },
        }),
        event('message_stop', {}),
      ],
    });
    server.enqueue({
      type: 'raw',
      frames: [
        event('message_start', {
          message: {
            id: 'msg_2',
            type: 'message',
            role: 'assistant',
            content: [],
            model: 'claude-sonnet-4-5',
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 50, output_tokens: 1 },
          },
        }),
        event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hi' } }),
        event('content_block_stop', { index: 0 }),
        // Newer servers repeat the cumulative counts, the cache ones included, in message_delta.
        event('message_delta', {
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: {
            input_tokens: 50,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 188086,
            output_tokens: 12,
          },
        }),
        event('message_stop', {}),
      ],
    });
    const model = modelWith();
    expect((await model.call(request([{ role: 'user', content: 'Hi' }]))).usage).toEqual({
      inputTokens: 188107,
      outputTokens: 393,
      totalTokens: 188500,
      cachedInputTokens: 0,
      cacheWriteInputTokens: 188086,
    });
    expect((await model.call(request([{ role: 'user', content: 'Hi' }]))).usage).toEqual({
      inputTokens: 188136,
      outputTokens: 12,
      totalTokens: 188148,
      cachedInputTokens: 188086,
      cacheWriteInputTokens: 0,
    });
  });
});
