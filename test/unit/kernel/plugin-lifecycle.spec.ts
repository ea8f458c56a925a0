import 'reflect-metadata';
import { inject, injectable, preDestroy } from 'inversify';
import { Hook, Plugin, Tool, Trellis, TrellisError } from '../../../index.js';
import type { PluginLifecycle, PluginHost } from '../../../plugin.js';
import { rejectionOf, sleep } from '../../support/kernel-harness.js';
import { kernelOf } from '../../../src/app/kernel-access.js';

class NoInput {}

describe('plugin lifecycle', () => {
  describe('onInstall and onUninstall', () => {
    it('calls onInstall with its PluginHost before the plugin is registered, and onUninstall on uninstall', async () => {
      const calls: string[] = [];
      let registeredDuringInstall: boolean | undefined;
      let hostName: string | undefined;
      const app = Trellis.create();
      @Plugin({ name: 'life', version: '1.0.0' })
      class Life implements PluginLifecycle {
        onInstall(host: PluginHost) {
          hostName = host.name;
          registeredDuringInstall = kernelOf(app).registry.byName.has('life');
          calls.push('install');
        }
        onUninstall() {
          calls.push('uninstall');
        }
      }

      await app.install(Life);
      expect(calls).toEqual(['install']);
      expect(registeredDuringInstall).toBe(false);
      expect(hostName).toBe('life');
      expect(kernelOf(app).registry.byName.has('life')).toBe(true);

      await app.uninstall('life');
      expect(calls).toEqual(['install', 'uninstall']);
    });

    it('does not register a plugin whose onInstall throws, and says why', async () => {
      @Plugin({ name: 'fragile', version: '1.0.0' })
      class Fragile implements PluginLifecycle {
        @Tool({ name: 'fragile.tool', description: 'A tool. Use in tests.', input: NoInput })
        tool() {
          return 1;
        }
        onInstall() {
          throw new Error('cannot reach the warehouse');
        }
      }
      const app = Trellis.create();

      const error = await rejectionOf(app.install(Fragile));

      expect(TrellisError.is(error, 'InvalidPlugin')).toBe(true);
      expect((error as Error).message).toMatch(/cannot reach the warehouse/);
      expect(kernelOf(app).registry.byName.has('fragile')).toBe(false);
      expect(kernelOf(app).registry.tools.has('fragile.tool')).toBe(false);
    });
  });

  describe('app.start and app.stop', () => {
    const log: string[] = [];
    const signals: unknown[] = [];
    const lifecyclePlugin = (name: string, priority: number | undefined) => {
      @Plugin({ name, version: '1.0.0', priority })
      class P {
        @Hook('app.startup')
        up() {
          log.push(`up:${name}`);
        }
        @Hook('app.shutdown')
        down(signal: unknown) {
          log.push(`down:${name}`);
          signals.push(signal);
        }
      }
      return P;
    };

    beforeEach(() => {
      log.length = 0;
      signals.length = 0;
    });

    it('start runs app.startup hooks by priority, ties by install order', async () => {
      const app = Trellis.create();
      await app.install(lifecyclePlugin('late', 200));
      await app.install(lifecyclePlugin('tie-first', undefined));
      await app.install(lifecyclePlugin('early', 10));
      await app.install(lifecyclePlugin('tie-second', 100));

      await app.start();

      expect(log).toEqual(['up:early', 'up:tie-first', 'up:tie-second', 'up:late']);
      expect(app.started).toBe(true);
    });

    it('stop runs app.shutdown hooks in reverse order and passes the signal to each', async () => {
      const app = Trellis.create();
      await app.install(lifecyclePlugin('late', 200));
      await app.install(lifecyclePlugin('tie-first', undefined));
      await app.install(lifecyclePlugin('early', 10));
      await app.install(lifecyclePlugin('tie-second', 100));
      await app.start();
      log.length = 0;

      await app.stop('SIGTERM');

      expect(log).toEqual(['down:late', 'down:tie-second', 'down:tie-first', 'down:early']);
      expect(signals).toEqual(['SIGTERM', 'SIGTERM', 'SIGTERM', 'SIGTERM']);
      expect(app.started).toBe(false);
    });

    it('stop releases container singletons: providers and plugins are no longer resolvable, and they are destroyed', async () => {
      let destroyed = 0;
      @injectable()
      class Pool {
        @preDestroy()
        close() {
          destroyed++;
        }
      }
      @Plugin({ name: 'uses-pool', version: '1.0.0' })
      class UsesPool {
        constructor(@inject(Pool) readonly pool: Pool) {}
      }
      const app = Trellis.create({ providers: [Pool] });
      await app.install(UsesPool);
      await app.start();
      expect(kernelOf(app).providers.isBound(Pool)).toBe(true);

      await app.stop();

      expect(kernelOf(app).providers.isBound(Pool)).toBe(false);
      expect(() => kernelOf(app).providers.get(Pool)).toThrow();
      expect(destroyed).toBe(1);
    });

    it('stop waits for an async @preDestroy of a singleton (e.g. a pool closing) instead of failing', async () => {
      let closed = false;
      @injectable()
      class AsyncPool {
        @preDestroy()
        async close() {
          await sleep(5);
          closed = true;
        }
      }
      const app = Trellis.create({ providers: [AsyncPool] });
      kernelOf(app).providers.get(AsyncPool);
      await app.start();

      await app.stop('SIGINT');

      expect(closed).toBe(true);
      expect(kernelOf(app).providers.isBound(AsyncPool)).toBe(false);
    });

    it('an app cannot be started again after stop', async () => {
      const app = Trellis.create();
      await app.start();
      await app.stop();

      const error = await rejectionOf(app.start());

      expect(TrellisError.is(error)).toBe(true);
    });
  });

  describe('heartbeat', () => {
    it('runs app.heartbeat hooks every heartbeatMs once started, and no more after stop', async () => {
      const beats: number[] = [];
      @Plugin({ name: 'pulse', version: '1.0.0' })
      class Pulse {
        @Hook('app.heartbeat')
        beat(at: number) {
          beats.push(at);
        }
      }
      const app = Trellis.create({ heartbeatMs: 10 });
      await app.install(Pulse);

      await sleep(40);
      expect(beats).toHaveLength(0);

      await app.start();
      await sleep(100);
      expect(beats.length).toBeGreaterThanOrEqual(2);
      expect(typeof beats[0]).toBe('number');

      await app.stop();
      const count = beats.length;
      await sleep(50);
      expect(beats).toHaveLength(count);
    });

    it('refuses a heartbeatMs that is not a positive number', () => {
      expect(() => Trellis.create({ heartbeatMs: 0 })).toThrow(expect.objectContaining({ code: 'InvalidOptions' }));
    });
  });
});
