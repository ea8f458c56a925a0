import {
  MemoryStore,
  Trellis,
  TrellisError,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '../../../index.js';

/** A model whose stream stalls: it answers only when the turn's signal aborts, as an SDK honouring its signal does. */
class StalledModel implements ModelProvider {
  readonly name = 'stalled';
  calls = 0;
  call(request: ModelRequest): Promise<ModelResponse> {
    this.calls++;
    return new Promise((_resolve, reject) => {
      request.signal?.addEventListener(
        'abort',
        () => reject(new TrellisError('Cancelled', 'the model call was aborted')),
        { once: true },
      );
    });
  }
}

describe('a turn deadline (AgentSpec.turnTimeoutMs)', () => {
  it('ends a turn whose model stalls, in time, and frees the session for the next send', async () => {
    const store = new MemoryStore();
    const app = Trellis.create({ store });
    const model = new StalledModel();
    const session = app.agent({ name: 'a', model, instructions: 'x', turnTimeoutMs: 300 }).session('s1');
    const started = Date.now();
    const result = await session.send('hello');
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(result.status).toBe('cancelled');
    expect(result.error?.message).toContain('turnTimeoutMs');
    // The lease is released: the next send runs (and stalls, and ends, again).
    const again = await session.send('again');
    expect(again.status).toBe('cancelled');
    expect(model.calls).toBe(2);
  });

  it("a caller's own signal still cancels before the deadline", async () => {
    const app = Trellis.create();
    const session = app
      .agent({ name: 'a', model: new StalledModel(), instructions: 'x', turnTimeoutMs: 60_000 })
      .session('s1');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const result = await session.send('hello', { signal: controller.signal });
    expect(result.status).toBe('cancelled');
    expect(result.error?.message).not.toContain('turnTimeoutMs');
  });

  it('refuses a deadline that is not a whole number of milliseconds ≥ 1', () => {
    let error: unknown;
    try {
      Trellis.create().agent({ name: 'a', model: new StalledModel(), instructions: 'x', turnTimeoutMs: -5 });
    } catch (caught) {
      error = caught;
    }
    expect(TrellisError.is(error, 'InvalidOptions')).toBe(true);
  });
});
