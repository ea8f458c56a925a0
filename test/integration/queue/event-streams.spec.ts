import { Redis } from 'ioredis';
import { MemoryStore, TrellisError, type Agent } from '../../../index.js';
import { TrellisWorker, TurnQueue, jobIdOf, type QueuedEvent } from '../../../queue.js';
import { createQueueApp } from '../../support/queue-app.js';
import { REDIS_URL, haveService } from '../../support/services.js';

const available = await haveService('redis', 'resumable event streams');
const prefix = `trellis_es${process.pid}_${Date.now().toString(36)}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

(available ? describe : describe.skip)('Resumable event streams (Redis Streams per session)', () => {
  let agent: Agent;
  let worker: TrellisWorker;
  let keeping: TrellisWorker;
  let enqueuer: TurnQueue;
  let redis: Redis;
  let count = 0;
  const session = () => `s${count++}`;

  beforeAll(async () => {
    // Each model call waits 120 ms: a turn's events spread over a quarter of a second.
    const host = createQueueApp(new MemoryStore(), () => undefined, 120);
    await host.install();
    agent = host.agent();
    worker = new TrellisWorker({
      url: REDIS_URL,
      prefix,
      queueName: 'turns',
      store: new MemoryStore(),
      agent: () => agent,
    });
    keeping = new TrellisWorker({
      url: REDIS_URL,
      prefix,
      queueName: 'kept',
      store: new MemoryStore(),
      agent: () => agent,
      eventRetention: { ms: 60_000, maxLen: 100 },
    });
    await worker.start();
    await keeping.start();
    enqueuer = new TurnQueue({ url: REDIS_URL, prefix, queueName: 'turns', pollMs: 200 });
    redis = new Redis(REDIS_URL);
  });

  afterAll(async () => {
    await worker.close();
    await keeping.close();
    await enqueuer.close();
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('gives a reader that disconnects mid-turn and reconnects with its last id every event it missed, then the live ones, none twice', async () => {
    const id = session();
    const reference = new TurnQueue({ url: REDIS_URL, prefix, queueName: 'turns' });
    const seen: QueuedEvent[] = [];
    const stopReference = await reference.watch(id, (event) => seen.push(event));

    // The reader that goes away: its own connections, closed mid-turn.
    const first = new TurnQueue({ url: REDIS_URL, prefix, queueName: 'turns' });
    const before: QueuedEvent[] = [];
    let gone!: () => void;
    const threeSeen = new Promise<void>((resolve) => (gone = resolve));
    await first.watch(id, (event) => {
      before.push(event);
      if (before.length === 3) gone();
    });
    const result = enqueuer.send({ agent: 'ledger-keeper', sessionId: id, key: 'm1', message: 'streamed' });
    await threeSeen;
    await first.close();
    const lastId = before.at(-1)!.id;
    const whileAway = seen.length;
    await sleep(150);
    expect(seen.length).toBeGreaterThan(whileAway);

    const second = new TurnQueue({ url: REDIS_URL, prefix, queueName: 'turns' });
    const after: QueuedEvent[] = [];
    const stop = await second.watch(id, (event) => after.push(event), { after: lastId });
    const replayed = after.length;
    await result;
    await sleep(100);
    stop();
    stopReference();

    const run = jobIdOf('send', id, 'm1');
    expect(seen.length).toBeGreaterThan(6);
    expect(seen.every((e) => e.run === run)).toBe(true);
    // Numbered 1, 2, 3 … in the run; stream ids increase.
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
    for (let i = 1; i < seen.length; i++)
      expect(BigInt(seen[i]!.id.split('-')[0]!) >= BigInt(seen[i - 1]!.id.split('-')[0]!)).toBe(true);
    // What the reader missed while away came from the stream; together it saw what the reference saw, once each.
    expect(replayed).toBeGreaterThan(0);
    expect([...before, ...after].map((e) => e.id)).toEqual(seen.map((e) => e.id));
    expect([...before, ...after].map((e) => e.type)).toEqual(seen.map((e) => e.type));
    expect(seen.at(-1)!.type).toBe('turn.finished');
    await second.close();
    await reference.close();
  });

  it('writes nothing to Redis for a turn nobody reads (one EXISTS, no stream, no publish)', async () => {
    const id = session();
    const monitor = new Redis(REDIS_URL);
    const commands: string[] = [];
    // Counting stops before the test's own EXISTS below, which a monitor still closing could see.
    let counting = true;
    const feed = await monitor.monitor();
    feed.on('monitor', (_time: string, args: string[]) => {
      if (
        counting &&
        args.some((a) => a.includes(`:stream:${id}`) || a.includes(`:events:${id}`) || a.includes(`:reader:${id}`))
      )
        commands.push(args[0]!.toLowerCase());
    });

    await enqueuer.send({ agent: 'ledger-keeper', sessionId: id, key: 'm1', message: 'unread' });
    await sleep(100);
    counting = false;
    feed.disconnect();
    monitor.disconnect();

    expect(await redis.exists(`${prefix}:turns:stream:${id}`)).toBe(0);
    expect(commands).toEqual(['exists']);
  });

  it('starts writing for a reader that arrives in the middle of a turn', async () => {
    const id = session();
    const result = enqueuer.send({ agent: 'ledger-keeper', sessionId: id, key: 'm1', message: 'joined late' });
    await sleep(150);
    const late = new TurnQueue({ url: REDIS_URL, prefix, queueName: 'turns' });
    const events: QueuedEvent[] = [];
    const stop = await late.watch(id, (event) => events.push(event));
    await result;
    await sleep(100);
    stop();
    await late.close();

    expect(events.length).toBeGreaterThan(0);
    expect(events.at(-1)!.type).toBe('turn.finished');
    // It joined mid-run: its first event is not the run's first.
    expect(events[0]!.seq).toBeGreaterThan(1);
  });

  it("keeps every session's events, capped, on a worker with eventRetention: a reader that comes afterwards replays the turn", async () => {
    const id = session();
    const queue = new TurnQueue({ url: REDIS_URL, prefix, queueName: 'kept' });
    await queue.send({ agent: 'ledger-keeper', sessionId: id, key: 'm1', message: 'kept' });
    const events: QueuedEvent[] = [];
    const stop = await queue.watch(id, (event) => events.push(event), { after: '0' });
    stop();

    expect(events[0]).toMatchObject({ type: 'turn.started', run: jobIdOf('send', id, 'm1'), seq: 1 });
    expect(events.at(-1)!.type).toBe('turn.finished');
    const ttl = await redis.pttl(`${prefix}:kept:stream:${id}`);
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    await queue.close();
  });

  it('refuses an `after` that is not an event id, and an eventRetention that is not one', async () => {
    const error = await enqueuer.watch('x', () => undefined, { after: 'yesterday' }).catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidOptions')).toBe(true);
    expect((error as Error).message).toContain('not an event id');
    expect(
      () =>
        new TrellisWorker({
          url: REDIS_URL,
          prefix,
          store: new MemoryStore(),
          agent: () => agent,
          eventRetention: { ms: 0 },
        }),
    ).toThrow(/eventRetention needs ms/);
  });
});
