import 'reflect-metadata';
import { IsInt, IsOptional, IsString, Min } from 'class-validator';
import {
  errorResult,
  inject,
  injectable,
  MIDDLEWARE_OPTIONS,
  type NextToolHandler,
  type ToolInvocation,
  type ToolMiddleware,
  type ToolResult,
} from 'trellis/plugin';
import { Middleware, Plugin, RetryMiddleware, Tool, Trellis, TrellisError, type TrellisEvent } from 'trellis';
import { ScriptedModel } from 'trellis/testing';

// docs/middleware.md, kept in step with it (imports included): if this breaks, the guide is wrong.
declare module 'trellis' {
  interface TrellisErrorCodes {
    QuotaExceeded: true;
    ServiceDown: true;
  }
}

class QuotaOptions {
  @IsOptional()
  @IsInt()
  @Min(1)
  perSession = 20;
}

@injectable()
class QuotaMiddleware implements ToolMiddleware {
  static readonly optionsType = QuotaOptions;
  private readonly used = new Map<string, number>();

  constructor(@inject(MIDDLEWARE_OPTIONS) private readonly options: QuotaOptions) {}

  async intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    const used = (this.used.get(call.context.sessionId) ?? 0) + 1;
    this.used.set(call.context.sessionId, used);
    if (used > this.options.perSession) {
      return errorResult('QuotaExceeded', `${call.tool} may run ${this.options.perSession} times a session`);
    }
    return next();
  }
}

class LookupInput {
  @IsString() id!: string;
}

const failures: Error[] = [];

@Plugin({ name: 'orders', version: '1.0.0', description: 'Order lookups' })
class OrdersPlugin {
  @Tool({ name: 'orders.lookup', input: LookupInput, description: 'Looks up an order. Use for order questions.' })
  @Middleware(QuotaMiddleware, { perSession: 1 })
  @Middleware(RetryMiddleware, { maxRetries: 3, baseDelayMs: 1 })
  lookup(input: LookupInput): string {
    const failure = failures.shift();
    if (failure) throw failure;
    return `order ${input.id} shipped`;
  }
}

async function lookups(count: number, thrown: Error[] = []) {
  failures.splice(0, failures.length, ...thrown);
  const app = Trellis.create();
  await app.install(OrdersPlugin);
  const events: TrellisEvent[] = [];
  const subscription = app.events$.subscribe((event) => events.push(event));
  const calls = Array.from({ length: count }, (_, i) => ({ name: 'orders.lookup', args: { id: `A${i}` } }));
  const model = new ScriptedModel([{ toolCalls: calls }, 'done']);
  const result = await app.agent({ name: 'orders', model, instructions: 'Help.' }).session('s1').send('look up');
  subscription.unsubscribe();
  await app.stop();
  return { result, retries: events.filter((e) => e.type === 'tool.retry') };
}

describe('docs/middleware.md', () => {
  it('QuotaMiddleware refuses calls past its option, as an error result the model sees', async () => {
    const { result } = await lookups(2);
    expect(result.toolCalls.map((c) => c.ok)).toEqual([true, false]);
    expect(result.toolCalls[1]).toMatchObject({
      error: { code: 'QuotaExceeded', message: 'orders.lookup may run 1 times a session', retryable: false },
    });
  });

  it('refuses a bad option at install, naming the field', async () => {
    @Plugin({ name: 'bad', version: '1.0.0' })
    class BadPlugin {
      @Tool({ name: 'bad.tool', input: LookupInput, description: 'x' })
      @Middleware(QuotaMiddleware, { perSession: 0 })
      run() {}
    }
    await expect(Trellis.create().install(BadPlugin)).rejects.toThrow(/perSession/);
  });

  it('retries a TrellisError thrown with retryable: true, and reports each retry on app.events$', async () => {
    const { result, retries } = await lookups(1, [
      new TrellisError('ServiceDown', 'the orders API is unavailable', { retryable: true }),
    ]);
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: 'order A0 shipped' });
    expect(retries).toEqual([
      expect.objectContaining({
        type: 'tool.retry',
        tool: 'orders.lookup',
        attempt: 2,
        error: expect.objectContaining({ code: 'ServiceDown' }),
      }),
    ]);
  });

  it('does not retry a plain Error: it is a ToolFailed result, not retryable', async () => {
    const { result, retries } = await lookups(1, [new Error('boom')]);
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolFailed', retryable: false } });
    expect(retries).toEqual([]);
  });
});
