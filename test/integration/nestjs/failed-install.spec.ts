import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Plugin, SqliteStore, TrellisError } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { TrellisModule } from 'trellis/nestjs';

/** What the plugins did, in order. */
@Injectable()
class Journal {
  readonly events: string[] = [];
  /** The feed's server while it is installed. */
  server: Server | undefined;
}

/** Opens a TCP server on install and closes it on uninstall: a resource that keeps the process alive. */
@Plugin({ name: 'feed', version: '1.0.0' })
class FeedPlugin {
  constructor(private readonly journal: Journal) {}
  async onInstall(): Promise<void> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.journal.server = server;
    this.journal.events.push('install:feed');
  }
  async onUninstall(): Promise<void> {
    await new Promise<void>((resolve, reject) =>
      this.journal.server!.close((error) => (error ? reject(error) : resolve())),
    );
    this.journal.events.push('uninstall:feed');
  }
}

/** Depends on the feed, so it must be uninstalled before it. */
@Plugin({ name: 'audit', version: '1.0.0', dependsOn: ['feed'] })
class AuditPlugin {
  constructor(private readonly journal: Journal) {}
  onInstall(): void {
    this.journal.events.push('install:audit');
  }
  onUninstall(): void {
    this.journal.events.push('uninstall:audit');
  }
}

@Plugin({ name: 'pricing', version: '1.0.0' })
class PricingPlugin {
  onInstall(): void {
    throw new Error('the pricing service refused the key');
  }
}

@Module({ providers: [Journal], exports: [Journal] })
class JournalModule {}

@Module({
  imports: [JournalModule, TrellisModule.forFeature([FeedPlugin, AuditPlugin])],
  providers: [FeedPlugin, AuditPlugin],
})
class LedgerModule {}

@Module({ imports: [TrellisModule.forFeature([PricingPlugin])], providers: [PricingPlugin] })
class PricingModule {}

/** Listening TCP servers of this process: what would keep it from exiting. */
function serversOpen(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'TCPServerWrap').length;
}

/**
 * How many more servers are listening than `before` (other suites of this jest worker may
 * have left theirs), once a closed server's handle has left the list (a loop turn after its close).
 */
async function serversAddedSince(before: number): Promise<number> {
  const added = () => Math.max(0, serversOpen() - before);
  for (let i = 0; i < 20 && added() > 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
  return added();
}

describe("a Nest app whose bootstrap fails in one of TrellisModule's own install steps", () => {
  let dir: string;
  let store: SqliteStore;
  let journal: Journal | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'trellis-failed-install-'));
    store = SqliteStore.open(join(dir, 'sessions.db'));
  });

  afterEach(() => {
    // Without the clean-up under test the feed's server would keep jest alive.
    if (journal?.server?.listening) journal.server.close();
    void store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a plugin failing to install after others did: those are uninstalled, dependents first, their resources closed, and the store closed', async () => {
    const before = serversOpen();
    const ref = await Test.createTestingModule({
      imports: [
        TrellisModule.forRoot({
          store,
          agents: [{ name: 'desk', model: new ScriptedModel(['ok']), instructions: '' }],
        }),
        LedgerModule,
        PricingModule,
      ],
    }).compile();
    const seen = ref.get(Journal);
    journal = seen;
    const app = ref.createNestApplication({ logger: false });

    const error = await app.init().catch((e: unknown) => e);

    expect(TrellisError.is(error)).toBe(true);
    expect((error as Error).message).toMatch(/^PricingModule: .*the pricing service refused the key/);
    expect(seen.events).toEqual(['install:feed', 'install:audit', 'uninstall:audit', 'uninstall:feed']);
    expect(seen.server?.listening).toBe(false);
    expect(await serversAddedSince(before)).toBe(0);
    // The app owned the store, as on shutdown: it is closed, so nothing of Trellis stays open.
    await expect(store.list()).rejects.toThrow(/not open/);
    // Closing the failed app as the docs advise is harmless afterwards.
    await expect(app.close()).resolves.toBeUndefined();
  });

  it('the queue failing to load after the plugins installed (BullMQ missing): the plugins are uninstalled and the store closed', async () => {
    const before = serversOpen();
    // What Node says when the package is not installed; trellis/queue is imported at bootstrap.
    jest.unstable_mockModule('bullmq', () => {
      throw Object.assign(new Error("Cannot find package 'bullmq' imported from trellis/queue"), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    });
    const ref = await Test.createTestingModule({
      imports: [TrellisModule.forRoot({ store, agents: [], queue: { url: 'redis://127.0.0.1:6379' } }), LedgerModule],
    }).compile();
    const seen = ref.get(Journal);
    journal = seen;
    const app = ref.createNestApplication({ logger: false });

    await expect(app.init()).rejects.toThrow(/Cannot find package 'bullmq'/);

    expect(seen.events).toEqual(['install:feed', 'install:audit', 'uninstall:audit', 'uninstall:feed']);
    expect(await serversAddedSince(before)).toBe(0);
    await expect(store.list()).rejects.toThrow(/not open/);
    await app.close();
  });
});
