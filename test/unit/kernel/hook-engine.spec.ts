import 'reflect-metadata';
import {
  block,
  cancel,
  Hook,
  Plugin,
  setResult,
  StateKey,
  suspend,
  Trellis,
  TrellisError,
  type HookContext,
  type HookPoint,
} from '../../../index.js';
import { HOOK_POINTS } from '../../../plugin.js';
import { KernelHarness, recordEvents, rejectionOf, sleep, turnLevel, within } from '../../support/kernel-harness.js';
import { kernelOf } from '../../../src/app/kernel-access.js';

/** Builds a plugin with one hook at `point`. */
function hookPlugin(
  name: string,
  point: HookPoint,
  handler: (value: any, ctx: HookContext) => unknown,
  priority?: number,
) {
  @Plugin({ name, version: '1.0.0' })
  class P {
    @Hook(point, { priority })
    handle(value: unknown, ctx: HookContext) {
      return handler(value, ctx);
    }
  }
  return P;
}

async function appWith(...plugins: (new () => object)[]) {
  const app = Trellis.create();
  for (const plugin of plugins) await app.install(plugin);
  return { app, kernel: new KernelHarness(app) };
}

describe('the hook engine', () => {
  describe('hook points', () => {
    it('has every hook point with its mode, and the two delegation points of issue 14', () => {
      const modes = Object.fromEntries(Object.entries(HOOK_POINTS).map(([point, spec]) => [point, spec.mode]));

      expect(modes).toEqual({
        'app.startup': 'sequential',
        'app.shutdown': 'sequential',
        'app.heartbeat': 'parallel',
        'session.start': 'parallel',
        'session.end': 'parallel',
        'message.received': 'pipeline',
        'task.start': 'parallel',
        'task.end': 'parallel',
        'planning.started': 'pipeline',
        'memory.read': 'collect',
        'tool.register': 'collect',
        'tool.select': 'pipeline',
        'llm.before': 'pipeline',
        'llm.after': 'pipeline',
        'tool.gate': 'gate',
        'tool.before_call': 'pipeline',
        'tool.after_call': 'pipeline',
        'tool.error': 'pipeline',
        'memory.write': 'pipeline',
        'message.sending': 'pipeline',
        'agent.delegating': 'gate',
        'agent.delegated': 'parallel',
      });
    });

    it('refuses @Hook on an unknown point at install', async () => {
      const Bad = hookPlugin('bad', 'tool.befor_call' as HookPoint, () => undefined);

      const error = await rejectionOf(appWith(Bad));

      expect(TrellisError.is(error, 'InvalidPlugin')).toBe(true);
      expect((error as Error).message).toMatch(/tool\.befor_call/);
    });
  });

  describe('pipeline', () => {
    it('runs handlers by ascending priority, ties in install order, each getting the previous value', async () => {
      const { kernel } = await appWith(
        hookPlugin('late', 'planning.started', (v: string) => `${v}>late`, 90),
        hookPlugin('tie1', 'planning.started', (v: string) => `${v}>tie1`, 50),
        hookPlugin('early', 'planning.started', (v: string) => `${v}>early`, 10),
        hookPlugin('tie2', 'planning.started', (v: string) => `${v}>tie2`, 50),
      );

      expect(await kernel.pipeline('planning.started', 'start')).toBe('start>early>tie1>tie2>late');
    });

    it('a returned value replaces the current one; returning nothing keeps it', async () => {
      const inputs: unknown[] = [];
      const { kernel } = await appWith(
        hookPlugin('replace', 'llm.after', () => ({ text: 'replaced' }), 1),
        hookPlugin('keep', 'llm.after', (v) => void inputs.push(v), 2),
        hookPlugin('last', 'llm.after', (v) => void inputs.push(v), 3),
      );

      const out = await kernel.pipeline('llm.after', { text: 'original' });

      expect(out).toEqual({ text: 'replaced' });
      expect(inputs).toEqual([{ text: 'replaced' }, { text: 'replaced' }]);
    });

    it.each([
      ['message.received', () => block('spam')],
      ['tool.before_call', () => block('too many rows')],
      ['message.sending', () => cancel('contains secrets')],
    ] as const)('%s may stop the chain with its control result', async (point, result) => {
      let laterRan = false;
      const { kernel } = await appWith(
        hookPlugin('stopper', point, result, 1),
        hookPlugin('later', point, () => void (laterRan = true), 2),
      );

      const out = await kernel.pipeline(point, { any: 1 }, { turn: turnLevel() });

      expect(out).toEqual(result());
      expect(laterRan).toBe(false);
    });

    it.each([
      ['planning.started', () => block('no')],
      ['tool.after_call', () => block('no')],
      ['message.received', () => cancel('no')],
      ['tool.before_call', () => suspend('ask a human')],
      ['message.sending', () => block('no')],
    ] as const)('%s refuses a control result it does not allow with HookResultNotAllowed', async (point, result) => {
      const { kernel } = await appWith(hookPlugin('wrong', point, result));

      const error = await rejectionOf(kernel.pipeline(point, {}, { turn: turnLevel() }));

      expect(TrellisError.is(error, 'HookResultNotAllowed')).toBe(true);
      expect((error as TrellisError).details).toMatchObject({ plugin: 'wrong', point });
    });

    it('a throw aborts the chain with a typed error naming the plugin and the point', async () => {
      let laterRan = false;
      const { kernel } = await appWith(
        hookPlugin(
          'faulty',
          'llm.before',
          () => {
            throw new Error('quota exhausted');
          },
          1,
        ),
        hookPlugin('later', 'llm.before', () => void (laterRan = true), 2),
      );

      const error = await rejectionOf(kernel.pipeline('llm.before', {}));

      expect(TrellisError.is(error, 'HookFailed')).toBe(true);
      expect((error as TrellisError).details).toMatchObject({ plugin: 'faulty', point: 'llm.before' });
      expect((error as Error).message).toMatch(/faulty\.handle at 'llm\.before': quota exhausted/);
      expect((error as Error & { cause?: unknown }).cause).toBeInstanceOf(Error);
      expect(laterRan).toBe(false);
    });
  });

  describe('parallel', () => {
    @StateKey('par.a', { scope: 'session', merge: 'exclusive' })
    @StateKey('par.b', { scope: 'session', merge: 'exclusive' })
    @Plugin({ name: 'par', version: '1.0.0' })
    class Par {
      static seen: Record<string, unknown> = {};
      static release: () => void = () => undefined;
      @Hook('task.start', { priority: 1 })
      async first(_: unknown, ctx: HookContext) {
        ctx.set('par.a', 'A');
        // Waits for the second handler: only finishes if both run concurrently.
        await new Promise<void>((resolve) => (Par.release = resolve));
        Par.seen['first saw b'] = ctx.get('par.b');
      }
      @Hook('task.start', { priority: 2 })
      async second(_: unknown, ctx: HookContext) {
        await sleep(1);
        Par.seen['second saw a'] = ctx.get('par.a');
        ctx.set('par.b', 'B');
        Par.release();
      }
    }

    it('runs handlers concurrently on one snapshot, then commits all their writes', async () => {
      const { app, kernel } = await appWith(Par);
      Par.seen = {};

      await within(2000, kernel.parallel('task.start', undefined), 'handlers did not run concurrently');

      expect(Par.seen).toEqual({ 'first saw b': undefined, 'second saw a': undefined });
      expect(kernel.sessionValues()).toMatchObject({ 'par.a': 'A', 'par.b': 'B' });
      expect(kernelOf(app).sessionState('s1').revision).toBe(1);
    });

    it('a throwing handler fails the point with its plugin and point named, and nothing is committed', async () => {
      @StateKey('writer.x', { scope: 'session', merge: 'exclusive' })
      @Plugin({ name: 'writer', version: '1.0.0' })
      class Writer {
        @Hook('session.start')
        write(_: unknown, ctx: HookContext) {
          ctx.set('writer.x', 1);
        }
      }
      const { app, kernel } = await appWith(
        Writer,
        hookPlugin('boom', 'session.start', () => {
          throw new Error('bad');
        }),
      );

      const error = await rejectionOf(kernel.parallel('session.start', undefined));

      expect((error as TrellisError).details).toMatchObject({ plugin: 'boom', point: 'session.start' });
      expect(kernelOf(app).sessionState('s1').revision).toBe(0);
      expect(kernel.sessionValues()).not.toHaveProperty('writer.x');
    });
  });

  describe('collect', () => {
    it('merges contributions (items or lists) in priority order, not in finishing order', async () => {
      const { kernel } = await appWith(
        hookPlugin('third', 'memory.read', () => ['t1', 't2'], 30),
        hookPlugin(
          'first',
          'memory.read',
          async () => {
            await sleep(20);
            return 'f';
          },
          10,
        ),
        hookPlugin('nothing', 'memory.read', () => undefined, 15),
        hookPlugin(
          'second',
          'memory.read',
          async () => {
            await sleep(5);
            return ['s'];
          },
          20,
        ),
      );

      expect(await kernel.collect('memory.read', undefined)).toEqual(['f', 's', 't1', 't2']);
    });

    it('returns an empty list when no handler is registered', async () => {
      const { kernel } = await appWith();

      expect(await kernel.collect('tool.register', undefined)).toEqual([]);
    });
  });

  describe('gate', () => {
    const decisions = {
      block: () => block('policy says no'),
      suspend: () => suspend({ message: 'approve the refund?' }),
      setResult: () => setResult({ cached: true }),
      none: () => undefined,
    };
    type Kind = keyof typeof decisions;
    const gates = (...kinds: Kind[]) =>
      kinds.map((kind, i) => hookPlugin(`g${i}`, 'tool.gate', decisions[kind], (i + 1) * 10));
    const orders: Kind[][] = [
      ['block', 'suspend', 'setResult'],
      ['setResult', 'suspend', 'block'],
      ['suspend', 'block', 'setResult'],
      ['setResult', 'block', 'suspend'],
    ];

    it.each(orders)('Block wins over Suspend and SetResult in any order (%s, %s, %s)', async (...kinds) => {
      const { kernel } = await appWith(...gates(...kinds));

      const decision = await kernel.gate({ tool: 'x' });

      expect(decision).toEqual({ kind: 'block', reason: 'policy says no', by: `g${kinds.indexOf('block')}.handle` });
    });

    it.each([[['setResult', 'suspend']], [['suspend', 'setResult']]] as Kind[][][])(
      'Suspend wins over SetResult in any order (%j)',
      async (kinds) => {
        const { kernel } = await appWith(...gates(...kinds));

        const decision = await kernel.gate({ tool: 'x' });

        expect(decision).toMatchObject({ kind: 'suspend', ticket: { message: 'approve the refund?' } });
      },
    );

    it('SetResult alone answers the call', async () => {
      const { kernel } = await appWith(...gates('none', 'setResult'));

      expect(await kernel.gate({ tool: 'x' })).toEqual({ kind: 'setResult', value: { cached: true }, by: 'g1.handle' });
    });

    it('no decision allows the call', async () => {
      const { kernel } = await appWith(...gates('none', 'none'));
      const { kernel: empty } = await appWith();

      expect(await kernel.gate({ tool: 'x' })).toEqual({ kind: 'allow' });
      expect(await empty.gate({ tool: 'x' })).toEqual({ kind: 'allow' });
    });

    it('a tie keeps the first decision by priority and reports a GateConflict error event', async () => {
      const { app, kernel } = await appWith(
        hookPlugin('second', 'tool.gate', () => block('second reason'), 20),
        hookPlugin('first', 'tool.gate', () => block('first reason'), 10),
      );
      const events = recordEvents(app);

      const decision = await kernel.gate({ tool: 'x' });

      expect(decision).toEqual({ kind: 'block', reason: 'first reason', by: 'first.handle' });
      expect(events.of('error')).toEqual([
        expect.objectContaining({ code: 'GateConflict', point: 'tool.gate', plugin: 'second' }),
      ]);
    });

    it('gate handlers cannot write state, emit effects or schedule actions', async () => {
      const refused: unknown[] = [];
      @StateKey('pure.count', { scope: 'session', merge: 'exclusive' })
      @Plugin({ name: 'pure', version: '1.0.0' })
      class Pure {
        @Hook('tool.gate')
        check(_: unknown, ctx: HookContext) {
          for (const attempt of [
            () => ctx.set('pure.count', 1),
            () => ctx.emit('x'),
            () => ctx.schedule('AddContextMessage', 'hi'),
          ]) {
            try {
              attempt();
            } catch (error) {
              refused.push(error);
            }
          }
        }
      }
      const { app, kernel } = await appWith(Pure);

      expect(await kernel.gate({ tool: 'x' })).toEqual({ kind: 'allow' });
      expect(refused).toHaveLength(3);
      expect(refused.every((e) => TrellisError.is(e, 'ContextAccess'))).toBe(true);
      expect(kernelOf(app).sessionState('s1').revision).toBe(0);
    });

    it('a gate returning a control it may not (cancel) is refused', async () => {
      const { kernel } = await appWith(hookPlugin('odd', 'tool.gate', () => cancel('why')));

      expect(TrellisError.is(await rejectionOf(kernel.gate({ tool: 'x' })), 'HookResultNotAllowed')).toBe(true);
    });
  });
});
