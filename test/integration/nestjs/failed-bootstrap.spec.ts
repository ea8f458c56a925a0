import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Injectable,
  Module,
  type DynamicModule,
  type INestApplication,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import { ModuleRef, NestFactory } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { Plugin, SqliteStore } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { InjectAgent, TrellisHost, TrellisModule, type HostedAgent } from 'trellis/nestjs';
import { haveService, REDIS_URL } from '../../support/services.js';
import { RedisHop } from '../queue/redis-hop.js';

const available = await haveService(
  'redis',
  'a Nest app whose bootstrap fails after TrellisModule opened its turn queue',
);

/** Set when Trellis installed its plugins: TrellisHost's onModuleInit ran before the failure. */
const installed: string[] = [];

@Plugin({ name: 'marker', version: '1.0.0' })
class MarkerPlugin {
  onInstall(): void {
    installed.push('marker');
  }
}

@Module({ imports: [TrellisModule.forFeature([MarkerPlugin])], providers: [MarkerPlugin] })
class MarkerModule {}

/** Lets connections opened by earlier hooks reach Redis before the failure. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

/**
 * The Trellis hosts of apps whose bootstrap failed, so that a failing test can still close
 * what they left open (a `createApplicationContext` that failed returns no app to close).
 */
const leftBehind: TrellisHost[] = [];

/** A service of the root module (whose hooks run after those of the modules it imports) that cannot start. */
@Injectable()
class FailsOnModuleInit implements OnModuleInit {
  constructor(private readonly moduleRef: ModuleRef) {}

  async onModuleInit(): Promise<void> {
    leftBehind.push(this.moduleRef.get(TrellisHost, { strict: false }));
    await settle();
    throw new Error('the orders database is down');
  }
}

/** Watches a session (which connects the turn queue), then cannot start. */
@Injectable()
class FailsOnBootstrap implements OnApplicationBootstrap {
  constructor(@InjectAgent('desk') private readonly desk: HostedAgent) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.desk.session('s1').watch(() => undefined);
    await settle();
    throw new Error('the orders database is down');
  }
}

/** What keeps this process alive, by kind ('TCPSocketWrap', 'Timeout', …). */
function activeResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/** Resources active now that were not in `before` (sockets, timers): what would keep the process from exiting. */
function addedSince(before: Map<string, number>): Record<string, number> {
  const added: Record<string, number> = {};
  for (const [kind, count] of activeResources())
    if (count > (before.get(kind) ?? 0)) added[kind] = count - (before.get(kind) ?? 0);
  return added;
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

(available ? describe : describe.skip)(
  'a Nest app whose bootstrap fails after TrellisModule initialised (real Redis through a counting hop)',
  () => {
    let hop: RedisHop;
    let url: string;
    let dir: string;
    let store: SqliteStore;
    let before: Map<string, number>;
    const prefix = `trellis_fb${process.pid}_${Date.now().toString(36)}`;

    beforeEach(async () => {
      installed.length = 0;
      hop = new RedisHop(new URL(REDIS_URL));
      url = `redis://127.0.0.1:${await hop.listen()}`;
      dir = mkdtempSync(join(tmpdir(), 'trellis-failed-bootstrap-'));
      store = SqliteStore.open(join(dir, 'sessions.db'));
      before = activeResources();
    });

    let app: INestApplication | undefined;

    afterEach(async () => {
      await app?.close();
      app = undefined;
      for (const host of leftBehind.splice(0)) await host.beforeApplicationShutdown();
      await store.close();
      await hop.cut();
      rmSync(dir, { recursive: true, force: true });
    });

    function trellis(extra: { worker?: boolean } = {}): DynamicModule {
      const agent = { name: 'desk', model: new ScriptedModel(['ok']), instructions: 'Answer.' };
      return TrellisModule.forRoot({
        store,
        agents: [agent],
        queue: { url, prefix, connectTimeoutMs: 2000 },
        ...extra,
      });
    }

    /** No connection of the app is left on Redis, and nothing it opened keeps the process alive. */
    async function expectNothingLeft(): Promise<void> {
      const closed = await until(() => hop.open === 0, 3000);
      expect({ redisConnectionsOpen: hop.open, closed }).toEqual({ redisConnectionsOpen: 0, closed: true });
      await until(() => Object.keys(addedSince(before)).length === 0, 3000);
      expect(addedSince(before)).toEqual({});
    }

    it.each([
      ['queue', {}],
      ['queue and worker', { worker: true }],
    ])(
      'init() rejected by a later onModuleInit (%s): no Redis connection is left open, nothing keeps the process alive',
      async (_what, extra) => {
        const ref = await Test.createTestingModule({
          imports: [trellis(extra), MarkerModule],
          providers: [FailsOnModuleInit],
        }).compile();
        app = ref.createNestApplication({ logger: false });

        await expect(app.init()).rejects.toThrow('the orders database is down');

        expect(installed).toEqual(['marker']);
        await expectNothingLeft();
      },
    );

    it('createApplicationContext() rejected by a later onModuleInit, which leaves no app to close: nothing is left open', async () => {
      @Module({ imports: [trellis({ worker: true }), MarkerModule], providers: [FailsOnModuleInit] })
      class WorkerAppModule {}

      await expect(
        NestFactory.createApplicationContext(WorkerAppModule, { logger: false, abortOnError: false }),
      ).rejects.toThrow('the orders database is down');

      expect(installed).toEqual(['marker']);
      await expectNothingLeft();
    });

    it('init() rejected by a later onApplicationBootstrap after the worker started and the queue connected: app.close() then releases both', async () => {
      const ref = await Test.createTestingModule({
        imports: [trellis({ worker: true }), MarkerModule],
        providers: [FailsOnBootstrap],
      }).compile();
      const failed = ref.createNestApplication({ logger: false });
      await expect(failed.init()).rejects.toThrow('the orders database is down');
      // The worker's connections and the queue's (BullMQ's and the event subscriber).
      expect(hop.open).toBeGreaterThanOrEqual(3);

      await failed.close();

      await expectNothingLeft();
    });
  },
);
