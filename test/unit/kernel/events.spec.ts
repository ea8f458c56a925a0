import 'reflect-metadata';
import { Hook, OnEffect, Plugin, StateKey, Trellis, type HookContext } from '../../../index.js';
import { KernelHarness, recordEvents, sleep } from '../../support/kernel-harness.js';

describe('app.events$', () => {
  @StateKey('ev.count', { scope: 'session', merge: 'exclusive', default: 0 })
  @StateKey('ev.note', { scope: 'session', merge: 'exclusive' })
  @Plugin({ name: 'ev', version: '1.2.3' })
  class Ev {
    @Hook('planning.started')
    async plan(value: string, ctx: HookContext) {
      await sleep(15);
      ctx.set('ev.count', 1);
      ctx.set('ev.note', 'n');
      ctx.emit('ev.changed', { count: 1 });
      return value;
    }
    @OnEffect('ev.changed')
    changed() {}
  }

  it('emits plugin.installed and plugin.uninstalled with the plugin name', async () => {
    const app = Trellis.create();
    const events = recordEvents(app);

    await app.install(Ev);
    await app.uninstall('ev');

    expect(events.of('plugin.installed')).toEqual([{ type: 'plugin.installed', plugin: 'ev', version: '1.2.3' }]);
    expect(events.of('plugin.uninstalled')).toEqual([{ type: 'plugin.uninstalled', plugin: 'ev' }]);
  });

  it('emits hook.entered and hook.exited around each handler, the exit with its duration', async () => {
    const app = Trellis.create();
    await app.install(Ev);
    const events = recordEvents(app);

    await new KernelHarness(app).pipeline('planning.started', 'x');

    const hookEvents = events.events.filter((e) => e.type === 'hook.entered' || e.type === 'hook.exited');
    expect(hookEvents.map((e) => e.type)).toEqual(['hook.entered', 'hook.exited']);
    expect(hookEvents[0]).toEqual({ type: 'hook.entered', point: 'planning.started', plugin: 'ev', sessionId: 's1' });
    const exited = events.of('hook.exited')[0]!;
    expect(exited).toMatchObject({ point: 'planning.started', plugin: 'ev', sessionId: 's1' });
    expect(exited.durationMs).toBeGreaterThanOrEqual(10);
  });

  it('emits state.committed with the new revision and the keys written, then effect.dispatched', async () => {
    const app = Trellis.create();
    await app.install(Ev);
    const events = recordEvents(app);

    await new KernelHarness(app).pipeline('planning.started', 'x');

    expect(events.of('state.committed')).toEqual([
      { type: 'state.committed', sessionId: 's1', revision: 1, keys: ['ev.count', 'ev.note'] },
    ]);
    expect(events.of('effect.dispatched')).toEqual([
      { type: 'effect.dispatched', sessionId: 's1', effect: 'ev.changed', plugin: 'ev' },
    ]);
    const types = events.events.map((e) => e.type);
    expect(types.indexOf('state.committed')).toBeLessThan(types.indexOf('effect.dispatched'));
  });

  it('emits error events for problems that do not throw (a failing reload onUninstall, a failing heartbeat)', async () => {
    const make = (v: string) => {
      @Plugin({ name: 'flaky', version: v })
      class Flaky {
        onUninstall() {
          throw new Error('could not flush');
        }
        @Hook('app.heartbeat')
        beat() {
          throw new Error('heartbeat failed');
        }
      }
      return Flaky;
    };
    const app = Trellis.create({ heartbeatMs: 5 });
    await app.install(make('1'));
    const events = recordEvents(app);

    await app.reload('flaky', make('2'));
    await app.start();
    await sleep(30);
    await app.stop();

    const errors = events.of('error');
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ plugin: 'flaky', message: expect.stringMatching(/could not flush/) }),
        expect.objectContaining({ point: 'app.heartbeat', message: expect.stringMatching(/heartbeat failed/) }),
      ]),
    );
  });
});
