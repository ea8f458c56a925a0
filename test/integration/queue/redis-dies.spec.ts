import { TrellisError } from '../../../index.js';
import { TurnQueue } from '../../../queue.js';
import { REDIS_URL, haveService } from '../../support/services.js';
import { RedisHop } from './redis-hop.js';

const available = await haveService('redis', 'a turn queue whose Redis dies');

(available ? describe : describe.skip)('a turn queue whose Redis dies after it connected', () => {
  let hop: RedisHop;
  afterEach(async () => hop?.cut());

  it('closes within connectTimeoutMs, rejects the awaited result, and stops reconnecting', async () => {
    hop = new RedisHop(new URL(REDIS_URL));
    const port = await hop.listen();
    const queue = new TurnQueue({
      url: `redis://127.0.0.1:${port}`,
      prefix: `trellis_dies${process.pid}_${Date.now().toString(36)}`,
      connectTimeoutMs: 500,
    });
    // Connected both ways: a subscription, and a queued turn (no worker runs it) awaiting its result.
    const stop = await queue.watch('s1', () => undefined);
    const result = queue
      .send({ agent: 'a', sessionId: 's1', key: 'k1', message: 'hi' })
      .catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hop.connections).toBeGreaterThanOrEqual(2);

    await hop.cut();
    const started = performance.now();
    await queue.close();
    stop();

    expect(performance.now() - started).toBeLessThan(3000);
    const error = await result;
    expect(TrellisError.is(error, 'Cancelled')).toBe(true);
    // Redis comes back where it was: a closed queue must not connect to it again (BullMQ would
    // retry about 2.7 s after the drop, ioredis sooner).
    hop = new RedisHop(new URL(REDIS_URL));
    hop.connections = 0;
    await hop.listen(port);
    await new Promise((resolve) => setTimeout(resolve, 4000));
    expect(hop.connections).toBe(0);
  }, 20_000);
});
