import { runChain } from '../../../src/engine/tools/middleware-chain.js';
import { toolMessage } from '../../../src/engine/tools/tool-pipeline.js';
import type {
  NextToolHandler,
  ToolInvocation,
  ToolMiddleware,
  ToolResult,
} from '../../../src/contract/tool-middleware.js';

const invocation = {
  callId: 'c1',
  tool: 't',
  plugin: 'p',
  args: { n: 1 },
  context: {} as never,
  signal: new AbortController().signal,
  attempt: 1,
  notify: () => undefined,
} as ToolInvocation;

function recorder(label: string, log: string[]): ToolMiddleware {
  return {
    async intercept(_call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
      log.push(`>${label}`);
      const result = await next();
      log.push(`<${label}`);
      return result;
    },
  };
}

describe('runChain', () => {
  it('runs the first middleware outermost and ends in the tool', async () => {
    const log: string[] = [];
    const result = await runChain([recorder('a', log), recorder('b', log)], invocation, async () => {
      log.push('tool');
      return { ok: true, value: 1 };
    });
    expect(log).toEqual(['>a', '>b', 'tool', '<b', '<a']);
    expect(result).toEqual({ ok: true, value: 1 });
  });

  it('calls the tool directly with no middleware', async () => {
    const seen: ToolInvocation[] = [];
    await runChain([], invocation, async (inv) => (seen.push(inv), { ok: true, value: null }));
    expect(seen).toEqual([invocation]);
  });

  it('passes a changed invocation to the inner layers only', async () => {
    const seen: unknown[] = [];
    const change: ToolMiddleware = { intercept: (call, next) => next({ ...call, args: { n: 2 } }) };
    const look: ToolMiddleware = { intercept: (call, next) => (seen.push(call.args), next()) };
    await runChain([look, change, look], invocation, async (inv) => (seen.push(inv.args), { ok: true, value: null }));
    expect(seen).toEqual([{ n: 1 }, { n: 2 }, { n: 2 }]);
  });

  it('lets a middleware short-circuit: the tool does not run', async () => {
    let ran = false;
    const deny: ToolMiddleware = {
      intercept: async () => ({ ok: false, error: { code: 'AuthDenied', message: 'no', retryable: false } }),
    };
    const result = await runChain([deny], invocation, async () => ((ran = true), { ok: true, value: 1 }));
    expect(ran).toBe(false);
    expect(result).toMatchObject({ ok: false, error: { code: 'AuthDenied' } });
  });

  it('lets a middleware call next more than once (retry)', async () => {
    let runs = 0;
    const twice: ToolMiddleware = { intercept: async (call, next) => (await next(), next({ ...call, attempt: 2 })) };
    const result = await runChain([twice], invocation, async (inv) => ({
      ok: true,
      value: `${++runs}@${inv.attempt}`,
    }));
    expect(result).toEqual({ ok: true, value: '2@2' });
  });
});

describe('toolMessage', () => {
  it('sends text as is, other values as JSON, and errors as { error: { code, message, retryable } }', () => {
    expect(toolMessage({ ok: true, value: 'plain' })).toBe('plain');
    expect(toolMessage({ ok: true, value: { a: 1 } })).toBe('{"a":1}');
    expect(toolMessage({ ok: true, value: undefined })).toBe('null');
    expect(
      JSON.parse(toolMessage({ ok: false, error: { code: 'ToolFailed', message: 'x', retryable: true } })),
    ).toEqual({ error: { code: 'ToolFailed', message: 'x', retryable: true } });
  });
});
