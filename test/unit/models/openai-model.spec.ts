import { TrellisError } from '../../../src/errors/trellis-error.js';
import type { ModelDelta, ModelRequest } from '../../../src/contract/model-provider.js';
import { OpenAIModel } from '../../../src/engine/models/openai-model.js';
import { FakeVendorServer } from '../../support/fake-vendor-server.js';

const lookupTool = {
  name: 'orders.lookup',
  description: 'Look up one order by its id.',
  inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
};

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    messages: [{ role: 'user', content: 'Where is order A1?' }],
    tools: [lookupTool],
    inference: {},
    ...overrides,
  };
}

describe('OpenAIModel against an OpenAI-compatible endpoint', () => {
  let server: FakeVendorServer;
  let model: OpenAIModel;

  beforeEach(async () => {
    server = await FakeVendorServer.start('openai');
    model = new OpenAIModel({ model: 'gpt-test', apiKey: 'test-key', baseURL: server.baseURL });
  });
  afterEach(() => server.close());

  it('is named after its model', () => {
    expect(model.name).toBe('openai:gpt-test');
  });

  describe('streaming answers', () => {
    it('streams text deltas and returns the text, usage and the model that answered', async () => {
      server.enqueue({
        type: 'stream',
        textPieces: ['Order A1 ', 'shipped ', 'yesterday.'],
        usage: { inputTokens: 42, outputTokens: 7 },
      });
      const deltas: ModelDelta[] = [];
      const response = await model.call(request({ onDelta: (d) => deltas.push(d) }));
      expect(deltas).toEqual([
        { type: 'text', text: 'Order A1 ' },
        { type: 'text', text: 'shipped ' },
        { type: 'text', text: 'yesterday.' },
      ]);
      expect(response).toEqual({
        text: 'Order A1 shipped yesterday.',
        toolCalls: [],
        usage: { inputTokens: 42, outputTokens: 7, totalTokens: 49 },
        model: 'fake-model-001',
        finishReason: 'stop',
      });
    });

    it('assembles a tool call whose arguments arrive in pieces and decodes its name', async () => {
      server.enqueue({
        type: 'stream',
        toolCalls: [{ id: 'call_abc', name: 'orders__lookup', argumentPieces: ['{"i', 'd":"A', '1"}'] }],
      });
      const deltas: ModelDelta[] = [];
      const response = await model.call(request({ onDelta: (d) => deltas.push(d) }));
      expect(response.toolCalls).toEqual([{ id: 'call_abc', name: 'orders.lookup', arguments: '{"id":"A1"}' }]);
      expect(response.finishReason).toBe('tool_calls');
      expect(deltas[0]).toMatchObject({ type: 'tool_call', index: 0, id: 'call_abc', name: 'orders.lookup' });
      expect(deltas.filter((d) => d.type === 'tool_call' && d.argumentsDelta).length).toBe(3);
    });
  });

  describe('the request sent', () => {
    it('sends function tools with encoded names, streaming with usage, and mapped messages', async () => {
      server.enqueue({ type: 'stream', textPieces: ['ok'] });
      await model.call(
        request({
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'Where is A1?' },
            {
              role: 'assistant',
              content: '',
              toolCalls: [{ id: 'call_1', name: 'orders.lookup', arguments: '{"id":"A1"}' }],
            },
            { role: 'tool', content: '{"status":"shipped"}', toolCallId: 'call_1', name: 'orders.lookup' },
          ],
          inference: { temperature: 0.2, maxTokens: 300, topP: 0.9 },
        }),
      );
      const [received] = server.requests;
      expect(received!.path).toBe('/v1/chat/completions');
      expect(received!.headers.authorization).toBe('Bearer test-key');
      expect(received!.body).toMatchObject({
        model: 'gpt-test',
        stream: true,
        stream_options: { include_usage: true },
        temperature: 0.2,
        max_tokens: 300,
        top_p: 0.9,
        tools: [
          {
            type: 'function',
            function: {
              name: 'orders__lookup',
              description: lookupTool.description,
              parameters: lookupTool.inputSchema,
            },
          },
        ],
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Where is A1?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'orders__lookup', arguments: '{"id":"A1"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: '{"status":"shipped"}' },
        ],
      });
      expect(received!.body).not.toHaveProperty('reasoning_effort');
    });

    it('applies a model override and reasoning effort when set, and omits tools when there are none', async () => {
      server.enqueue({ type: 'stream', textPieces: ['ok'] });
      await model.call(request({ tools: [], inference: { model: 'o4-mini', reasoningEffort: 'low' } }));
      expect(server.requests[0]!.body).toMatchObject({ model: 'o4-mini', reasoning_effort: 'low' });
      expect(server.requests[0]!.body).not.toHaveProperty('tools');
      expect(server.requests[0]!.body).not.toHaveProperty('temperature');
    });
  });

  describe('failures', () => {
    it('retries a 429 and succeeds', async () => {
      server.enqueue({ type: 'error', status: 429 }, { type: 'stream', textPieces: ['after rate limit'] });
      expect((await model.call(request())).text).toBe('after rate limit');
      expect(server.requests).toHaveLength(2);
    });

    it('retries a 500 and succeeds', async () => {
      server.enqueue({ type: 'error', status: 500 }, { type: 'stream', textPieces: ['after outage'] });
      expect((await model.call(request())).text).toBe('after outage');
      expect(server.requests).toHaveLength(2);
    });

    it('reports a retryable ModelFailed with the status once retries are spent', async () => {
      server.enqueue({ type: 'error', status: 503 }, { type: 'error', status: 503 }, { type: 'error', status: 503 });
      const error = await model.call(request()).catch((e: unknown) => e);
      expect(server.requests).toHaveLength(3);
      expect(error).toMatchObject({ code: 'ModelFailed', retryable: true, details: { status: 503 } });
    });

    it('does not retry a 400 and reports it as not retryable', async () => {
      server.enqueue(
        { type: 'error', status: 400, message: 'bad tool schema' },
        { type: 'stream', textPieces: ['never'] },
      );
      const error = await model.call(request()).catch((e: unknown) => e);
      expect(server.requests).toHaveLength(1);
      expect(TrellisError.is(error, 'ModelFailed')).toBe(true);
      expect(error).toMatchObject({ retryable: false, details: { status: 400 } });
      expect((error as Error).message).toMatch(/HTTP 400.*bad tool schema/);
    });

    it('names the API key variable on a 401', async () => {
      server.enqueue({ type: 'error', status: 401 });
      const error = (await model.call(request()).catch((e: unknown) => e)) as TrellisError;
      expect(error.retryable).toBe(false);
      expect(error.hint).toMatch(/OPENAI_API_KEY/);
    });

    it('reports an unreachable endpoint as retryable', async () => {
      await server.close();
      const offline = new OpenAIModel({ model: 'gpt-test', apiKey: 'k', baseURL: server.baseURL, maxRetries: 0 });
      await expect(offline.call(request())).rejects.toMatchObject({ code: 'ModelFailed', retryable: true });
      server = await FakeVendorServer.start('openai');
    });

    it('reports a request timeout as retryable', async () => {
      server.enqueue({ type: 'hang' });
      const slow = new OpenAIModel({
        model: 'gpt-test',
        apiKey: 'k',
        baseURL: server.baseURL,
        maxRetries: 0,
        timeoutMs: 100,
      });
      await expect(slow.call(request())).rejects.toMatchObject({ code: 'ModelFailed', retryable: true });
    });
  });

  describe('an error event in the middle of the stream', () => {
    it('is a retryable ModelFailed when the vendor is at fault', async () => {
      server.enqueue({ type: 'stream', textPieces: ['Half an ans'], errorEvent: 'server_error' });
      const error = await model.call(request()).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'ModelFailed', retryable: true, details: { type: 'server_error' } });
      expect(server.requests).toHaveLength(1);
    });

    it('is not retryable for a request fault', async () => {
      server.enqueue({ type: 'stream', textPieces: ['Half'], errorEvent: 'invalid_request_error' });
      await expect(model.call(request())).rejects.toMatchObject({ code: 'ModelFailed', retryable: false });
    });
  });

  describe('cancellation', () => {
    it('rejects with Cancelled when aborted mid-stream, without retrying', async () => {
      server.enqueue({ type: 'stall', textPieces: ['partial'] });
      const controller = new AbortController();
      const call = model.call(request({ signal: controller.signal, onDelta: () => controller.abort() }));
      await expect(call).rejects.toMatchObject({ code: 'Cancelled' });
      expect(server.requests).toHaveLength(1);
    });

    it('rejects with Cancelled without a request when already aborted', async () => {
      const controller = new AbortController();
      controller.abort();
      await expect(model.call(request({ signal: controller.signal }))).rejects.toMatchObject({ code: 'Cancelled' });
      expect(server.requests).toHaveLength(0);
    });
  });
});

describe('OpenAIModel when the endpoint cannot be reached', () => {
  it('says so in one sentence per part: no doubled full stop between the SDK message and the hint', async () => {
    // A port nothing listens on: the SDK answers "Connection error." itself.
    const closed = await FakeVendorServer.start('openai');
    const baseURL = closed.baseURL;
    await closed.close();
    const model = new OpenAIModel({ model: 'gpt-test', apiKey: 'test-key', baseURL, maxRetries: 0 });

    const error = (await model.call(request()).catch((e: unknown) => e)) as TrellisError;

    expect(error).toMatchObject({ code: 'ModelFailed', retryable: true });
    expect(error.message).toContain('Connection error. Could not reach the model endpoint');
    expect(error.message).not.toContain('..');
  });
});
