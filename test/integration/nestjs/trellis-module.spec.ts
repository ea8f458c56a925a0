import 'reflect-metadata';
import { Controller, Get, Injectable, Module, Param, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { Hook, Plugin, Requires, Tool, Trellis, TrellisError, type ToolContext } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { HostedAgent, InjectAgent, InjectTrellis, TrellisModule, TrellisSessionsModule } from 'trellis/nestjs';

class NoInput {}

@Injectable()
class Clock {
  readonly events: string[] = [];
}

@Plugin({ name: 'who', version: '1.0.0' })
class WhoPlugin {
  constructor(private readonly clock: Clock) {}
  @Tool({ name: 'who.ami', description: 'Says who is asking. Use when asked who I am.', input: NoInput })
  @Requires({ key: 'app.user_id', optional: true }, { key: 'app.tenant', optional: true })
  whoami(_input: NoInput, ctx: ToolContext) {
    return { user: ctx.get('app.user_id') ?? null, tenant: ctx.get('app.tenant') ?? null };
  }
  @Hook('app.startup') started() {
    this.clock.events.push('startup');
  }
  @Hook('app.shutdown') stopped(signal: string | undefined) {
    this.clock.events.push(`shutdown:${String(signal)}`);
  }
}

@Plugin({ name: 'after', version: '1.0.0', dependsOn: ['who'] })
class AfterPlugin {}

@Module({ imports: [TrellisModule.forFeature([AfterPlugin])], providers: [AfterPlugin] })
class AfterModule {}

@Module({ imports: [TrellisModule.forFeature([WhoPlugin])], providers: [Clock, WhoPlugin], exports: [Clock] })
class WhoModule {}

@Controller('ask')
class AskController {
  constructor(@InjectAgent('helper') private readonly helper: HostedAgent) {}
  @Get(':id')
  ask(@Param('id') id: string) {
    return this.helper.session(id).send('who am i');
  }
}

function whoModel(): ScriptedModel {
  return new ScriptedModel((req) =>
    req.messages.at(-1)?.role === 'tool'
      ? req.messages.at(-1)!.content
      : { toolCalls: [{ name: 'who.ami', args: {} }] },
  );
}

async function boot(imports: unknown[], controllers: unknown[] = []): Promise<INestApplication> {
  const ref = await Test.createTestingModule({
    imports: imports as never[],
    controllers: controllers as never[],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('TrellisModule', () => {
  it('forRootAsync: options from a factory with injected config; dependents install after what they depend on; request context reaches the tool', async () => {
    @Module({ providers: [{ provide: 'TENANT_HEADER', useValue: 'x-tenant' }], exports: ['TENANT_HEADER'] })
    class ConfigModule {}
    const app = await boot(
      [
        TrellisModule.forRootAsync({
          isGlobal: true,
          agentNames: ['helper'],
          imports: [ConfigModule],
          inject: ['TENANT_HEADER'],
          useFactory: (header: string) => ({
            agents: [{ name: 'helper', model: whoModel(), instructions: '' }],
            requestContext: (ctx) => {
              const req = ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>();
              return { 'app.user_id': req.headers['x-user'], 'app.tenant': req.headers[header] };
            },
          }),
        }),
        AfterModule,
        WhoModule,
      ],
      [AskController],
    );
    try {
      const res = await request(app.getHttpServer())
        .get('/ask/s1')
        .set('x-user', 'u7')
        .set('x-tenant', 'acme')
        .expect(200);
      expect(JSON.parse(res.body.reply)).toEqual({ user: 'u7', tenant: 'acme' });
      const second = await request(app.getHttpServer()).get('/ask/s1').set('x-user', 'u8').expect(200);
      expect(JSON.parse(second.body.reply)).toEqual({ user: 'u8', tenant: null });
      expect(app.get(Clock).events).toEqual(['startup']);
    } finally {
      await app.close();
    }
  });

  it('runs app.shutdown hooks with the signal when Nest shuts down', async () => {
    const app = await boot([TrellisModule.forRoot({ isGlobal: true, agents: [] }), WhoModule]);
    const clock = app.get(Clock);
    // Nest passes the signal to beforeApplicationShutdown when it closes on one.
    const host = app.get((await import('trellis/nestjs')).TrellisHost);
    await host.beforeApplicationShutdown('SIGTERM');
    expect(clock.events).toEqual(['startup', 'shutdown:SIGTERM']);
    await app.close();
  });

  it('fails bootstrap with the Trellis message when a plugin does not install', async () => {
    @Plugin({ name: 'who', version: '2.0.0' })
    class SecondWho {}
    @Module({ imports: [TrellisModule.forFeature([SecondWho])], providers: [SecondWho] })
    class ClashModule {}
    const error = await boot([TrellisModule.forRoot({}), WhoModule, ClashModule]).catch((e: unknown) => e);
    expect(TrellisError.is(error, 'DuplicatePlugin')).toBe(true);
    expect((error as Error).message).toMatch(/^ClashModule: A plugin named 'who' is already installed/);
  });

  it('refuses a plugin listed in forFeature that its module does not provide', async () => {
    @Module({ imports: [TrellisModule.forFeature([WhoPlugin])], providers: [Clock] })
    class ForgetfulModule {}
    const error = await boot([TrellisModule.forRoot({}), ForgetfulModule]).catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidPlugin')).toBe(true);
    expect((error as Error).message).toContain(
      'WhoPlugin is listed in TrellisModule.forFeature() imported by ForgetfulModule, but that module does not provide it',
    );
  });

  it('never hands the kernel to a plugin, even when the app is exposed to the host', async () => {
    @Plugin({ name: 'greedy', version: '1.0.0' })
    class GreedyPlugin {
      constructor(@InjectTrellis() readonly app: Trellis) {}
    }
    @Module({ imports: [TrellisModule.forFeature([GreedyPlugin])], providers: [GreedyPlugin] })
    class GreedyModule {}
    const hidden = await boot([TrellisModule.forRoot({ isGlobal: true }), GreedyModule]).catch((e: unknown) => e);
    expect(String((hidden as Error).message)).toMatch(/resolve dependencies of the GreedyPlugin/);
    const exposed = await boot([TrellisModule.forRoot({ isGlobal: true, exposeApp: true }), GreedyModule]).catch(
      (e: unknown) => e,
    );
    expect(TrellisError.is(exposed, 'KernelAccess')).toBe(true);
    expect((exposed as Error).message).toContain(
      'GreedyPlugin reaches the Trellis app, an agent or the store through its dependencies: GreedyPlugin → Symbol(trellis.nestjs.app)',
    );
  });

  it('gives the app to host code that asks with exposeApp', async () => {
    @Injectable()
    class Admin {
      constructor(@InjectTrellis() readonly trellis: Trellis) {}
    }
    @Module({ providers: [Admin] })
    class AdminModule {}
    const app = await boot([TrellisModule.forRoot({ isGlobal: true, exposeApp: true }), AdminModule, WhoModule]);
    expect(
      app
        .get(Admin)
        .trellis.describe()
        .plugins.map((p) => p.name),
    ).toContain('who');
    await app.close();
  });

  it('refuses an agent naming an unknown model, and a sessions API without an explicit prefix', async () => {
    const error = await boot([
      TrellisModule.forRoot({ agents: [{ name: 'a', model: 'nope', instructions: '' }] }),
    ]).catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidOptions')).toBe(true);
    expect((error as Error).message).toContain("Agent 'a' names the model 'nope', which is not in the models option");
    for (const prefix of ['', '/', '*']) {
      expect(() => TrellisSessionsModule.register({ prefix, agent: 'a' })).toThrow(/explicit, literal route prefix/);
    }
  });
});

describe('shutdown drains running turns', () => {
  function slowAgent(delayMs: number, shutdownTimeoutMs: number) {
    return TrellisModule.forRoot({
      isGlobal: true,
      shutdownTimeoutMs,
      agents: [{ name: 'slow', model: new ScriptedModel(['done'], { delayMs }), instructions: '' }],
    });
  }
  it('lets a turn that ends within the limit finish, and refuses new turns meanwhile', async () => {
    const app = await boot([slowAgent(300, 5_000)], []);
    const agent = app.get<HostedAgent>('trellis.nestjs.agent:slow');
    const running = agent.session('a').send('hi');
    const closing = app.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(agent.session('b').send('hi')).rejects.toThrow(/shutting down/);
    await expect(running).resolves.toMatchObject({ status: 'completed', reply: 'done' });
    await closing;
  });

  it('cancels a turn still running at the limit', async () => {
    const app = await boot([slowAgent(5_000, 100)], []);
    const agent = app.get<HostedAgent>('trellis.nestjs.agent:slow');
    const running = agent.session('a').send('hi');
    const began = Date.now();
    await app.close();
    await expect(running).resolves.toMatchObject({ status: 'cancelled' });
    expect(Date.now() - began).toBeLessThan(2_000);
  });
});
