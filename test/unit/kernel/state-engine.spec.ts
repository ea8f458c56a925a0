import 'reflect-metadata';
import {
  Hook,
  OnAction,
  OnEffect,
  Plugin,
  Requires,
  StateKey,
  Trellis,
  TrellisError,
  type HookContext,
  type PluginContext,
} from '../../../index.js';
import { BuiltInActions, KERNEL_KEYS } from '../../../plugin.js';
import { ContextScope } from '../../../src/engine/state/context-scope.js';
import type { StateCommand } from '../../../plugin.js';
import { KernelHarness, recordEvents, rejectionOf, turnLevel } from '../../support/kernel-harness.js';
import { kernelOf } from '../../../src/app/kernel-access.js';

async function appWith(...plugins: (new () => object)[]) {
  const app = Trellis.create();
  for (const plugin of plugins) await app.install(plugin);
  return { app, kernel: new KernelHarness(app) };
}

const write = (key: string, value: unknown, baseRevision: number): StateCommand => ({
  baseRevision,
  writes: [{ key, level: 'session', exclusive: true, value }],
  actions: [],
  effects: [],
});

describe('the state engine', () => {
  describe('commits', () => {
    @StateKey('rev.a', { scope: 'session', merge: 'exclusive' })
    @StateKey('rev.b', { scope: 'session', merge: 'exclusive' })
    @Plugin({ name: 'rev', version: '1.0.0' })
    class Rev {
      @Hook('planning.started', { priority: 1 })
      one(_: unknown, ctx: HookContext) {
        ctx.set('rev.a', 1);
        ctx.set('rev.b', 1);
      }
      @Hook('planning.started', { priority: 2 })
      two(_: unknown, ctx: HookContext) {
        ctx.set('rev.a', 2);
      }
      @Hook('planning.started', { priority: 3 })
      reader() {}
    }

    it("commits each handler's command atomically, the revision going up by one per commit", async () => {
      const { app, kernel } = await appWith(Rev);
      const state = kernelOf(app).sessionState('s1');

      await kernel.pipeline('planning.started', 'x');

      expect(state.revision).toBe(2);
      expect(kernel.sessionValues()).toEqual({ 'rev.a': 2, 'rev.b': 1 });
    });

    it('rejects a command built on a stale revision of an exclusive key with StaleState, changing nothing', async () => {
      const { app } = await appWith(Rev);
      const state = kernelOf(app).sessionState('s1');
      const scope = new ContextScope(state, undefined, undefined);
      state.commit(write('rev.a', 'first', 0), scope, kernelOf(app).registry);
      expect(state.revision).toBe(1);

      const error = (() => {
        try {
          state.commit(write('rev.a', 'built on revision 0', 0), scope, kernelOf(app).registry);
        } catch (e) {
          return e;
        }
      })();

      expect(TrellisError.is(error, 'StaleState')).toBe(true);
      expect((error as TrellisError).details).toMatchObject({ key: 'rev.a', baseRevision: 0, revision: 1 });
      expect(state.revision).toBe(1);
      expect(state.session.values['rev.a']).toBe('first');
      state.commit(write('rev.a', 'rebuilt', 1), scope, kernelOf(app).registry);
      expect(state.session.values['rev.a']).toBe('rebuilt');
    });
  });

  describe('parallel points: conflicts and re-runs', () => {
    it('two hooks that each add 1 to the same exclusive counter starting at 100 end at 102, and the re-run hook saw 101', async () => {
      const seen: Record<string, number[]> = { first: [], second: [] };
      @StateKey('counter.value', { scope: 'session', merge: 'exclusive', default: 100 })
      @Plugin({ name: 'counter', version: '1.0.0' })
      class Counter {
        @Hook('task.start', { priority: 1 })
        first(_: unknown, ctx: HookContext) {
          const value = ctx.get<number>('counter.value')!;
          seen['first']!.push(value);
          ctx.set('counter.value', value + 1);
        }
        @Hook('task.start', { priority: 2 })
        second(_: unknown, ctx: HookContext) {
          const value = ctx.get<number>('counter.value')!;
          seen['second']!.push(value);
          ctx.set('counter.value', value + 1);
        }
      }
      const { app, kernel } = await appWith(Counter);

      await kernel.parallel('task.start', undefined, { turn: turnLevel() });

      expect(kernel.sessionValues()['counter.value']).toBe(102);
      expect(seen).toEqual({ first: [100], second: [100, 101] });
      expect(kernelOf(app).sessionState('s1').revision).toBe(2);
    });

    it('commutative keys written by two parallel hooks never conflict: no re-run, both updates land', async () => {
      const calls = { a: 0, b: 0 };
      @StateKey('tally.items', { scope: 'session', merge: 'commutative', default: [] })
      @Plugin({ name: 'tally', version: '1.0.0' })
      class Tally {
        @Hook('task.start', { priority: 1 })
        a(_: unknown, ctx: HookContext) {
          calls.a++;
          ctx.update<string[]>('tally.items', (list) => [...(list ?? []), 'a']);
        }
        @Hook('task.start', { priority: 2 })
        b(_: unknown, ctx: HookContext) {
          calls.b++;
          ctx.update<string[]>('tally.items', (list) => [...(list ?? []), 'b']);
        }
      }
      const { app, kernel } = await appWith(Tally);

      await kernel.parallel('task.start', undefined);

      expect(calls).toEqual({ a: 1, b: 1 });
      expect(kernel.sessionValues()['tally.items']).toEqual(['a', 'b']);
      expect(kernelOf(app).sessionState('s1').revision).toBe(1);
    });
  });

  describe('actions (EXECUTE)', () => {
    it("run after the point's hooks, each on a fresh snapshot, and may schedule more", async () => {
      const actionSaw: number[] = [];
      const hookSaw: number[] = [];
      @StateKey('steps.count', { scope: 'session', merge: 'exclusive', default: 0 })
      @Plugin({ name: 'steps', version: '1.0.0' })
      class Steps {
        @Hook('planning.started', { priority: 1 })
        kickOff(_: unknown, ctx: HookContext) {
          ctx.schedule('steps.next', { upTo: 3 });
        }
        @Hook('planning.started', { priority: 2 })
        later(_: unknown, ctx: HookContext) {
          hookSaw.push(ctx.get<number>('steps.count')!);
        }
        @OnAction('steps.next')
        next(payload: { upTo: number }, ctx: PluginContext) {
          const count = ctx.get<number>('steps.count')!;
          actionSaw.push(count);
          ctx.set('steps.count', count + 1);
          if (count + 1 < payload.upTo) ctx.schedule('steps.next', payload);
        }
      }
      const { kernel } = await appWith(Steps);

      await kernel.pipeline('planning.started', 'x');

      expect(hookSaw).toEqual([0]);
      expect(actionSaw).toEqual([0, 1, 2]);
      expect(kernel.sessionValues()['steps.count']).toBe(3);
    });

    it('an action that reschedules itself forever fails with PhaseLoopExceeded naming the point', async () => {
      let runs = 0;
      @Plugin({ name: 'loop', version: '1.0.0' })
      class Loop {
        @Hook('tool.after_call')
        start(_: unknown, ctx: HookContext) {
          ctx.schedule('loop.again');
        }
        @OnAction('loop.again')
        again(_: unknown, ctx: PluginContext) {
          runs++;
          ctx.schedule('loop.again');
        }
      }
      const { kernel } = await appWith(Loop);

      const error = await rejectionOf(kernel.pipeline('tool.after_call', {}));

      expect(TrellisError.is(error, 'PhaseLoopExceeded')).toBe(true);
      expect((error as TrellisError).details['point']).toBe('tool.after_call');
      expect((error as Error).message).toMatch(/'tool\.after_call'/);
      expect(runs).toBe(16);
    });
  });

  describe('effects', () => {
    const log: unknown[] = [];

    @StateKey('shop.total', { scope: 'session', merge: 'exclusive' })
    @Plugin({ name: 'shop', version: '1.0.0' })
    class Shop {
      @Hook('task.start')
      buy(_: unknown, ctx: HookContext) {
        log.push('hook');
        ctx.set('shop.total', 10);
        ctx.emit('shop.updated', { by: 10 });
      }
    }

    @Plugin({ name: 'audit', version: '1.0.0' })
    @Requires('shop.total')
    class Audit {
      static app: Trellis;
      @OnEffect('shop.updated')
      failing() {
        log.push('failing');
        throw new Error('audit store down');
      }
      @OnEffect('shop.updated')
      record(payload: { by: number }, ctx: PluginContext & { deps: Record<string, unknown> }) {
        log.push({
          payload,
          total: ctx.get('shop.total'),
          dep: ctx.deps['shop.total'],
          revision: kernelOf(Audit.app).sessionState(ctx.sessionId).revision,
        });
      }
    }

    it('are dispatched after the commit to @OnEffect handlers, which see the committed state', async () => {
      log.length = 0;
      const { app, kernel } = await appWith(Shop, Audit);
      Audit.app = app;

      await kernel.parallel('task.start', undefined);

      expect(log).toEqual(['hook', 'failing', { payload: { by: 10 }, total: 10, dep: 10, revision: 1 }]);
    });

    it('a failing handler is reported as an error event and the next handler still runs', async () => {
      log.length = 0;
      const { app, kernel } = await appWith(Shop, Audit);
      Audit.app = app;
      const events = recordEvents(app);

      await kernel.parallel('task.start', undefined);

      expect(events.of('error')).toEqual([
        expect.objectContaining({
          code: 'EffectFailed',
          plugin: 'audit',
          sessionId: 's1',
          message: expect.stringMatching(/audit store down/),
        }),
      ]);
      expect(events.of('effect.dispatched')).toEqual([
        { type: 'effect.dispatched', sessionId: 's1', effect: 'shop.updated', plugin: 'audit' },
      ]);
      expect(log).toHaveLength(3);
      expect(kernel.sessionValues()['shop.total']).toBe(10);
    });

    it('an effect nobody handles is rejected at submit: nothing committed, revision unchanged', async () => {
      @StateKey('lonely.x', { scope: 'session', merge: 'exclusive' })
      @Plugin({ name: 'lonely', version: '1.0.0' })
      class Lonely {
        @Hook('planning.started')
        shout(_: unknown, ctx: HookContext) {
          ctx.set('lonely.x', 1);
          ctx.emit('nobody.listens');
        }
      }
      const { app, kernel } = await appWith(Lonely);

      const error = await rejectionOf(kernel.pipeline('planning.started', 'x'));

      expect(TrellisError.is(error, 'UnknownEffect')).toBe(true);
      expect((error as Error).message).toMatch(/'nobody\.listens'/);
      expect(kernelOf(app).sessionState('s1').revision).toBe(0);
      expect(kernel.sessionValues()).toEqual({});
    });

    it('an action nobody handles is rejected at submit: nothing committed, revision unchanged', async () => {
      @StateKey('lonely.x', { scope: 'session', merge: 'exclusive' })
      @Plugin({ name: 'lonely', version: '1.0.0' })
      class Lonely {
        @Hook('planning.started')
        ask(_: unknown, ctx: HookContext) {
          ctx.set('lonely.x', 1);
          ctx.schedule('NoSuchAction');
        }
      }
      const { app, kernel } = await appWith(Lonely);

      const error = await rejectionOf(kernel.pipeline('planning.started', 'x'));

      expect(TrellisError.is(error, 'UnknownAction')).toBe(true);
      expect((error as Error).message).toMatch(/'NoSuchAction'/);
      expect(kernelOf(app).sessionState('s1').revision).toBe(0);
      expect(kernel.sessionValues()).toEqual({});
    });
  });

  describe('built-in actions', () => {
    const scheduler = (name: string, priority: number, action: string, payload: unknown) => {
      @Plugin({ name, version: '1.0.0' })
      class S {
        @Hook('planning.started', { priority })
        plan(_: unknown, ctx: HookContext) {
          ctx.schedule(action, payload);
        }
      }
      return S;
    };

    it('SetInferenceOverride merges field by field, the last writer winning, into trellis.inference.turn', async () => {
      const { kernel } = await appWith(
        scheduler('second', 20, BuiltInActions.SetInferenceOverride, { temperature: 0.7, maxTokens: 100 }),
        scheduler('first', 10, BuiltInActions.SetInferenceOverride, { model: 'small', temperature: 0.2 }),
      );
      const turn = turnLevel();

      await kernel.pipeline('planning.started', 'x', { turn });

      expect(turn.values[KERNEL_KEYS.inferenceTurn]).toEqual({ model: 'small', temperature: 0.7, maxTokens: 100 });
      expect(turn.values[KERNEL_KEYS.inferenceRound]).toBeUndefined();
    });

    it('SetInferenceOverride with scope round writes trellis.inference.round; unknown fields are refused', async () => {
      const { kernel } = await appWith(
        scheduler('round', 10, BuiltInActions.SetInferenceOverride, { scope: 'round', topP: 0.9 }),
      );
      const turn = turnLevel();
      await kernel.pipeline('planning.started', 'x', { turn });
      expect(turn.values[KERNEL_KEYS.inferenceRound]).toEqual({ topP: 0.9 });

      const { kernel: bad } = await appWith(
        scheduler('bad', 10, BuiltInActions.SetInferenceOverride, { temprature: 1 }),
      );
      const error = await rejectionOf(bad.pipeline('planning.started', 'x', { turn: turnLevel() }));
      expect((error as Error).message).toMatch(/temprature/);
    });

    it('ExcludeTool and IncludeOnlyTools union the names of every writer into their keys', async () => {
      const { kernel } = await appWith(
        scheduler('ex1', 10, BuiltInActions.ExcludeTool, 'db.drop'),
        scheduler('ex2', 20, BuiltInActions.ExcludeTool, ['db.write', 'db.drop']),
        scheduler('in1', 30, BuiltInActions.IncludeOnlyTools, ['db.search']),
        scheduler('in2', 40, BuiltInActions.IncludeOnlyTools, { tools: 'db.count' }),
      );
      const turn = turnLevel();

      await kernel.pipeline('planning.started', 'x', { turn });

      expect(turn.values[KERNEL_KEYS.excludeTools]).toEqual(['db.drop', 'db.write']);
      expect(turn.values[KERNEL_KEYS.includeTools]).toEqual(['db.search', 'db.count']);
    });

    it('AddContextMessage appends messages for the turn in order', async () => {
      const { kernel } = await appWith(
        scheduler('m2', 20, BuiltInActions.AddContextMessage, { role: 'user', content: 'second' }),
        scheduler('m1', 10, BuiltInActions.AddContextMessage, 'first'),
      );
      const turn = turnLevel();

      await kernel.pipeline('planning.started', 'x', { turn });

      expect(turn.values[KERNEL_KEYS.contextMessages]).toEqual([
        { role: 'system', content: 'first' },
        { role: 'user', content: 'second' },
      ]);
    });
  });
});
