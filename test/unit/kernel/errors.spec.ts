import 'reflect-metadata';
import { Hook, Plugin, Requires, Trellis, TrellisError, type HookContext } from '../../../index.js';
import { KernelHarness, rejectionOf } from '../../support/kernel-harness.js';

describe('TrellisError', () => {
  it('carries a code, is recognised by TrellisError.is with or without a code, and is named after its class', () => {
    const error = new TrellisError('MissingContext', 'key missing', { hint: 'Pass it' });

    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe('MissingContext');
    expect(error.name).toBe('TrellisError');
    expect(TrellisError.is(error)).toBe(true);
    expect(TrellisError.is(error, 'MissingContext')).toBe(true);
    expect(TrellisError.is(error, 'ContextAccess')).toBe(false);
    expect(TrellisError.is(new Error('plain'))).toBe(false);
    expect(TrellisError.is({ code: 'MissingContext', message: 'look-alike' })).toBe(false);
    expect(TrellisError.is(undefined)).toBe(false);
  });

  it('names a subclass after the subclass, and is() still recognises it', () => {
    class BillingError extends TrellisError {}

    const error = new BillingError('InsufficientCredits', 'no credits left');

    expect(error.name).toBe('BillingError');
    expect(TrellisError.is(error, 'InsufficientCredits')).toBe(true);
  });

  it('recognises an error branded by another copy of the module (Symbol.for brand, not instanceof)', () => {
    const foreign = Object.assign(new Error('from another copy'), {
      [Symbol.for('trellis.error')]: true,
      code: 'StaleState',
    });

    expect(TrellisError.is(foreign, 'StaleState')).toBe(true);
  });

  it('appends the hint to the message and keeps it separately', () => {
    const error = new TrellisError('InvalidConfig', 'Plugin x config is invalid', { hint: 'Fix the fields' });

    expect(error.message).toBe('Plugin x config is invalid. Fix the fields');
    expect(error.hint).toBe('Fix the fields');
    expect(error.kind).toBe('user');
    expect(error.retryable).toBe(false);
  });

  describe('kernel errors say what to do', () => {
    it('MissingContext says where to provide the key', async () => {
      @Plugin({ name: 'needs', version: '1.0.0' })
      class Needs {
        @Hook('task.start')
        @Requires('app.user_id')
        start() {}
      }
      const app = Trellis.create();
      await app.install(Needs);

      const error = await rejectionOf(new KernelHarness(app).parallel('task.start', undefined));

      expect(TrellisError.is(error, 'MissingContext')).toBe(true);
      expect((error as TrellisError).hint).toMatch(/agent\.session\(id, \{ context/);
      expect((error as Error).message).toContain((error as TrellisError).hint);
    });

    it('ContextAccess says to declare the key with @Requires', async () => {
      let caught: unknown;
      @Plugin({ name: 'nosy', version: '1.0.0' })
      class Nosy {
        @Hook('task.start')
        start(_: unknown, ctx: HookContext) {
          try {
            ctx.get('billing.credits');
          } catch (error) {
            caught = error;
          }
        }
      }
      const app = Trellis.create();
      await app.install(Nosy);

      await new KernelHarness(app).parallel('task.start', undefined);

      expect((caught as Error).message).toMatch(/Declare it with @Requires\('billing\.credits'\)/);
    });

    it('DuplicatePlugin says to uninstall or reload, MissingDependency to install the dependency first', async () => {
      @Plugin({ name: 'dup', version: '1.0.0', dependsOn: [] })
      class Dup {}
      @Plugin({ name: 'child', version: '1.0.0', dependsOn: ['parent'] })
      class Child {}
      const app = Trellis.create();
      await app.install(Dup);

      const duplicate = (await rejectionOf(app.install(Dup))) as Error;
      const missing = (await rejectionOf(app.install(Child))) as Error;

      expect(duplicate.message).toMatch(/Uninstall it first, or use app\.reload\('dup', NewClass\)/);
      expect(missing.message).toMatch(/Install the plugins it depends on first/);
    });

    it("a throwing hook's error says to fix or catch inside the handler", async () => {
      @Plugin({ name: 'thrower', version: '1.0.0' })
      class Thrower {
        @Hook('planning.started')
        plan() {
          throw new Error('nope');
        }
      }
      const app = Trellis.create();
      await app.install(Thrower);

      const error = (await rejectionOf(new KernelHarness(app).pipeline('planning.started', 'x'))) as TrellisError;

      expect(error.hint).toMatch(/catch the error inside it/);
    });
  });
});
