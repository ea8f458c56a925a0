import 'reflect-metadata';
import { Hook, Plugin, Requires, StateKey, Trellis, TrellisError, type HookContext } from '../../../index.js';
import { executionLevel, KernelHarness, rejectionOf, turnLevel } from '../../support/kernel-harness.js';
import { kernelOf } from '../../../src/app/kernel-access.js';

describe('the context pool', () => {
  describe('resolution across session, turn and execution', () => {
    const seen: unknown[] = [];
    @Plugin({ name: 'reader', version: '1.0.0' })
    class Reader {
      @Hook('tool.after_call')
      @Requires('app.locale')
      read(_: unknown, ctx: HookContext) {
        seen.push(ctx.deps['app.locale'], ctx.get('app.locale'));
      }
    }

    it('the nearest level wins: execution over turn over session', async () => {
      const app = Trellis.create();
      const kernel = new KernelHarness(app);
      await app.install(Reader);
      kernelOf(app).sessionState('s1').seed({ 'app.locale': 'en' });
      const turn = turnLevel({ 'app.locale': 'fr' });

      seen.length = 0;
      await kernel.pipeline('tool.after_call', {}, { turn, execution: executionLevel({ 'app.locale': 'de' }) });
      expect(seen).toEqual(['de', 'de']);

      seen.length = 0;
      await kernel.pipeline('tool.after_call', {}, { turn, execution: executionLevel() });
      expect(seen).toEqual(['fr', 'fr']);

      seen.length = 0;
      await kernel.pipeline('tool.after_call', {}, { turn: turnLevel(), execution: executionLevel() });
      expect(seen).toEqual(['en', 'en']);
    });

    it('a missing required key stops the hook with MissingContext naming the key and the levels searched', async () => {
      const app = Trellis.create();
      const kernel = new KernelHarness(app);
      await app.install(Reader);
      seen.length = 0;

      const error = await rejectionOf(
        kernel.pipeline('tool.after_call', {}, { turn: turnLevel(), execution: executionLevel() }),
      );

      expect(TrellisError.is(error, 'MissingContext')).toBe(true);
      expect((error as TrellisError).details).toMatchObject({
        key: 'app.locale',
        levels: ['execution', 'turn', 'session'],
        plugin: 'reader',
        point: 'tool.after_call',
      });
      expect((error as Error).message).toMatch(/'app\.locale'/);
      expect((error as Error).message).toMatch(/execution, turn, session/);
      expect(seen).toEqual([]);
    });

    it('names only the levels that exist where the hook ran', async () => {
      const app = Trellis.create();
      const kernel = new KernelHarness(app);
      await app.install(Reader);

      const error = await rejectionOf(kernel.pipeline('tool.after_call', {}));

      expect((error as TrellisError).details['levels']).toEqual(['session']);
    });

    it('an optional key resolves to undefined and the hook runs', async () => {
      const got: unknown[] = [];
      @Plugin({ name: 'opt', version: '1.0.0' })
      class Opt {
        @Hook('task.start')
        @Requires({ key: 'app.tenant', optional: true })
        start(_: unknown, ctx: HookContext) {
          got.push('app.tenant' in ctx.deps, ctx.deps['app.tenant'], ctx.get('app.tenant'));
        }
      }
      const app = Trellis.create();
      await app.install(Opt);

      await new KernelHarness(app).parallel('task.start', undefined, { turn: turnLevel() });

      expect(got).toEqual([true, undefined, undefined]);
    });

    it('a declared key with a state-key default resolves to the default when unset', async () => {
      const got: unknown[] = [];
      @StateKey('limits.max', { scope: 'session', merge: 'exclusive', default: 3 })
      @Plugin({ name: 'limits', version: '1.0.0' })
      class Limits {}
      @Plugin({ name: 'user', version: '1.0.0' })
      @Requires('limits.max')
      class User {
        @Hook('task.start')
        start(_: unknown, ctx: HookContext) {
          got.push(ctx.deps['limits.max']);
        }
      }
      const app = Trellis.create();
      await app.install(Limits);
      await app.install(User);

      await new KernelHarness(app).parallel('task.start', undefined);

      expect(got).toEqual([3]);
    });
  });

  describe('cropped access', () => {
    const results: Record<string, unknown> = {};
    @StateKey('owner.secret', { scope: 'session', merge: 'exclusive' })
    @StateKey('owner.public', { scope: 'session', merge: 'exclusive' })
    @Plugin({ name: 'owner', version: '1.0.0' })
    class Owner {
      @Hook('task.start')
      seed(_: unknown, ctx: HookContext) {
        ctx.set('owner.secret', 's3cr3t');
        ctx.set('owner.public', 'hello');
      }
    }

    const attempt = (name: string, fn: () => unknown) => {
      try {
        results[name] = { ok: fn() };
      } catch (error) {
        results[name] = { error };
      }
    };

    @StateKey('guest.own', { scope: 'session', merge: 'exclusive', default: 'mine' })
    @Plugin({ name: 'guest', version: '1.0.0' })
    class Guest {
      @Hook('planning.started')
      @Requires('owner.public')
      probe(_: unknown, ctx: HookContext) {
        attempt('own', () => ctx.get('guest.own'));
        attempt('declared', () => ctx.get('owner.public'));
        attempt('kernel', () => ctx.get('trellis.session_id'));
        attempt('undeclared', () => ctx.get('owner.secret'));
        attempt('appUndeclared', () => ctx.get('app.user_id'));
        attempt('writeOther', () => ctx.set('owner.public', 'defaced'));
        attempt('writeUndeclaredOwn', () => ctx.set('guest.nope', 1));
        attempt('writeKernel', () => ctx.set('trellis.user', 'mallory'));
      }
    }

    const run = async () => {
      const app = Trellis.create();
      const kernel = new KernelHarness(app);
      await app.install(Owner);
      await app.install(Guest);
      await kernel.parallel('task.start', undefined);
      await kernel.pipeline('planning.started', 'p');
      return kernel;
    };
    const errorOf = (name: string) => (results[name] as { error?: unknown }).error;

    it('a member reads its own keys, its declared keys and trellis.*', async () => {
      await run();

      expect(results['own']).toEqual({ ok: 'mine' });
      expect(results['declared']).toEqual({ ok: 'hello' });
      expect(results['kernel']).toEqual({ ok: undefined });
    });

    it('reading an undeclared key of another owner is a ContextAccess error', async () => {
      await run();

      expect(TrellisError.is(errorOf('undeclared'), 'ContextAccess')).toBe(true);
      expect((errorOf('undeclared') as Error).message).toMatch(/@Requires\('owner\.secret'\)/);
      expect(TrellisError.is(errorOf('appUndeclared'), 'ContextAccess')).toBe(true);
    });

    it("writing another plugin's key (or a kernel key) is a ContextAccess error and changes nothing", async () => {
      const kernel = await run();

      expect(TrellisError.is(errorOf('writeOther'), 'ContextAccess')).toBe(true);
      expect(TrellisError.is(errorOf('writeKernel'), 'ContextAccess')).toBe(true);
      expect(kernel.sessionValues()['owner.public']).toBe('hello');
      expect(kernel.sessionValues()).not.toHaveProperty('trellis.user');
    });

    it('writing an own key that was never declared is an UnknownStateKey error', async () => {
      await run();

      expect(TrellisError.is(errorOf('writeUndeclaredOwn'), 'UnknownStateKey')).toBe(true);
      expect((errorOf('writeUndeclaredOwn') as Error).message).toMatch(/@StateKey\('guest\.nope'/);
    });

    it("a plugin whose name prefixes another plugin's is refused, so it cannot write that plugin's keys", async () => {
      let refused: unknown;
      @StateKey('team.sub.score', { scope: 'session', merge: 'exclusive' })
      @Plugin({ name: 'team.sub', version: '1.0.0' })
      class TeamSub {}
      @Plugin({ name: 'team', version: '1.0.0' })
      class Team {
        @Hook('task.start')
        start(_: unknown, ctx: HookContext) {
          try {
            ctx.set('team.sub.score', 999);
          } catch (error) {
            refused = error;
          }
        }
      }
      const app = Trellis.create();
      await app.install(TeamSub);
      // A name whose namespace holds another plugin's is refused at install (the seal, issue 34).
      const install = await app.install(Team).catch((error: unknown) => error);
      expect(TrellisError.is(install, 'DuplicateRegistration')).toBe(true);

      await new KernelHarness(app).parallel('task.start', undefined);

      expect(refused).toBeUndefined();
      expect(kernelOf(app).sessionState('s1').session.values).not.toHaveProperty('team.sub.score');
    });
  });

  describe('execution values', () => {
    const seen: unknown[] = [];
    @StateKey('calc.scratch', { scope: 'execution', merge: 'exclusive' })
    @StateKey('calc.kept', { scope: 'execution', merge: 'exclusive' })
    @Plugin({ name: 'calc', version: '1.0.0' })
    class Calc {
      @Hook('tool.before_call')
      write(call: { n: number }, ctx: HookContext & { promote(key: string): void }) {
        ctx.set('calc.scratch', call.n);
        ctx.set('calc.kept', call.n * 10);
        ctx.promote('calc.kept');
      }
      @Hook('tool.after_call')
      read(_: unknown, ctx: HookContext) {
        seen.push({ scratch: ctx.get('calc.scratch'), kept: ctx.get('calc.kept') });
      }
    }

    it('are visible within the execution and vanish with a new execution level unless promoted to the turn', async () => {
      const app = Trellis.create();
      const kernel = new KernelHarness(app);
      await app.install(Calc);
      const turn = turnLevel();
      const first = executionLevel();
      seen.length = 0;

      await kernel.pipeline('tool.before_call', { n: 4 }, { turn, execution: first });
      await kernel.pipeline('tool.after_call', {}, { turn, execution: first });
      await kernel.pipeline('tool.after_call', {}, { turn, execution: executionLevel() });

      expect(seen).toEqual([
        { scratch: 4, kept: 40 },
        { scratch: undefined, kept: 40 },
      ]);
      expect(turn.values['calc.kept']).toBe(40);
      expect(turn.values).not.toHaveProperty('calc.scratch');
      expect(kernel.sessionValues()).not.toHaveProperty('calc.kept');
    });
  });

  describe('sessions', () => {
    it("never see each other's values", async () => {
      const seen: Record<string, unknown> = {};
      @StateKey('memo.last', { scope: 'session', merge: 'exclusive' })
      @Plugin({ name: 'memo', version: '1.0.0' })
      class Memo {
        @Hook('message.received')
        remember(message: string, ctx: HookContext) {
          seen[`${ctx.sessionId}:${message}`] = ctx.get('memo.last');
          ctx.set('memo.last', message);
        }
      }
      const app = Trellis.create();
      const kernel = new KernelHarness(app);
      await app.install(Memo);
      kernelOf(app).sessionState('alice').seed({ 'app.user_id': 'alice' });

      await kernel.pipeline('message.received', 'hi from alice', { session: 'alice' });
      await kernel.pipeline('message.received', 'hi from bob', { session: 'bob' });
      await kernel.pipeline('message.received', 'again alice', { session: 'alice' });

      expect(seen).toEqual({
        'alice:hi from alice': undefined,
        'bob:hi from bob': undefined,
        'alice:again alice': 'hi from alice',
      });
      expect(kernel.sessionValues('bob')).toEqual({ 'memo.last': 'hi from bob' });
      expect(kernel.sessionValues('alice')).toEqual({ 'app.user_id': 'alice', 'memo.last': 'again alice' });
    });
  });
});
