import 'reflect-metadata';
import { IsIn, IsNumber, IsOptional, IsString, MaxLength } from 'class-validator';
import {
  AnthropicModel,
  OpenAIModel,
  Plugin,
  Tool,
  Trellis,
  type ModelRequest,
  type ToolContext,
} from '../../../index.js';
import { FakeVendorServer } from '../../support/fake-vendor-server.js';

/**
 * Wire tests for structured output: the official `openai` and `@anthropic-ai/sdk` clients
 * talk to a local server that records the exact bodies they send. Expected shapes follow the
 * providers' documented formats (OpenAI "Structured Outputs": `response_format` json_schema
 * with `strict: true`, strict function calling, the `refusal` field; Anthropic "Structured
 * outputs": `output_config.format`, and `stop_reason: "refusal"`).
 */
class InvoiceSummary {
  @IsString() @MaxLength(80) customer!: string;
  @IsNumber() total!: number;
  @IsIn(['EUR', 'USD']) currency!: string;
  @IsOptional() @IsString() note?: string;
}

class FindInput {
  @IsString() id!: string;
  @IsOptional() @IsString() year?: string;
}

/** What `books.find` was called with, across a test. */
let seen: FindInput[] = [];

@Plugin({ name: 'books', version: '1.0.0' })
class BooksPlugin {
  @Tool({
    name: 'books.find',
    description: 'Finds an invoice by id. Use when asked about an invoice.',
    input: FindInput,
  })
  find(input: FindInput, _ctx: ToolContext) {
    seen.push(input);
    return { customer: 'Ada', total: 42.5, currency: 'EUR' };
  }
}

const ANSWER = { customer: 'Ada', total: 42.5, currency: 'EUR', note: null };
const freshId = (): string => `call_${Math.random().toString(36).slice(2, 10)}`;

async function desk(model: OpenAIModel | AnthropicModel) {
  const app = Trellis.create();
  await app.install(BooksPlugin);
  return {
    app,
    session: app
      .agent({ name: 'desk', model, instructions: 'You summarise invoices.', output: InvoiceSummary })
      .session('s'),
  };
}

beforeEach(() => {
  seen = [];
});

describe('OpenAI structured outputs on the wire', () => {
  let server: FakeVendorServer;
  beforeEach(async () => {
    server = await FakeVendorServer.start('openai');
  });
  afterEach(() => server.close());

  it('sends response_format json_schema strict and strict tools; maps a null optional argument back before the tool validates it', async () => {
    const { app, session } = await desk(
      new OpenAIModel({
        model: 'gpt-4o',
        apiKey: 'k',
        baseURL: server.baseURL,
        maxRetries: 0,
        structuredOutput: 'native',
      }),
    );
    server.enqueue(
      {
        type: 'stream',
        toolCalls: [{ id: freshId(), name: 'books__find', argumentPieces: ['{"id":"7",', '"year":null}'] }],
      },
      { type: 'stream', textPieces: [JSON.stringify(ANSWER).slice(0, 20), JSON.stringify(ANSWER).slice(20)] },
    );

    const result = await session.send('Summarise invoice 7');

    expect(result.status).toBe('completed');
    expect(result.output).toEqual(
      Object.assign(new InvoiceSummary(), { customer: 'Ada', total: 42.5, currency: 'EUR' }),
    );
    // Strict mode answered null for the optional `year`: the tool got it absent, as its DTO says.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.year).toBeUndefined();
    const strictSummary = {
      type: 'object',
      properties: {
        customer: { type: 'string' },
        total: { type: 'number' },
        currency: { type: 'string', enum: ['EUR', 'USD'] },
        note: { type: ['string', 'null'] },
      },
      required: ['customer', 'total', 'currency', 'note'],
      additionalProperties: false,
    };
    for (const request of server.requests) {
      expect(request.body.response_format).toEqual({
        type: 'json_schema',
        json_schema: { name: 'InvoiceSummary', strict: true, schema: strictSummary },
      });
      expect(request.body.tools).toEqual([
        {
          type: 'function',
          function: {
            name: 'books__find',
            description: 'Finds an invoice by id. Use when asked about an invoice.',
            parameters: {
              type: 'object',
              properties: { id: { type: 'string' }, year: { type: ['string', 'null'] } },
              required: ['id', 'year'],
              additionalProperties: false,
            },
            strict: true,
          },
        },
      ]);
      // Native: the system prompt is the agent's, unchanged.
      expect(request.body.messages[0]).toEqual({ role: 'system', content: 'You summarise invoices.' });
    }
    await app.stop();
  });

  it("compiles a raw-schema tool (as MCP servers' tools are installed) the same way: strict on the wire, its nulls mapped back before the exact schema check", async () => {
    const raw = {
      type: 'object',
      properties: { query: { type: 'string', description: 'What to find' }, limit: { type: 'integer', minimum: 1 } },
      required: ['query'],
    };
    const calls: unknown[] = [];
    @Plugin({ name: 'docs', version: '1.0.0' })
    class DocsPlugin {
      @Tool({
        name: 'docs.search',
        description: 'Searches the docs (an MCP server tool). Tests only.',
        inputSchema: raw,
      })
      search(args: unknown) {
        calls.push(args);
        return 'found';
      }
    }
    const app = Trellis.create();
    await app.install(DocsPlugin);
    const session = app
      .agent({
        name: 'docs',
        model: new OpenAIModel({
          model: 'gpt-4o',
          apiKey: 'k',
          baseURL: server.baseURL,
          maxRetries: 0,
          structuredOutput: 'native',
        }),
        instructions: 'x',
      })
      .session('s');
    server.enqueue(
      {
        type: 'stream',
        toolCalls: [{ id: freshId(), name: 'docs__search', argumentPieces: ['{"query":"caching","limit":null}'] }],
      },
      { type: 'stream', textPieces: ['ok'] },
    );
    const result = await session.send('How does caching work?');
    expect(result.toolCalls[0]).toMatchObject({ tool: 'docs.search', ok: true });
    expect(calls).toEqual([{ query: 'caching' }]);
    expect(server.requests[0]!.body.tools[0].function).toEqual({
      name: 'docs__search',
      description: 'Searches the docs (an MCP server tool). Tests only.',
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', description: 'What to find' },
          limit: { type: ['integer', 'null'], minimum: 1 },
        },
        required: ['query', 'limit'],
        additionalProperties: false,
      },
      strict: true,
    });
    await app.stop();
  });

  it('asks for the answer in the system prompt on a compatible server (the default for another baseURL): no response_format, no strict', async () => {
    const { app, session } = await desk(
      new OpenAIModel({ model: 'llama3', apiKey: 'k', baseURL: server.baseURL, maxRetries: 0 }),
    );
    server.enqueue({
      type: 'stream',
      textPieces: ['```json\n', JSON.stringify({ customer: 'Ada', total: 1, currency: 'USD' }), '\n```'],
    });

    const result = await session.send('Summarise invoice 7');

    expect(result.output).toMatchObject({ customer: 'Ada', total: 1, currency: 'USD' });
    const body = server.requests[0]!.body;
    expect(body.response_format).toBeUndefined();
    expect(body.tools[0].function.strict).toBeUndefined();
    expect(body.tools[0].function.parameters).toEqual({
      type: 'object',
      properties: { id: { type: 'string' }, year: { type: 'string' } },
      required: ['id'],
      additionalProperties: false,
    });
    expect(body.messages[0].content).toContain('You summarise invoices.\n\nWhen you give your final answer');
    expect(body.messages[0].content).toContain('"currency":{"enum":["EUR","USD"],"type":"string"}');
    await app.stop();
  });

  it('reads a documented refusal (delta.refusal) as a refusal, and the turn ends failed with ModelRefused, not an empty reply', async () => {
    const chunk = (delta: object, finish: string | null = null): string =>
      `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-2024-08-06', system_fingerprint: 'fp_1', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
    const frames = [
      chunk({ role: 'assistant', content: null, refusal: '' }),
      chunk({ refusal: "I'm sorry, " }),
      chunk({ refusal: 'I cannot assist with that request.' }),
      chunk({}, 'stop'),
      'data: [DONE]\n\n',
    ];
    const model = new OpenAIModel({
      model: 'gpt-4o',
      apiKey: 'k',
      baseURL: server.baseURL,
      maxRetries: 0,
      structuredOutput: 'native',
    });
    server.enqueue({ type: 'raw', frames }, { type: 'raw', frames });
    const request: ModelRequest = { messages: [{ role: 'user', content: 'Summarise' }], tools: [], inference: {} };
    expect(await model.call(request)).toMatchObject({
      text: '',
      toolCalls: [],
      refusal: "I'm sorry, I cannot assist with that request.",
    });

    const { app, session } = await desk(model);
    const result = await session.send('Summarise invoice 7');
    expect(result).toMatchObject({
      status: 'failed',
      error: {
        code: 'ModelRefused',
        message: "The model refused to answer: I'm sorry, I cannot assist with that request.",
      },
    });
    expect(result.reply).toBeUndefined();
    await app.stop();
  });
});

describe('Anthropic structured outputs on the wire', () => {
  let server: FakeVendorServer;
  beforeEach(async () => {
    server = await FakeVendorServer.start('anthropic');
  });
  afterEach(() => server.close());
  const model = (options: Partial<ConstructorParameters<typeof AnthropicModel>[0]> = {}) =>
    new AnthropicModel({
      model: 'claude-test',
      apiKey: 'k',
      baseURL: server.baseURL,
      maxRetries: 0,
      promptCache: false,
      ...options,
    });
  const event = (name: string, data: object): string =>
    `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  const start = event('message_start', {
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'claude-sonnet-4-5',
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 1 },
    },
  });

  it('sends output_config.format json_schema in its dialect with every request of the turn, tools as they are', async () => {
    const { app, session } = await desk(model());
    server.enqueue(
      { type: 'stream', toolCalls: [{ id: freshId(), name: 'books__find', argumentPieces: ['{"id":"7"}'] }] },
      { type: 'stream', textPieces: [JSON.stringify({ customer: 'Ada', total: 42.5, currency: 'EUR' })] },
    );

    const result = await session.send('Summarise invoice 7');

    expect(result.output).toMatchObject({ customer: 'Ada', total: 42.5, currency: 'EUR' });
    for (const request of server.requests) {
      expect(request.body.output_config).toEqual({
        format: {
          type: 'json_schema',
          // maxLength dropped (Anthropic takes no length bounds; validation still checks it); optional `note` stays optional.
          schema: {
            type: 'object',
            properties: {
              customer: { type: 'string' },
              total: { type: 'number' },
              currency: { type: 'string', enum: ['EUR', 'USD'] },
              note: { type: 'string' },
            },
            required: ['customer', 'total', 'currency'],
            additionalProperties: false,
          },
        },
      });
      expect(request.body.tools[0].input_schema).toEqual({
        type: 'object',
        properties: { id: { type: 'string' }, year: { type: 'string' } },
        required: ['id'],
        additionalProperties: false,
      });
      expect(request.body.system).toBe('You summarise invoices.');
    }
    await app.stop();
  });

  it("with structuredOutput: 'prompt', sends no output_config and asks in the system prompt", async () => {
    const { app, session } = await desk(model({ structuredOutput: 'prompt' }));
    server.enqueue({ type: 'stream', textPieces: [JSON.stringify({ customer: 'Ada', total: 2, currency: 'EUR' })] });
    const result = await session.send('Summarise invoice 7');
    expect(result.output).toMatchObject({ total: 2 });
    expect(server.requests[0]!.body.output_config).toBeUndefined();
    expect(server.requests[0]!.body.system).toContain('answer with only one JSON object');
    await app.stop();
  });

  it('reads a documented streamed refusal (stop_reason "refusal", with and without stop_details) as a refusal, not an empty reply', async () => {
    const refusedWithDetails = [
      start,
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      event('content_block_delta', {
        index: 0,
        delta: { type: 'text_delta', text: 'I can help with the first part, but' },
      }),
      event('content_block_stop', { index: 0 }),
      event('message_delta', {
        delta: {
          stop_reason: 'refusal',
          stop_sequence: null,
          stop_details: { type: 'refusal', category: 'cyber', explanation: 'The request could enable a cyberattack.' },
        },
        usage: { output_tokens: 9 },
      }),
      event('message_stop', {}),
    ];
    const refusedBare = [
      start,
      event('message_delta', { delta: { stop_reason: 'refusal', stop_sequence: null }, usage: { output_tokens: 0 } }),
      event('message_stop', {}),
    ];
    server.enqueue(
      { type: 'raw', frames: refusedWithDetails },
      { type: 'raw', frames: refusedBare },
      { type: 'raw', frames: refusedWithDetails },
    );
    const request: ModelRequest = { messages: [{ role: 'user', content: 'x' }], tools: [], inference: {} };
    expect(await model().call(request)).toMatchObject({
      refusal: 'The request could enable a cyberattack.',
      finishReason: 'refusal',
    });
    expect(await model().call(request)).toMatchObject({
      text: '',
      refusal: 'The model declined to answer (stop_reason: refusal)',
    });

    const { app, session } = await desk(model());
    const result = await session.send('Summarise invoice 7');
    expect(result).toMatchObject({
      status: 'failed',
      error: { code: 'ModelRefused', message: 'The model refused to answer: The request could enable a cyberattack.' },
    });
    await app.stop();
  });
});
