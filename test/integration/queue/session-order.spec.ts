import { Redis } from 'ioredis';
import { QueueNames } from '../../../src/hosts/queue/queue-connection.js';
import { ORDER_TTL_MS, ORPHAN_GRACE_MS, SessionOrder, cancelChannel } from '../../../src/hosts/queue/session-order.js';
import { REDIS_URL, haveService } from '../../support/services.js';

const available = await haveService('redis', 'the session order list');

(available ? describe : describe.skip)('the per-session turn order in Redis (SessionOrder)', () => {
  const names = new QueueNames({
    url: REDIS_URL,
    prefix: `trellis_so${process.pid}_${Date.now().toString(36)}`,
    queueName: 'turns',
  });
  const key = (rest: string) => `${names.prefix}:${names.queueName}:${rest}`;
  let redis: Redis;
  let order: SessionOrder;

  beforeAll(() => {
    redis = new Redis(REDIS_URL);
    order = new SessionOrder(names, redis);
  });

  afterAll(async () => {
    const keys = await redis.keys(`${names.prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  /** A job hash as BullMQ leaves one: running, or finished. */
  const job = (id: string, finished = false) =>
    redis.hset(key(id), finished ? { data: '{}', finishedOn: String(Date.now()) } : { data: '{}' });

  it('runs jobs in the order they were appended; a job not in the list runs; finishing wakes the next', async () => {
    for (const id of ['a1', 'a2', 'a3'])
      expect(await order.append('s1', id, 'enqueue')).toEqual({ kind: 'accepted', cancelled: [] });
    for (const id of ['a1', 'a2', 'a3']) await job(id);
    expect(await order.placeOf('s1', 'a1')).toEqual({ kind: 'run', cancelled: undefined });
    expect(await order.placeOf('s1', 'a3')).toEqual({ kind: 'wait', head: 'a1' });
    expect(await order.placeOf('s1', 'elsewhere')).toEqual({ kind: 'run', cancelled: undefined });
    expect(await order.finish('s1', 'a1')).toBe('a2');
    expect(await order.placeOf('s1', 'a2')).toEqual({ kind: 'run', cancelled: undefined });
    // An enqueue of a job that exists is a duplicate and takes no second place.
    expect(await order.append('s1', 'a2', 'enqueue')).toEqual({ kind: 'duplicate' });
    expect(await redis.lrange(key('order:s1'), 0, -1)).toHaveLength(2);
  });

  it('keeps an order list and its cancel markers for a day, whatever the queue retains, renewed as turns finish; tells the head and its data', async () => {
    for (const id of ['t1', 't2']) await order.append('s9', id, 'enqueue');
    await job('t1');
    await redis.hset(key('t2'), { data: JSON.stringify({ access: { principal: 'alice', owner: null } }) });
    expect(await redis.pttl(key('order:s9'))).toBeGreaterThan(ORDER_TTL_MS - 60_000);
    await order.cancelHead('s9', true);
    expect(await redis.ttl(key('cancelled:t1'))).toBeGreaterThan(ORDER_TTL_MS / 1000 - 60);
    // A backlog waiting behind a long turn: the finish renews the list's expiry for the turns left.
    await redis.pexpire(key('order:s9'), 5_000);
    expect(await order.finish('s9', 't1')).toBe('t2');
    expect(await redis.pttl(key('order:s9'))).toBeGreaterThan(ORDER_TTL_MS - 60_000);
    expect(await order.head('s9')).toEqual({
      jobId: 't2',
      data: JSON.stringify({ access: { principal: 'alice', owner: null } }),
    });
    expect(await order.finish('s9', 't2')).toBeUndefined();
    expect(await order.head('s9')).toBeUndefined();
  });

  it('drops a head whose job finished or was removed, and one whose job never appeared within the grace; keeps a fresh one', async () => {
    await redis.rpush(
      key('order:s2'),
      `done ${Date.now()}`,
      `gone ${Date.now() - 1000}`,
      `orphan ${Date.now() - ORPHAN_GRACE_MS - 1}`,
      `fresh ${Date.now()}`,
      `b1 ${Date.now()}`,
    );
    await job('done', true);
    await job('b1');
    // `gone` had a hash once: removed now (retention). Its entry is old but inside the grace: kept until then.
    expect(await order.placeOf('s2', 'b1')).toEqual({ kind: 'wait', head: 'gone' });
    await redis.lset(key('order:s2'), 0, `gone ${Date.now() - ORPHAN_GRACE_MS - 1}`);
    // `fresh` has no hash yet (its enqueuer is between the append and BullMQ's add): it keeps its place.
    expect(await order.placeOf('s2', 'b1')).toEqual({ kind: 'wait', head: 'fresh' });
    expect(await redis.lrange(key('order:s2'), 0, -1)).toEqual([
      expect.stringMatching(/^fresh /),
      expect.stringMatching(/^b1 /),
    ]);
  });

  it('reject refuses a busy session; interrupt marks every job ahead cancelled and tells the workers; cancelHead marks the head', async () => {
    const listener = new Redis(REDIS_URL);
    const heard: string[] = [];
    listener.on('message', (_channel: string, text: string) => heard.push(text));
    await listener.subscribe(cancelChannel(names));
    try {
      await order.append('s3', 'c1', 'enqueue');
      await job('c1');
      await order.append('s3', 'c2', 'enqueue');
      await job('c2');
      expect(await order.append('s3', 'c3', 'reject')).toEqual({ kind: 'rejected', head: 'c1' });
      expect(await order.append('s3', 'c4', 'interrupt')).toEqual({ kind: 'accepted', cancelled: ['c1', 'c2'] });
      await job('c4');
      expect(await order.placeOf('s3', 'c1')).toEqual({ kind: 'run', cancelled: { keepSteps: true } });
      await order.finish('s3', 'c1');
      await order.finish('s3', 'c2');
      expect(await order.cancelHead('s3', false)).toBe('c4');
      expect(await order.placeOf('s3', 'c4')).toEqual({ kind: 'run', cancelled: { keepSteps: false } });
      await order.finish('s3', 'c4');
      expect(await order.cancelHead('s3', true)).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(heard.map((t) => JSON.parse(t))).toEqual([
        { jobs: ['c1', 'c2'], keepSteps: true },
        { jobs: ['c4'], keepSteps: false },
      ]);
    } finally {
      await listener.quit();
    }
  });
});
