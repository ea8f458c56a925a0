import { TrellisError } from '../../../src/errors/trellis-error.js';
import { FallbackModel, type FallbackEvent } from '../../../src/engine/models/fallback-model.js';
import type { ModelRequest } from '../../../src/contract/model-provider.js';
import { ScriptedModel } from '../../../src/engine/models/scripted-model.js';

const request: ModelRequest = { messages: [{ role: 'user', content: 'hi' }], tools: [], inference: {} };

const rateLimited = (): TrellisError =>
  new TrellisError('ModelFailed', 'rate limited', { retryable: true, kind: 'system', hint: 'Slow down' });
const badRequest = (): TrellisError => new TrellisError('ModelFailed', 'bad request', { retryable: false });

describe('FallbackModel', () => {
  it('is named after the models it chains', () => {
    expect(new FallbackModel([new ScriptedModel([], { name: 'a' }), new ScriptedModel([], { name: 'b' })]).name).toBe(
      'fallback(a,b)',
    );
  });

  it('answers from the first model when it succeeds', async () => {
    const primary = new ScriptedModel(['from a'], { name: 'a' });
    const backup = new ScriptedModel(['from b'], { name: 'b' });
    const response = await new FallbackModel([primary, backup]).call(request);
    expect(response).toMatchObject({ text: 'from a', model: 'a' });
    expect(backup.calls).toHaveLength(0);
  });

  it('moves to the next model on a retryable failure, reporting it, and names the model that answered', async () => {
    const primary = new ScriptedModel([rateLimited()], { name: 'a' });
    const backup = new ScriptedModel(['from b'], { name: 'b' });
    const events: FallbackEvent[] = [];
    const response = await new FallbackModel([primary, backup], { onFallback: (e) => events.push(e) }).call(request);
    expect(response).toMatchObject({ text: 'from b', model: 'b' });
    expect(backup.calls[0]).toBe(request);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ from: primary, to: backup, error: { code: 'ModelFailed', retryable: true } });
  });

  it('rethrows a non-retryable failure at once', async () => {
    const failure = badRequest();
    const backup = new ScriptedModel(['from b'], { name: 'b' });
    await expect(new FallbackModel([new ScriptedModel([failure], { name: 'a' }), backup]).call(request)).rejects.toBe(
      failure,
    );
    expect(backup.calls).toHaveLength(0);
  });

  it('rethrows a cancellation at once', async () => {
    const controller = new AbortController();
    controller.abort();
    const backup = new ScriptedModel(['from b'], { name: 'b' });
    const chain = new FallbackModel([new ScriptedModel(['from a'], { name: 'a' }), backup]);
    await expect(chain.call({ ...request, signal: controller.signal })).rejects.toMatchObject({ code: 'Cancelled' });
    expect(backup.calls).toHaveLength(0);
  });

  it('when every model fails, throws the last error with a message naming every model tried', async () => {
    const chain = new FallbackModel([
      new ScriptedModel([rateLimited()], { name: 'a' }),
      new ScriptedModel([rateLimited()], { name: 'b' }),
    ]);
    const error = (await chain.call(request).catch((e: unknown) => e)) as TrellisError;
    expect(error).toMatchObject({
      code: 'ModelFailed',
      retryable: true,
      kind: 'system',
      hint: 'Slow down',
      details: { tried: ['a', 'b'] },
    });
    expect(error.message).toMatch(/All 2 models failed \(a, b\).*a: rate limited; b: rate limited\. Slow down$/);
    expect(error.cause).toBeInstanceOf(TrellisError);
  });

  it('refuses an empty chain', () => {
    expect(() => new FallbackModel([])).toThrow(/at least one model/);
  });
});
