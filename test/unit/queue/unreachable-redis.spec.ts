import { createServer, type Server, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Test } from '@nestjs/testing';
import { MemoryStore, SqliteStore, TrellisError } from '../../../index.js';
import { TrellisModule } from '../../../nestjs.js';
import { TrellisWorker, TurnQueue } from '../../../queue.js';

/** A TCP port that accepts connections and never answers, as a hung or wrong host would. */
let silent: Server;
let url: string;
const sockets = new Set<Socket>();
beforeAll(async () => {
  silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  url = `redis://127.0.0.1:${(silent.address() as { port: number }).port}`;
});
afterAll(async () => {
  // close() waits for open connections: end the ones the clients left behind.
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
});

describe('a turn queue whose Redis does not answer fails clearly instead of waiting forever', () => {
  it.each([
    ['a silent host', () => url],
    ['a closed port', () => 'redis://127.0.0.1:1'],
  ])('enqueueing a turn (%s) fails StoreUnavailable after connectTimeoutMs', async (_, target) => {
    const queue = new TurnQueue({ url: target(), connectTimeoutMs: 300 });
    const started = performance.now();
    const error = await queue.send({ agent: 'a', sessionId: 's1', key: 'k1', message: 'hi' }).catch((e: unknown) => e);
    expect(TrellisError.is(error, 'StoreUnavailable')).toBe(true);
    expect((error as Error).message).toMatch(
      /^Cannot queue turn send\.s1\.k1: Redis at 127\.0\.0\.1:\d+ did not answer within 300 ms/,
    );
    // close() does not wait for a Redis that does not answer either.
    await queue.close();
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('starting a worker fails StoreUnavailable after connectTimeoutMs', async () => {
    const worker = new TrellisWorker({
      url,
      connectTimeoutMs: 300,
      store: new MemoryStore(),
      agent: () => Promise.reject(new Error('never')),
    });
    const error = await worker.start().catch((e: unknown) => e);
    expect(TrellisError.is(error, 'StoreUnavailable')).toBe(true);
    expect((error as Error).message).toContain('did not answer within 300 ms');
  });

  it("a Nest app's in-app worker gives up on Redis after the queue's connectTimeoutMs", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trellis-nest-queue-'));
    const store = SqliteStore.open(join(dir, 'shared.db'));
    const started = performance.now();
    try {
      const ref = await Test.createTestingModule({
        imports: [TrellisModule.forRoot({ store, queue: { url, connectTimeoutMs: 300 }, worker: true })],
      }).compile();
      const app = ref.createNestApplication({ logger: false });
      const error = await app.init().catch((e: unknown) => e);
      expect(TrellisError.is(error, 'StoreUnavailable')).toBe(true);
      expect((error as Error).message).toContain('did not answer within 300 ms');
      expect(performance.now() - started).toBeLessThan(5000);
      await app.close().catch(() => undefined);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a connectTimeoutMs that is not a positive number', () => {
    expect(() => new TurnQueue({ url: 'redis://127.0.0.1:6379', connectTimeoutMs: 0 })).toThrow(
      /connectTimeoutMs must be a positive number/,
    );
  });
});
