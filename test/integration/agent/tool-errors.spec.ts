import 'reflect-metadata';
import {
  Trellis,
  Plugin,
  Tool,
  Middleware,
  ScriptedModel,
  AuthMiddleware,
  RetryMiddleware,
  TimeoutMiddleware,
  TrellisError,
  done,
  type ToolContext,
  type ModelRequest,
} from '../../../index.js';

class NoInput {}

let attempts = 0;
let secretRuns = 0;
let hangAborted = false;

@Plugin({ name: 'err', version: '1.0.0' })
class ErrorPlugin {
  @Tool({ name: 'err.throws', description: 'Always throws. Tests only.', input: NoInput })
  throws() {
    throw new Error('disk on fire');
  }

  @Tool({ name: 'err.hangs', description: 'Never answers. Tests only.', input: NoInput, timeoutMs: 30 })
  hangs(_input: NoInput, ctx: ToolContext) {
    return new Promise((_, reject) =>
      ctx.signal.addEventListener('abort', () => {
        hangAborted = true;
        reject(new Error('aborted'));
      }),
    );
  }

  @Tool({ name: 'err.secret', description: 'Needs a scope. Tests only.', input: NoInput })
  @Middleware(AuthMiddleware, { scopes: ['secret:read'] })
  secret() {
    secretRuns++;
    return 'the secret';
  }

  @Tool({
    name: 'err.flaky',
    description: 'Fails twice with a retryable error, then works. Tests only.',
    input: NoInput,
  })
  @Middleware(RetryMiddleware, { maxRetries: 3, baseDelayMs: 1 })
  flaky() {
    attempts++;
    if (attempts < 3) throw new TrellisError('ToolFailed', 'upstream busy', { retryable: true });
    return `ok after ${attempts}`;
  }

  @Tool({ name: 'err.fatal', description: 'Fails with a non-retryable error. Tests only.', input: NoInput })
  @Middleware(RetryMiddleware, { maxRetries: 3, baseDelayMs: 1 })
  fatal() {
    attempts++;
    throw new TrellisError('ToolFailed', 'bad request', { retryable: false });
  }

  @Tool({ name: 'err.slowmw', description: 'Hangs under a TimeoutMiddleware. Tests only.', input: NoInput })
  @Middleware(TimeoutMiddleware, { ms: 30 })
  slowmw(_input: NoInput, ctx: ToolContext) {
    return new Promise((_, reject) =>
      ctx.signal.addEventListener('abort', () => {
        hangAborted = true;
        reject(new Error('aborted'));
      }),
    );
  }

  @Tool({ name: 'err.finish', description: 'Ends the turn. Tests only.', input: NoInput })
  finish() {
    return done('Finished by the tool');
  }
}

type Seen = { error: { code: string; message: string; retryable: boolean } };

function seenBy(request: ModelRequest, index = 0): Seen {
  const messages = request.messages.filter((m) => m.role === 'tool');
  return JSON.parse(messages[index]!.content) as Seen;
}

async function runOne(tool: string, context: Record<string, unknown> = {}) {
  const app = Trellis.create();
  await app.install(ErrorPlugin);
  const model = new ScriptedModel([{ toolCalls: [{ name: tool, args: {} }] }, 'recovered']);
  const session = app.agent({ name: 'e', model, instructions: 'x' }).session('s', { context });
  const result = await session.send('go');
  return { result, model, session };
}

beforeEach(() => {
  attempts = 0;
  secretRuns = 0;
  hangAborted = false;
});

describe('errors are results the model sees, never a crashed turn', () => {
  it('a throwing tool', async () => {
    const { result, model } = await runOne('err.throws');
    expect(result.status).toBe('completed');
    expect(result.reply).toBe('recovered');
    expect(seenBy(model.calls[1]!)).toEqual({
      error: { code: 'ToolFailed', message: expect.stringContaining('disk on fire'), retryable: false },
    });
  });

  it('a tool that hangs past its timeoutMs is stopped, and its signal aborted', async () => {
    const started = Date.now();
    const { result, model } = await runOne('err.hangs');
    expect(result.status).toBe('completed');
    expect(seenBy(model.calls[1]!)).toEqual({
      error: { code: 'ToolTimeout', message: expect.stringContaining('30 ms'), retryable: true },
    });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(hangAborted).toBe(true);
  });

  it('a TimeoutMiddleware expiry is a ToolTimeout result, and the tool sees its signal abort', async () => {
    const { result, model } = await runOne('err.slowmw');
    expect(result.status).toBe('completed');
    expect(seenBy(model.calls[1]!).error).toMatchObject({ code: 'ToolTimeout', retryable: true });
    expect(hangAborted).toBe(true);
  });

  it('an AuthMiddleware denial never reaches the tool', async () => {
    const { result, model } = await runOne('err.secret', { 'app.scopes': ['other'] });
    expect(result.status).toBe('completed');
    expect(secretRuns).toBe(0);
    expect(seenBy(model.calls[1]!)).toEqual({
      error: { code: 'AuthDenied', message: expect.stringContaining('secret:read'), retryable: false },
    });
  });

  it('an AuthMiddleware with the scope granted lets the call through', async () => {
    const { result } = await runOne('err.secret', { 'app.scopes': ['secret:read'] });
    expect(secretRuns).toBe(1);
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: 'the secret' });
  });

  it('a tool the model made up is ToolNotFound, naming the tools it can call', async () => {
    const { result, model } = await runOne('err.nope');
    expect(result.status).toBe('completed');
    const seen = seenBy(model.calls[1]!);
    expect(seen.error.code).toBe('ToolNotFound');
    expect(seen.error.message).toContain('err.throws');
    expect(seen.error.retryable).toBe(false);
  });
});

describe('RetryMiddleware inside the turn', () => {
  it('retries a retryable failure until it works; the model sees only the success', async () => {
    const { result, model } = await runOne('err.flaky');
    expect(attempts).toBe(3);
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: 'ok after 3' });
    expect(model.calls[1]!.messages.filter((m) => m.role === 'tool')[0]!.content).toBe('ok after 3');
  });

  it('does not retry a non-retryable failure', async () => {
    const { result } = await runOne('err.fatal');
    expect(attempts).toBe(1);
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolFailed', retryable: false } });
  });
});

describe("a tool's done(value)", () => {
  it('ends the turn with that value as the reply, without another model call', async () => {
    const { result, model, session } = await runOne('err.finish');
    expect(result.status).toBe('completed');
    expect(result.reply).toBe('Finished by the tool');
    expect(result.rounds).toBe(1);
    expect(model.calls).toHaveLength(1);
    expect(session.transcript.at(-1)).toEqual({ role: 'assistant', content: 'Finished by the tool' });
  });
});
