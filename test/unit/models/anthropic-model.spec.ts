import { TrellisError } from '../../../src/errors/trellis-error.js';
import { AnthropicModel } from '../../../src/engine/models/anthropic-model.js';
import type { ModelDelta, ModelRequest } from '../../../src/contract/model-provider.js';
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

describe('AnthropicModel against a Messages API endpoint', () => {
  let server: FakeVendorServer;
  let model: AnthropicModel;

  beforeEach(async () => {
    server = await FakeVendorServer.start('anthropic');
    model = new AnthropicModel({ model: 'claude-test', apiKey: 'test-key', baseURL: server.baseURL });
  });
  afterEach(() => server.close());

  it('is named after its model', () => {
    expect(model.name).toBe('anthropic:claude-test');
  });

  describe('streaming answers', () => {
    it('streams text deltas and returns the text, usage and the model that answered', async () => {
      server.enqueue({
        type: 'stream',
        textPieces: ['Order A1 ', 'shipped.'],
        usage: { inputTokens: 30, outputTokens: 9 },
      });
      const deltas: ModelDelta[] = [];
      const response = await model.call(request({ onDelta: (d) => deltas.push(d) }));
      expect(deltas).toEqual([
        { type: 'text', text: 'Order A1 ' },
        { type: 'text', text: 'shipped.' },
      ]);
      expect(response).toEqual({
        text: 'Order A1 shipped.',
        toolCalls: [],
        usage: { inputTokens: 30, outputTokens: 9, totalTokens: 39 },
        model: 'fake-model-001',
        finishReason: 'end_turn',
      });
    });

    it('assembles text followed by a tool call whose JSON arrives in pieces, decoding its name', async () => {
      server.enqueue({
        type: 'stream',
        textPieces: ['Let me check.'],
        toolCalls: [{ id: 'toolu_1', name: 'orders__lookup', argumentPieces: ['{"id":', ' "A', '1"}'] }],
      });
      const deltas: ModelDelta[] = [];
      const response = await model.call(request({ onDelta: (d) => deltas.push(d) }));
      expect(response.text).toBe('Let me check.');
      expect(response.toolCalls).toEqual([{ id: 'toolu_1', name: 'orders.lookup', arguments: '{"id": "A1"}' }]);
      expect(response.finishReason).toBe('tool_use');
      // The tool call is numbered among tool calls (0), not by its content block (1).
      expect(deltas.filter((d) => d.type === 'tool_call')).toEqual([
        { type: 'tool_call', index: 0, id: 'toolu_1', name: 'orders.lookup' },
        { type: 'tool_call', index: 0, argumentsDelta: '{"id":' },
        { type: 'tool_call', index: 0, argumentsDelta: ' "A' },
        { type: 'tool_call', index: 0, argumentsDelta: '1"}' },
      ]);
    });

    it('gives "{}" as the arguments of a tool call without input deltas', async () => {
      server.enqueue({ type: 'stream', toolCalls: [{ id: 'toolu_2', name: 'orders__lookup', argumentPieces: [] }] });
      expect((await model.call(request())).toolCalls[0]!.arguments).toBe('{}');
    });
  });

  describe('the request sent', () => {
    it('moves system messages to `system`, sends tools with encoded names, maps tool calls and results, and marks the cache breakpoints', async () => {
      server.enqueue({ type: 'stream', textPieces: ['ok'] });
      await model.call(
        request({
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'Where are A1 and B2?' },
            {
              role: 'assistant',
              content: 'Checking both.',
              toolCalls: [
                { id: 'toolu_a', name: 'orders.lookup', arguments: '{"id":"A1"}' },
                { id: 'toolu_b', name: 'orders.lookup', arguments: '{"id":"B2"}' },
              ],
            },
            { role: 'tool', content: 'shipped', toolCallId: 'toolu_a', name: 'orders.lookup' },
            { role: 'tool', content: 'pending', toolCallId: 'toolu_b', name: 'orders.lookup' },
            { role: 'system', content: 'Answer in English.' },
          ],
          inference: { temperature: 0.1, topP: 0.5, reasoningEffort: 'high' },
        }),
      );
      const [received] = server.requests;
      expect(received!.path).toBe('/v1/messages');
      expect(received!.headers['x-api-key']).toBe('test-key');
      expect(received!.body).toEqual({
        model: 'claude-test',
        max_tokens: 1024,
        stream: true,
        temperature: 0.1,
        top_p: 0.5,
        system: [{ type: 'text', text: 'Be brief.\n\nAnswer in English.', cache_control: { type: 'ephemeral' } }],
        tools: [
          {
            name: 'orders__lookup',
            description: lookupTool.description,
            input_schema: lookupTool.inputSchema,
            cache_control: { type: 'ephemeral' },
          },
        ],
        messages: [
          { role: 'user', content: 'Where are A1 and B2?' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Checking both.' },
              { type: 'tool_use', id: 'toolu_a', name: 'orders__lookup', input: { id: 'A1' } },
              { type: 'tool_use', id: 'toolu_b', name: 'orders__lookup', input: { id: 'B2' } },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_a', content: 'shipped' },
              { type: 'tool_result', tool_use_id: 'toolu_b', content: 'pending', cache_control: { type: 'ephemeral' } },
            ],
          },
        ],
      });
    });

    it('uses maxTokens from the inference settings over the option, and a model override', async () => {
      server.enqueue({ type: 'stream', textPieces: ['ok'] });
      await new AnthropicModel({ model: 'claude-test', apiKey: 'k', baseURL: server.baseURL, maxTokens: 2048 }).call(
        request({ tools: [], inference: { maxTokens: 77, model: 'claude-other' } }),
      );
      expect(server.requests[0]!.body).toMatchObject({ max_tokens: 77, model: 'claude-other' });
      expect(server.requests[0]!.body).not.toHaveProperty('tools');
      expect(server.requests[0]!.body).not.toHaveProperty('system');
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

    it('reports a retryable ModelFailed once retries are spent', async () => {
      const impatient = new AnthropicModel({
        model: 'claude-test',
        apiKey: 'k',
        baseURL: server.baseURL,
        maxRetries: 1,
      });
      server.enqueue({ type: 'error', status: 529 }, { type: 'error', status: 529 });
      await expect(impatient.call(request())).rejects.toMatchObject({
        code: 'ModelFailed',
        retryable: true,
        details: { status: 529 },
      });
      expect(server.requests).toHaveLength(2);
    });

    it('does not retry a 400 and reports it as not retryable', async () => {
      server.enqueue(
        { type: 'error', status: 400, message: 'messages: roles must alternate' },
        { type: 'stream', textPieces: ['never'] },
      );
      const error = await model.call(request()).catch((e: unknown) => e);
      expect(server.requests).toHaveLength(1);
      expect(TrellisError.is(error, 'ModelFailed')).toBe(true);
      expect(error).toMatchObject({ retryable: false, details: { status: 400 } });
      expect((error as Error).message).toMatch(/roles must alternate/);
    });

    it('names the API key variable on a 401', async () => {
      server.enqueue({ type: 'error', status: 401 });
      const error = (await model.call(request()).catch((e: unknown) => e)) as TrellisError;
      expect(error.retryable).toBe(false);
      expect(error.hint).toMatch(/ANTHROPIC_API_KEY/);
    });
  });

  describe('an error event in the middle of the stream', () => {
    it('is a retryable ModelFailed when the vendor is at fault', async () => {
      server.enqueue({ type: 'stream', textPieces: ['Half an ans'], errorEvent: 'overloaded_error' });
      const error = await model.call(request()).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'ModelFailed', retryable: true, details: { type: 'overloaded_error' } });
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

    it('rejects with Cancelled when aborted while waiting for the answer to start', async () => {
      server.enqueue({ type: 'hang' });
      const controller = new AbortController();
      const call = model.call(request({ signal: controller.signal }));
      setTimeout(() => controller.abort(), 50);
      await expect(call).rejects.toMatchObject({ code: 'Cancelled' });
    });
  });
});
