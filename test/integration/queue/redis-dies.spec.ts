import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { TrellisError } from '../../../index.js';
import { TurnQueue } from '../../../queue.js';
import { REDIS_URL, haveService } from '../../support/services.js';

const available = await haveService('redis', 'a turn queue whose Redis dies');

/** A TCP hop in front of the real Redis that the test can cut, as a Redis host dying would. */
class RedisHop {
  readonly sockets = new Set<Socket>();
  connections = 0;
  private server: Server | undefined;
  constructor(private readonly target: URL) {}

  async listen(port = 0): Promise<number> {
    this.server = createServer((client) => {
      this.connections++;
      const upstream = createConnection(Number(this.target.port || 6379), this.target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    return (this.server.address() as { port: number }).port;
  }

  /** Stops listening and drops every connection. */
  async cut(): Promise<void> {
    const closed = new Promise((resolve) => this.server?.close(resolve));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

(available ? describe : describe.skip)('a turn queue whose Redis dies after it connected', () => {
  let hop: RedisHop;
  afterEach(async () => hop?.cut());

  it('closes within connectTimeoutMs, rejects the awaited result, and stops reconnecting', async () => {
    hop = new RedisHop(new URL(REDIS_URL));
    const port = await hop.listen();
    const queue = new TurnQueue({ url: `redis://127.0.0.1:${port}`, prefix: `trellis_dies${process.pid}_${Date.now().toString(36)}`, connectTimeoutMs: 500 });
    // Connected both ways: a subscription, and a queued turn (no worker runs it) awaiting its result.
    const stop = await queue.watch('s1', () => undefined);
    const result = queue.send({ agent: 'a', sessionId: 's1', key: 'k1', message: 'hi' }).catch((error: unknown) => error);
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
