import { TrellisError } from '../../../src/errors/trellis-error.js';
import type { ModelDelta, ModelRequest } from '../../../src/contract/model-provider.js';
import { ScriptedModel } from '../../../src/engine/models/scripted-model.js';

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: [{ role: 'user', content: 'hello there, model' }], tools: [], inference: {}, ...overrides };
}

describe('ScriptedModel', () => {
  describe('answering from a list', () => {
    it('answers replies in order, strings as text', async () => {
      const model = new ScriptedModel(['first', { text: 'second' }]);
      expect((await model.call(request())).text).toBe('first');
      const second = await model.call(request());
      expect(second).toMatchObject({ text: 'second', toolCalls: [], model: 'scripted', finishReason: 'stop' });
    });

    it('encodes object args as JSON, passes string args raw, and numbers ids per instance', async () => {
      const model = new ScriptedModel([
        {
          toolCalls: [
            { name: 'orders.lookup', args: { id: 'A1' } },
            { name: 'db.search', args: '{not json' },
          ],
        },
        {
          toolCalls: [
            { name: 'orders.lookup', args: {} },
            { name: 'x', args: {}, id: 'mine' },
          ],
        },
      ]);
      const first = await model.call(request());
      const second = await model.call(request());
      expect(first.toolCalls).toEqual([
        { id: 'call_1', name: 'orders.lookup', arguments: '{"id":"A1"}' },
        { id: 'call_2', name: 'db.search', arguments: '{not json' },
      ]);
      expect(second.toolCalls.map((call) => call.id)).toEqual(['call_3', 'mine']);
      expect(first.finishReason).toBe('tool_calls');
    });

    it('fails with a non-retryable ModelFailed that says what to do when the script runs out', async () => {
      const model = new ScriptedModel(['only one']);
      await model.call(request());
      const error = await model.call(request()).catch((e: unknown) => e);
      expect(TrellisError.is(error, 'ModelFailed')).toBe(true);
      expect((error as TrellisError).retryable).toBe(false);
      expect((error as TrellisError).message).toMatch(/no reply for call #2.*Add a reply/);
    });

    it('throws an Error entry as a scripted failure, keeping a TrellisError as it is', async () => {
      const failure = new TrellisError('ModelFailed', 'rate limited', { retryable: true });
      const model = new ScriptedModel([failure, new Error('boom')]);
      await expect(model.call(request())).rejects.toBe(failure);
      await expect(model.call(request())).rejects.toMatchObject({
        code: 'ModelFailed',
        message: expect.stringContaining('boom'),
      });
    });
  });

  describe('answering from a function', () => {
    it('passes the request and the call index', async () => {
      const model = new ScriptedModel((req, index) => `${index}:${req.messages[0]!.content}`);
      expect((await model.call(request())).text).toBe('0:hello there, model');
      expect((await model.call(request())).text).toBe('1:hello there, model');
    });

    it('awaits async replies and wraps plain throws as ModelFailed', async () => {
      const model = new ScriptedModel(async (_req, index) => {
        if (index === 1) throw new Error('scripted outage');
        return 'ok';
      });
      expect((await model.call(request())).text).toBe('ok');
      await expect(model.call(request())).rejects.toMatchObject({
        code: 'ModelFailed',
        message: expect.stringContaining('scripted outage'),
      });
    });
  });

  describe('streaming', () => {
    it('streams text in a few chunks and tool calls as id/name then argument pieces', async () => {
      const deltas: ModelDelta[] = [];
      const model = new ScriptedModel([
        { text: 'Looking that up now.', toolCalls: [{ name: 'orders.lookup', args: { id: 'A1' } }] },
      ]);
      await model.call(request({ onDelta: (delta) => deltas.push(delta) }));
      const textChunks = deltas.filter((d) => d.type === 'text').map((d) => (d as { text: string }).text);
      expect(textChunks.length).toBeGreaterThan(1);
      expect(textChunks.join('')).toBe('Looking that up now.');
      const toolDeltas = deltas.filter((d) => d.type === 'tool_call');
      expect(toolDeltas[0]).toEqual({ type: 'tool_call', index: 0, id: 'call_1', name: 'orders.lookup' });
      expect(
        toolDeltas
          .slice(1)
          .map((d) => (d as { argumentsDelta: string }).argumentsDelta)
          .join(''),
      ).toBe('{"id":"A1"}');
      expect(toolDeltas.length).toBeGreaterThan(2);
    });
  });

  describe('usage', () => {
    it('estimates about four characters per token when not given', async () => {
      const model = new ScriptedModel(['12345678']);
      const { usage } = await model.call(request({ messages: [{ role: 'user', content: 'x'.repeat(40) }] }));
      expect(usage).toEqual({ inputTokens: 10, outputTokens: 2, totalTokens: 12 });
    });

    it('uses given fields and estimates the rest', async () => {
      const model = new ScriptedModel([{ text: '12345678', usage: { inputTokens: 100 } }]);
      expect((await model.call(request())).usage).toEqual({ inputTokens: 100, outputTokens: 2, totalTokens: 102 });
    });
  });

  describe('cancellation', () => {
    it('rejects with Cancelled when the signal is already aborted, without consuming a reply', async () => {
      const model = new ScriptedModel(['unused']);
      const controller = new AbortController();
      controller.abort();
      await expect(model.call(request({ signal: controller.signal }))).rejects.toMatchObject({ code: 'Cancelled' });
      expect((await model.call(request())).text).toBe('unused');
    });

    it('rejects with Cancelled when aborted during the delay', async () => {
      const model = new ScriptedModel(['late'], { delayMs: 10_000 });
      const controller = new AbortController();
      const started = Date.now();
      const pending = model.call(request({ signal: controller.signal }));
      setTimeout(() => controller.abort(), 10);
      await expect(pending).rejects.toMatchObject({ code: 'Cancelled' });
      expect(Date.now() - started).toBeLessThan(2_000);
    });

    it('answers after the delay when not aborted', async () => {
      const model = new ScriptedModel(['late'], { delayMs: 5, name: 'slow' });
      await expect(model.call(request({ signal: new AbortController().signal }))).resolves.toMatchObject({
        text: 'late',
        model: 'slow',
      });
    });
  });

  it('records the requests it received by reference', async () => {
    const model = new ScriptedModel(['a', 'b']);
    const first = request();
    const second = request();
    await model.call(first);
    await model.call(second);
    expect(model.calls).toHaveLength(2);
    expect(model.calls[0]).toBe(first);
    expect(model.calls[1]).toBe(second);
  });
});

describe('ScriptedModel keeps only its latest requests', () => {
  const request = (n: number) =>
    ({ messages: [{ role: 'user' as const, content: `m${n}` }], tools: [], inference: {} }) as unknown as Parameters<
      ScriptedModel['call']
    >[0];

  it('holds the last keepCalls requests and counts them all', async () => {
    const model = new ScriptedModel(() => 'ok', { keepCalls: 100 });
    for (let i = 0; i < 5_000; i++) await model.call(request(i));
    expect(model.calls).toHaveLength(100);
    expect(model.callCount).toBe(5_000);
    expect(model.calls[0]!.messages[0]!.content).toBe('m4900');
    expect(model.calls.at(-1)!.messages[0]!.content).toBe('m4999');
  });

  it('keeps 1,000 by default, and none with keepCalls: 0', async () => {
    const model = new ScriptedModel(() => 'ok');
    for (let i = 0; i < 1_500; i++) await model.call(request(i));
    expect(model.calls).toHaveLength(1_000);
    const none = new ScriptedModel(() => 'ok', { keepCalls: 0 });
    await none.call(request(1));
    expect(none.calls).toHaveLength(0);
    expect(none.callCount).toBe(1);
  });

  it('refuses a negative keepCalls', () => {
    expect(() => new ScriptedModel(['x'], { keepCalls: -1 })).toThrow(
      expect.objectContaining({ code: 'InvalidOptions' }),
    );
  });
});
