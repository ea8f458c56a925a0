import 'reflect-metadata';
import { inject, injectable } from 'inversify';
import { IsInt, IsOptional, IsString, Min } from 'class-validator';
import {
  Hook,
  Middleware,
  OnAction,
  OnEffect,
  Plugin,
  RetryMiddleware,
  SelfTest,
  StateKey,
  Tool,
  Trellis,
  TrellisError,
  type NextToolHandler,
  type ToolInvocation,
} from '../../../index.js';
import { PLUGIN_CONFIG } from '../../../plugin.js';
import { KernelHarness, rejectionOf } from '../../support/kernel-harness.js';
import { kernelOf } from '../../../src/app/kernel-access.js';

class NoInput {}

describe('installing a plugin', () => {
  describe('decorators only write metadata', () => {
    it('does nothing at decoration time: the class is constructed and registered only by app.install', async () => {
      let constructed = 0;
      @Plugin({ name: 'lazy', version: '1.0.0' })
      class LazyPlugin {
        constructor() {
          constructed++;
        }
        @Tool({ name: 'lazy.ping', description: 'Answers pong. Use to check liveness.', input: NoInput })
        ping() {
          return 'pong';
        }
      }
      const app = Trellis.create();

      expect(constructed).toBe(0);
      expect(kernelOf(app).registry.plugins).toHaveLength(0);
      expect(kernelOf(app).registry.tools.has('lazy.ping')).toBe(false);

      await app.install(LazyPlugin);

      expect(constructed).toBe(1);
      expect(kernelOf(app).registry.tools.get('lazy.ping')?.plugin).toBe('lazy');
    });

    it('refuses a class without @Plugin, saying to decorate it', async () => {
      class Undecorated {
        @Tool({ name: 'bare.ping', description: 'Answers pong.', input: NoInput })
        ping() {
          return 'pong';
        }
      }
      const app = Trellis.create();

      const error = await rejectionOf(app.install(Undecorated));

      expect(TrellisError.is(error, 'InvalidPlugin')).toBe(true);
      expect((error as Error).message).toMatch(/@Plugin/);
      expect(kernelOf(app).registry.plugins).toHaveLength(0);
    });
  });

  describe('constructor injection', () => {
    it('injects a service the host registered as a class provider, as a singleton', async () => {
      @injectable()
      class OrdersRepo {
        find(id: string) {
          return { id, total: 42 };
        }
      }
      @Plugin({ name: 'orders', version: '1.0.0' })
      class OrdersPlugin {
        constructor(@inject(OrdersRepo) readonly repo: OrdersRepo) {}
      }
      const app = Trellis.create({ providers: [OrdersRepo] });

      const installed = await app.install(OrdersPlugin);

      const plugin = installed.instance;
      expect(plugin.repo).toBeInstanceOf(OrdersRepo);
      expect(plugin.repo.find('o1')).toEqual({ id: 'o1', total: 42 });
      expect(plugin.repo).toBe(kernelOf(app).providers.get(OrdersRepo));
    });

    it('injects a value the host registered with { provide, useValue }', async () => {
      const CLOCK = Symbol('clock');
      const clock = { now: () => 1234 };
      @Plugin({ name: 'timed', version: '1.0.0' })
      class TimedPlugin {
        constructor(@inject(CLOCK) readonly clock: { now(): number }) {}
      }
      const app = Trellis.create({ providers: [{ provide: CLOCK, useValue: clock }] });

      const installed = await app.install(TimedPlugin);

      expect(installed.instance.clock).toBe(clock);
    });

    it('refuses a plugin whose injected service the host did not register, and registers nothing', async () => {
      @injectable()
      class Missing {}
      @Plugin({ name: 'needy', version: '1.0.0' })
      class NeedyPlugin {
        constructor(@inject(Missing) readonly missing: Missing) {}
      }
      const app = Trellis.create();

      const error = await rejectionOf(app.install(NeedyPlugin));

      expect(TrellisError.is(error, 'InvalidPlugin')).toBe(true);
      expect((error as Error).message).toMatch(/providers/);
      expect(kernelOf(app).registry.byName.has('needy')).toBe(false);
    });
  });

  describe('config', () => {
    class ShopConfig {
      @IsString()
      region!: string;

      @IsOptional()
      @IsInt()
      @Min(1)
      pageSize = 20;
    }

    @Plugin({ name: 'shop', version: '1.0.0', config: ShopConfig })
    class ShopPlugin {
      constructor(@inject(PLUGIN_CONFIG) readonly config: ShopConfig) {}
    }

    it('injects the validated config as an instance of the DTO, defaults applied', async () => {
      const app = Trellis.create();

      const installed = await app.install(ShopPlugin, { config: { region: 'eu' } });

      const config = installed.instance.config;
      expect(config).toBeInstanceOf(ShopConfig);
      expect(config).toMatchObject({ region: 'eu', pageSize: 20 });
    });

    it('refuses an invalid config with InvalidConfig listing every bad field', async () => {
      const app = Trellis.create();

      const error = await rejectionOf(app.install(ShopPlugin, { config: { region: 7, pageSize: 0 } }));

      expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
      const message = (error as Error).message;
      expect(message).toMatch(/region/);
      expect(message).toMatch(/pageSize/);
      const paths = ((error as TrellisError).details['errors'] as { path: string }[]).map((e) => e.path).sort();
      expect(paths).toEqual(['pageSize', 'region']);
      expect(kernelOf(app).registry.byName.has('shop')).toBe(false);
    });

    it('refuses a config for a plugin that declares none', async () => {
      @Plugin({ name: 'plain', version: '1.0.0' })
      class PlainPlugin {}
      const app = Trellis.create();

      const error = await rejectionOf(app.install(PlainPlugin, { config: { any: 1 } }));

      expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    });
  });

  describe('uniqueness across plugins', () => {
    it('refuses a second plugin with the same name, pointing at reload', async () => {
      @Plugin({ name: 'dup', version: '1.0.0' })
      class First {}
      @Plugin({ name: 'dup', version: '2.0.0' })
      class Second {}
      const app = Trellis.create();
      await app.install(First);

      const error = await rejectionOf(app.install(Second));

      expect(TrellisError.is(error, 'DuplicatePlugin')).toBe(true);
      expect((error as Error).message).toMatch(/reload/);
      expect(kernelOf(app).registry.byName.get('dup')?.definition.version).toBe('1.0.0');
    });

    it('refuses a tool name another plugin registered, naming both owners', async () => {
      @Plugin({ name: 'alpha', version: '1.0.0' })
      class Alpha {
        @Tool({ name: 'shared.search', description: 'Searches. Use for lookups.', input: NoInput })
        search() {
          return 'alpha';
        }
      }
      @Plugin({ name: 'beta', version: '1.0.0' })
      class Beta {
        @Tool({ name: 'shared.search', description: 'Searches. Use for lookups.', input: NoInput })
        search() {
          return 'beta';
        }
      }
      const app = Trellis.create();
      await app.install(Alpha);

      const error = await rejectionOf(app.install(Beta));

      expect(TrellisError.is(error, 'DuplicateRegistration')).toBe(true);
      expect((error as Error).message).toMatch(/tool 'shared\.search'.*'alpha'.*'beta'/);
      expect(kernelOf(app).registry.tools.get('shared.search')?.plugin).toBe('alpha');
    });

    it('refuses a state key another plugin registered, naming both owners', async () => {
      @StateKey('team.sub.count', { scope: 'session', merge: 'exclusive' })
      @Plugin({ name: 'team', version: '1.0.0' })
      class Team {}
      @StateKey('team.sub.count', { scope: 'session', merge: 'exclusive' })
      @Plugin({ name: 'team.sub', version: '1.0.0' })
      class TeamSub {}
      const app = Trellis.create();
      await app.install(Team);

      const error = await rejectionOf(app.install(TeamSub));

      expect(TrellisError.is(error, 'DuplicateRegistration')).toBe(true);
      expect((error as Error).message).toMatch(/state key 'team\.sub\.count'.*'team'.*'team\.sub'/);
      expect(kernelOf(app).registry.stateKey('team.sub.count')?.owner).toBe('team');
    });

    it('refuses an effect key another plugin handles, naming both owners', async () => {
      @Plugin({ name: 'fx1', version: '1.0.0' })
      class Fx1 {
        @OnEffect('order.placed')
        handle() {}
      }
      @Plugin({ name: 'fx2', version: '1.0.0' })
      class Fx2 {
        @OnEffect('order.placed')
        handle() {}
      }
      const app = Trellis.create();
      await app.install(Fx1);

      const error = await rejectionOf(app.install(Fx2));

      expect(TrellisError.is(error, 'DuplicateRegistration')).toBe(true);
      expect((error as Error).message).toMatch(/effect 'order\.placed'.*'fx1'.*'fx2'/);
      expect(
        kernelOf(app)
          .registry.effectHandlers('order.placed')
          ?.map((h) => h.plugin),
      ).toEqual(['fx1']);
    });

    it('refuses an action key another plugin handles (built-in actions included), naming both owners', async () => {
      @Plugin({ name: 'act1', version: '1.0.0' })
      class Act1 {
        @OnAction('refund')
        handle() {}
      }
      @Plugin({ name: 'act2', version: '1.0.0' })
      class Act2 {
        @OnAction('refund')
        handle() {}
      }
      @Plugin({ name: 'act3', version: '1.0.0' })
      class Act3 {
        @OnAction('AddContextMessage')
        handle() {}
      }
      const app = Trellis.create();
      await app.install(Act1);

      const clash = await rejectionOf(app.install(Act2));
      const builtIn = await rejectionOf(app.install(Act3));

      expect(TrellisError.is(clash, 'DuplicateRegistration')).toBe(true);
      expect((clash as Error).message).toMatch(/action 'refund'.*'act1'.*'act2'/);
      expect(TrellisError.is(builtIn, 'DuplicateRegistration')).toBe(true);
      expect((builtIn as Error).message).toMatch(/action 'AddContextMessage'.*'trellis'.*'act3'/);
      expect(kernelOf(app).registry.actionHandler('refund')?.plugin).toBe('act1');
    });
  });

  describe('dependencies', () => {
    it('refuses a plugin whose dependsOn plugin is not installed, with MissingDependency naming it', async () => {
      @Plugin({ name: 'reports', version: '1.0.0', dependsOn: ['db'] })
      class Reports {}
      const app = Trellis.create();

      const error = await rejectionOf(app.install(Reports));

      expect(TrellisError.is(error, 'MissingDependency')).toBe(true);
      expect((error as Error).message).toMatch(/'db'/);
      expect((error as TrellisError).details['missing']).toEqual(['db']);
    });

    it('installs it once the dependency is installed', async () => {
      @Plugin({ name: 'db', version: '1.0.0' })
      class Db {}
      @Plugin({ name: 'reports', version: '1.0.0', dependsOn: ['db'] })
      class Reports {}
      const app = Trellis.create();
      await app.install(Db);

      await app.install(Reports);

      expect([...kernelOf(app).registry.byName.keys()]).toEqual(['db', 'reports']);
    });
  });

  describe('middleware options', () => {
    it('refuses invalid @Middleware options at install, naming the middleware', async () => {
      @Plugin({ name: 'retrying', version: '1.0.0' })
      class Retrying {
        @Tool({ name: 'retrying.call', description: 'Calls out. Use to test retries.', input: NoInput })
        @Middleware(RetryMiddleware, { maxRetries: 99 })
        call() {
          return 1;
        }
      }
      const app = Trellis.create();

      const error = await rejectionOf(app.install(Retrying));

      expect(TrellisError.is(error, 'InvalidOptions')).toBe(true);
      expect((error as Error).message).toMatch(/RetryMiddleware/);
      expect((error as Error).message).toMatch(/maxRetries/);
      expect(kernelOf(app).registry.byName.has('retrying')).toBe(false);
    });

    it('refuses invalid middleware passed in install options', async () => {
      @Plugin({ name: 'plain', version: '1.0.0' })
      class Plain {}
      const app = Trellis.create();

      const error = await rejectionOf(
        app.install(Plain, { middleware: [{ type: RetryMiddleware, options: { maxRetries: -1 } }] }),
      );

      expect(TrellisError.is(error, 'InvalidOptions')).toBe(true);
      expect(kernelOf(app).registry.byName.has('plain')).toBe(false);
    });
  });

  describe('tool middleware declared at install', () => {
    const passThrough = (name: string) => {
      const type = {
        [name]: class {
          intercept(_call: ToolInvocation, next: NextToolHandler) {
            return next();
          }
        },
      }[name]!;
      injectable()(type);
      return type;
    };

    it('wraps each tool app-wide, then class-level, then install options, then method-level (outermost first)', async () => {
      const AppWide = passThrough('AppWide');
      const ClassLevel = passThrough('ClassLevel');
      const FromInstall = passThrough('FromInstall');
      const MethodLevel = passThrough('MethodLevel');
      @Plugin({ name: 'wrapped', version: '1.0.0' })
      @Middleware(ClassLevel)
      class Wrapped {
        @Tool({ name: 'wrapped.call', description: 'Calls. Use in tests.', input: NoInput })
        @Middleware(MethodLevel)
        call() {
          return 1;
        }
      }
      const app = Trellis.create({ middleware: [{ type: AppWide }] });

      await app.install(Wrapped, { middleware: [{ type: FromInstall }] });

      const tool = kernelOf(app).registry.tools.get('wrapped.call')!;
      expect(tool.chainNames).toEqual(['AppWide', 'ClassLevel', 'FromInstall', 'MethodLevel']);
      expect(tool.chain[2]).toBeInstanceOf(FromInstall);
    });

    it("declares each tool's turn-level result key <tool>.result, owned by the plugin", async () => {
      @Plugin({ name: 'db', version: '1.0.0' })
      class Db {
        @Tool({ name: 'db.search', description: 'Searches. Use for lookups.', input: NoInput })
        search() {
          return [];
        }
      }
      const app = Trellis.create();

      await app.install(Db);

      expect(kernelOf(app).registry.stateKey('db.search.result')).toMatchObject({ owner: 'db', scope: 'turn' });
    });
  });

  describe('a failed install registers nothing', () => {
    class LimitConfig {
      @IsInt()
      @Min(1)
      limit!: number;
    }
    const makeVersion = () => {
      @StateKey('lim.used', { scope: 'session', merge: 'exclusive' })
      @Plugin({ name: 'lim', version: '1.0.0', config: LimitConfig })
      class Lim {
        @Tool({ name: 'lim.check', description: 'Checks the limit. Use before spending.', input: NoInput })
        check() {
          return true;
        }
        @Hook('task.start')
        start() {}
        @OnEffect('lim.spent')
        spent() {}
        @OnAction('lim.reset')
        reset() {}
      }
      return Lim;
    };

    it('leaves the registry exactly as it was, and a corrected install then works', async () => {
      const app = Trellis.create();
      const Lim = makeVersion();
      const before = kernelOf(app).registry;

      await expect(app.install(Lim, { config: { limit: 0 } })).rejects.toThrow(TrellisError);

      expect(kernelOf(app).registry).toBe(before);
      expect(kernelOf(app).registry.tools.has('lim.check')).toBe(false);
      expect(kernelOf(app).registry.stateKey('lim.used')).toBeUndefined();
      expect(kernelOf(app).registry.effectHandlers('lim.spent')).toBeUndefined();
      expect(kernelOf(app).registry.actionHandler('lim.reset')).toBeUndefined();
      expect(kernelOf(app).registry.view().hooks['task.start']).toHaveLength(0);

      await app.install(Lim, { config: { limit: 5 } });

      expect(kernelOf(app).registry.tools.has('lim.check')).toBe(true);
      expect(kernelOf(app).registry.stateKey('lim.used')?.owner).toBe('lim');
    });

    it('registers none of its parts when one of them clashes with an installed plugin', async () => {
      @Plugin({ name: 'owner', version: '1.0.0' })
      class Owner {
        @OnEffect('lim.spent')
        spent() {}
      }
      const app = Trellis.create();
      await app.install(Owner);
      const before = kernelOf(app).registry;

      await expect(app.install(makeVersion(), { config: { limit: 5 } })).rejects.toThrow(/lim\.spent/);

      expect(kernelOf(app).registry).toBe(before);
      expect(kernelOf(app).registry.tools.has('lim.check')).toBe(false);
    });
  });

  describe('enabled and disabled plugins', () => {
    @StateKey('toggle.count', { scope: 'session', merge: 'exclusive', default: 0 })
    @Plugin({ name: 'toggle', version: '1.0.0' })
    class Toggle {
      @Tool({ name: 'toggle.tool', description: 'A tool. Use in tests.', input: NoInput })
      tool() {
        return 1;
      }
      @Hook('planning.started')
      plan(value: string) {
        return `${value}+toggle`;
      }
      @OnEffect('toggle.changed')
      changed() {}
      @OnAction('toggle.act')
      act() {}
    }

    it('installed with enabled: false, it has its structural parts but no hooks or tools', async () => {
      const app = Trellis.create();
      const kernel = new KernelHarness(app);

      await app.install(Toggle, { enabled: false });

      expect(
        kernelOf(app)
          .registry.view()
          .tools.map((t) => t.name),
      ).toEqual([]);
      expect(kernelOf(app).registry.view().hooks['planning.started']).toHaveLength(0);
      expect(await kernel.pipeline('planning.started', 'base')).toBe('base');
      expect(kernelOf(app).registry.stateKey('toggle.count')?.owner).toBe('toggle');
      expect(kernelOf(app).registry.effectHandlers('toggle.changed')).toHaveLength(1);
      expect(kernelOf(app).registry.actionHandler('toggle.act')?.plugin).toBe('toggle');
    });

    it('app.enable switches hooks and tools on; app.disable switches them off; state keys and handlers stay', async () => {
      const app = Trellis.create();
      const kernel = new KernelHarness(app);
      await app.install(Toggle, { enabled: false });

      app.enable('toggle');
      expect(
        kernelOf(app)
          .registry.view()
          .tools.map((t) => t.name),
      ).toEqual(['toggle.tool']);
      expect(await kernel.pipeline('planning.started', 'base')).toBe('base+toggle');

      app.disable('toggle');
      expect(kernelOf(app).registry.view().tools).toHaveLength(0);
      expect(await kernel.pipeline('planning.started', 'base')).toBe('base');
      expect(kernelOf(app).registry.byName.has('toggle')).toBe(true);
      expect(kernelOf(app).registry.stateKey('toggle.count')).toBeDefined();
      expect(kernelOf(app).registry.effectHandlers('toggle.changed')).toHaveLength(1);
      expect(kernelOf(app).registry.actionHandler('toggle.act')).toBeDefined();
    });

    it('refuses to enable or disable a plugin that is not installed', () => {
      const app = Trellis.create();

      expect(() => app.disable('ghost')).toThrow(expect.objectContaining({ code: 'UnknownPlugin' }));
    });
  });

  describe('app.selfTest', () => {
    it('runs every @SelfTest method and reports pass/fail per plugin', async () => {
      @Plugin({ name: 'healthy', version: '1.0.0' })
      class Healthy {
        @SelfTest()
        async canConnect() {
          return true;
        }
      }
      @Plugin({ name: 'sick', version: '1.0.0' })
      class Sick {
        @SelfTest()
        ok() {}
        @SelfTest()
        throws() {
          throw new Error('database unreachable');
        }
        @SelfTest()
        returnsFalse() {
          return false;
        }
      }
      const app = Trellis.create();
      await app.install(Healthy);
      await app.install(Sick);

      const report = await app.selfTest();

      expect(report.ok).toBe(false);
      expect(report.plugins).toEqual([
        { plugin: 'healthy', ok: true, tests: [{ name: 'canConnect', ok: true }] },
        {
          plugin: 'sick',
          ok: false,
          tests: [
            { name: 'ok', ok: true },
            { name: 'throws', ok: false, error: 'database unreachable' },
            { name: 'returnsFalse', ok: false, error: 'returned false' },
          ],
        },
      ]);
    });

    it('is ok when every self test passes', async () => {
      @Plugin({ name: 'healthy', version: '1.0.0' })
      class Healthy {
        @SelfTest()
        check() {}
      }
      const app = Trellis.create();
      await app.install(Healthy);

      expect((await app.selfTest()).ok).toBe(true);
    });
  });
});

describe('a constructor parameter with nothing to say what to inject', () => {
  class Clock {
    now() {
      return 'noon';
    }
  }

  it('injects it by its type when the class has decorator metadata (tsc, ts-jest, the CLI with typescript installed)', async () => {
    @Plugin({ name: 'timed', version: '1.0.0' })
    class Timed {
      constructor(readonly clock: Clock) {}
    }
    const app = Trellis.create({ providers: [Clock] });
    await app.install(Timed);
    expect(app.describe().plugins.map((p) => p.name)).toEqual(['timed']);
  });

  it('fails the install naming the parameter and what to write, when the file was compiled without metadata (esbuild)', async () => {
    // What esbuild makes of `@Plugin(…) class Untimed { constructor(@inject(PLUGIN_CONFIG) config, clock: Clock) }`:
    // the decorators applied, and the parameter types recorded nowhere.
    class Untimed {
      constructor(
        readonly config: object,
        readonly clock: Clock,
      ) {}
    }
    inject(PLUGIN_CONFIG)(Untimed, undefined, 0);
    Plugin({ name: 'untimed', version: '1.0.0' })(Untimed);
    const app = Trellis.create({ providers: [Clock] });

    const error = await rejectionOf(app.install(Untimed));

    expect(TrellisError.is(error, 'InvalidPlugin')).toBe(true);
    expect((error as TrellisError).message).toContain(
      "Plugin 'untimed' could not be constructed: nothing says what to inject for constructor parameter 'clock' (#2) of Untimed — it has no @inject(…), and its file was compiled without decorator metadata",
    );
    expect((error as TrellisError).hint).toContain(
      "constructor(@inject(TheType) private readonly clock: TheType) — import { inject } from 'trellis'",
    );
    expect((error as TrellisError).hint).toContain('npm install -D typescript');
  });
});
