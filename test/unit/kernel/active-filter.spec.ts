import 'reflect-metadata';
import { Hook, OnAction, OnEffect, Plugin, StateKey, Tool, Trellis, type HookContext } from '../../../index.js';
import { KernelHarness } from '../../support/kernel-harness.js';
import { kernelOf } from '../../../src/app/kernel-access.js';

class NoInput {}

describe("the active filter (an agent's plugins list)", () => {
  const calls: string[] = [];

  @StateKey('a.seen', { scope: 'session', merge: 'exclusive' })
  @Plugin({ name: 'a', version: '1.0.0' })
  class A {
    @Tool({ name: 'a.tool', description: 'A tool of a. Use in tests.', input: NoInput })
    tool() {
      return 'a';
    }
    @Hook('task.start')
    start(_: unknown, ctx: HookContext) {
      calls.push('a.start');
      ctx.emit('b.ping', 'from a');
    }
  }

  @StateKey('b.pings', { scope: 'session', merge: 'commutative', default: 0 })
  @Plugin({ name: 'b', version: '1.0.0' })
  class B {
    @Tool({ name: 'b.tool', description: 'A tool of b. Use in tests.', input: NoInput })
    tool() {
      return 'b';
    }
    @Hook('task.start')
    start() {
      calls.push('b.start');
    }
    @OnEffect('b.ping')
    ping(_: unknown, ctx: HookContext) {
      calls.push('b.ping');
      ctx.update<number>('b.pings', (n) => (n ?? 0) + 1);
    }
    @OnAction('b.act')
    act() {}
  }

  const setup = async () => {
    calls.length = 0;
    const app = Trellis.create();
    await app.install(A);
    await app.install(B);
    return { app, kernel: new KernelHarness(app) };
  };

  it("empty: every plugin's tools and hooks count", async () => {
    const { app, kernel } = await setup();

    const view = kernelOf(app).registry.view([]);
    await kernel.parallel('task.start', undefined, { active: [] });

    expect(view.tools.map((t) => t.name)).toEqual(['a.tool', 'b.tool']);
    expect(view.hooks['task.start'].map((h) => h.plugin)).toEqual(['a', 'b']);
    expect(calls).toEqual(expect.arrayContaining(['a.start', 'b.start']));
  });

  it("non-empty: only the named plugins' tools and hooks count", async () => {
    const { app, kernel } = await setup();

    const view = kernelOf(app).registry.view(['a']);
    await kernel.parallel('task.start', undefined, { active: ['a'] });

    expect(view.tools.map((t) => t.name)).toEqual(['a.tool']);
    expect(view.toolsByName.has('b.tool')).toBe(false);
    expect(view.hooks['task.start'].map((h) => h.plugin)).toEqual(['a']);
    expect(calls).not.toContain('b.start');
  });

  it('structural parts (state keys, effect and action handlers) stay whatever the filter', async () => {
    const { app, kernel } = await setup();

    await kernel.parallel('task.start', undefined, { active: ['a'] });

    expect(kernelOf(app).registry.stateKey('b.pings')?.owner).toBe('b');
    expect(kernelOf(app).registry.actionHandler('b.act')?.plugin).toBe('b');
    expect(calls).toContain('b.ping');
    expect(kernel.sessionValues()['b.pings']).toBe(1);
  });
});
