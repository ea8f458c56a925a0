import 'reflect-metadata';
import { Hook, Plugin, StateKey, Tool, Trellis, TrellisError, type HookContext } from '../../../index.js';
import { KernelHarness, rejectionOf, sleep } from '../../support/kernel-harness.js';
import { kernelOf } from '../../../src/app/kernel-access.js';

class NoInput {}

describe('uninstalling a plugin', () => {
  @StateKey('notes.draft', { scope: 'session', merge: 'exclusive' })
  @StateKey('notes.archive', { scope: 'session', merge: 'exclusive', retainOnUninstall: true })
  @Plugin({ name: 'notes', version: '1.0.0' })
  class Notes {
    @Tool({
      name: 'notes.add',
      description: 'Adds a note. Use when the user asks to remember something.',
      input: NoInput,
    })
    add() {
      return 'added';
    }
    @Hook('task.start')
    write(_: unknown, ctx: HookContext) {
      ctx.set('notes.draft', `draft of ${ctx.sessionId}`);
      ctx.set('notes.archive', `archive of ${ctx.sessionId}`);
    }
    @Hook('planning.started')
    plan(value: string) {
      return `${value}+notes`;
    }
  }

  it('removes its tools and hooks', async () => {
    const app = Trellis.create();
    const kernel = new KernelHarness(app);
    await app.install(Notes);

    await app.uninstall('notes');

    expect(kernelOf(app).registry.tools.has('notes.add')).toBe(false);
    expect(kernelOf(app).registry.view().hooks['task.start']).toHaveLength(0);
    expect(await kernel.pipeline('planning.started', 'base')).toBe('base');
    expect(kernelOf(app).registry.byName.has('notes')).toBe(false);
  });

  it('clears its state keys from every live session, but keeps keys marked retainOnUninstall', async () => {
    const app = Trellis.create();
    const kernel = new KernelHarness(app);
    await app.install(Notes);
    await kernel.parallel('task.start', undefined, { session: 's1' });
    await kernel.parallel('task.start', undefined, { session: 's2' });
    expect(kernel.sessionValues('s1')).toMatchObject({
      'notes.draft': 'draft of s1',
      'notes.archive': 'archive of s1',
    });

    await app.uninstall('notes');

    for (const id of ['s1', 's2']) {
      const values = kernel.sessionValues(id);
      expect(values).not.toHaveProperty('notes.draft');
      expect(values['notes.archive']).toBe(`archive of ${id}`);
    }
    expect(kernelOf(app).registry.stateKey('notes.draft')).toBeUndefined();
  });

  it('is refused with DependentPlugin naming the plugin that depends on it', async () => {
    @Plugin({ name: 'base', version: '1.0.0' })
    class Base {}
    @Plugin({ name: 'addon', version: '1.0.0', dependsOn: ['base'] })
    class Addon {}
    const app = Trellis.create();
    await app.install(Base);
    await app.install(Addon);

    const error = await rejectionOf(app.uninstall('base'));

    expect(TrellisError.is(error, 'DependentPlugin')).toBe(true);
    expect((error as Error).message).toMatch(/'addon'/);
    expect((error as Error).message).toMatch(/Uninstall addon first/);
    expect(kernelOf(app).registry.byName.has('base')).toBe(true);

    await app.uninstall('addon');
    await app.uninstall('base');
    expect(kernelOf(app).registry.plugins).toHaveLength(0);
  });

  it('refuses an unknown plugin name with UnknownPlugin', async () => {
    const app = Trellis.create();

    expect(TrellisError.is(await rejectionOf(app.uninstall('ghost')), 'UnknownPlugin')).toBe(true);
  });
});

describe('reloading a plugin', () => {
  const version = (v: string, onInstall?: () => Promise<void>) => {
    @Plugin({ name: 'x', version: v })
    class X {
      @Tool({ name: 'x.tool', description: 'Says which version runs. Use in tests.', input: NoInput })
      tool() {
        return v;
      }
      async onInstall() {
        await onInstall?.();
      }
    }
    return X;
  };

  it('swaps the old version for the new one', async () => {
    const app = Trellis.create();
    await app.install(version('1'));

    await app.reload('x', version('2'));

    expect(kernelOf(app).registry.byName.get('x')?.definition.version).toBe('2');
    expect(
      await kernelOf(app)
        .registry.tools.get('x.tool')!
        .fn(undefined, undefined as never),
    ).toBe('2');
  });

  it('never shows both versions or neither while it runs', async () => {
    const app = Trellis.create();
    await app.install(version('1'));
    const seen: { tools: number; view: number; version: string | undefined }[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const registry = kernelOf(app).registry;
        seen.push({
          tools: [...registry.tools.keys()].filter((t) => t === 'x.tool').length,
          view: registry.view().tools.filter((t) => t.name === 'x.tool').length,
          version: registry.byName.get('x')?.definition.version,
        });
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();

    // The new version's onInstall waits until the sampler has looked several times mid-reload,
    // so the check does not depend on how fast a loaded machine runs a 20 ms sleep.
    await app.reload(
      'x',
      version('2', async () => {
        const from = seen.length;
        while (seen.length < from + 5) await sleep(1);
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    sampling = false;
    await sampler;

    expect(seen.length).toBeGreaterThan(3);
    expect(seen.every((s) => s.tools === 1 && s.view === 1)).toBe(true);
    expect(seen.some((s) => s.version === '1')).toBe(true);
    expect(seen[seen.length - 1]!.version).toBe('2');
  });

  it('leaves a snapshot taken before the reload (as a running turn keeps) on the old version', async () => {
    const app = Trellis.create();
    await app.install(version('1'));
    const runningTurn = kernelOf(app).registry;

    await app.reload('x', version('2'));

    expect(await runningTurn.tools.get('x.tool')!.fn(undefined, undefined as never)).toBe('1');
    expect(
      await runningTurn
        .view()
        .toolsByName.get('x.tool')!
        .fn(undefined, undefined as never),
    ).toBe('1');
    expect(
      await kernelOf(app)
        .registry.tools.get('x.tool')!
        .fn(undefined, undefined as never),
    ).toBe('2');
  });

  it('keeps the old version registered when the new one fails to install', async () => {
    const app = Trellis.create();
    await app.install(version('1'));

    const error = await rejectionOf(
      app.reload(
        'x',
        version('2', () => Promise.reject(new Error('boom'))),
      ),
    );

    expect(TrellisError.is(error)).toBe(true);
    expect(kernelOf(app).registry.byName.get('x')?.definition.version).toBe('1');
  });

  it("keeps the plugin's session state across versions", async () => {
    const make = (v: string) => {
      @StateKey('kept.value', { scope: 'session', merge: 'exclusive' })
      @Plugin({ name: 'kept', version: v })
      class Kept {
        @Hook('task.start')
        write(_: unknown, ctx: HookContext) {
          if (v === '1') ctx.set('kept.value', 'from v1');
        }
      }
      return Kept;
    };
    const app = Trellis.create();
    const kernel = new KernelHarness(app);
    await app.install(make('1'));
    await kernel.parallel('task.start', undefined);

    await app.reload('kept', make('2'));

    expect(kernel.sessionValues()['kept.value']).toBe('from v1');
  });

  it('refuses a class of another plugin name', async () => {
    @Plugin({ name: 'other', version: '1.0.0' })
    class Other {}
    const app = Trellis.create();
    await app.install(version('1'));

    const error = await rejectionOf(app.reload('x', Other));

    expect(TrellisError.is(error, 'InvalidPlugin')).toBe(true);
    expect(kernelOf(app).registry.byName.get('x')?.definition.version).toBe('1');
  });
});
