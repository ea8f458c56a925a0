import 'reflect-metadata';
import { IsOptional, IsString } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  ScriptedModel,
  Secret,
  LoggingMiddleware,
  Middleware,
  type TrellisEvent,
} from '../../../index.js';
import { createLogger, TRELLIS_LOGGER } from '../../../plugins/middleware/index.js';
import { describeError } from '../../../src/errors/describe-error.js';

const KEY = 'sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ123456';

class ConnectInput {
  @IsString() host!: string;
  @Secret() @IsString() pin!: string;
  @IsOptional() @IsString() accessToken?: string;
}

@Plugin({ name: 'vendor', version: '1.0.0' })
@Middleware(LoggingMiddleware)
class VendorPlugin {
  @Tool({ name: 'vendor.connect', description: 'Connects. Tests only.', input: ConnectInput })
  connect(input: ConnectInput) {
    return { connectedTo: input.host, pinLength: input.pin.length };
  }

  @Tool({ name: 'vendor.fail', description: 'Fails like a vendor SDK. Tests only.', input: ConnectInput })
  fail() {
    // What OpenAI's SDK says for a bad key, with the key in it.
    throw Object.assign(
      new Error(`401 Incorrect API key provided: ${KEY}. You can find your API key at https://platform.openai.com`),
      { headers: { authorization: `Bearer ${KEY}` } },
    );
  }

  @Tool({ name: 'vendor.throwObject', description: 'Throws a plain object. Tests only.', input: ConnectInput })
  throwObject() {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- a thrown non-Error is the case under test
    throw { status: 500, apiKey: KEY, detail: { password: 'hunter22' } };
  }

  @Hook('task.start')
  explode() {
    if (process.env.TRELLIS_TEST_EXPLODE === '1') throw new Error(`config failed with Authorization: Bearer ${KEY}`);
  }
}

async function run(tool: string, args: Record<string, unknown>) {
  const lines: string[] = [];
  const app = Trellis.create({
    providers: [
      {
        provide: TRELLIS_LOGGER,
        useValue: createLogger({ level: 'debug', destination: { write: (line: string) => void lines.push(line) } }),
      },
    ],
  });
  await app.install(VendorPlugin);
  const appEvents: TrellisEvent[] = [];
  app.events$.subscribe((e) => appEvents.push(e));
  const model = new ScriptedModel([{ toolCalls: [{ name: tool, args }] }, 'done']);
  const session = app.agent({ name: 'a', model, instructions: 'x' }).session('s');
  const sessionEvents: TrellisEvent[] = [];
  session.events$.subscribe((e) => sessionEvents.push(e));
  const result = await session.send('go');
  const seenByModel = JSON.stringify(model.calls[1]?.messages ?? []);
  await app.stop();
  const all = [...appEvents, ...sessionEvents];
  // model.delta carries the model's raw output in pieces: only secret shapes are scrubbed there (checked below).
  return {
    result,
    log: lines.join('\n'),
    events: JSON.stringify(all.filter((e) => e.type !== 'model.delta')),
    deltas: JSON.stringify(all.filter((e) => e.type === 'model.delta')),
    seenByModel,
  };
}

describe('secrets never reach logs, events or the model', () => {
  it('@Secret() fields and secret-named fields are redacted in logs and events; the tool still gets them', async () => {
    const { result, log, events } = await run('vendor.connect', {
      host: 'db1',
      pin: '4321',
      accessToken: 'tok-abcdef',
    });
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: { connectedTo: 'db1', pinLength: 4 } });
    for (const text of [log, events]) {
      expect(text).toContain('db1');
      expect(text).not.toContain('4321');
      expect(text).not.toContain('tok-abcdef');
      expect(text).toContain('[Redacted]');
    }
  });

  it('a vendor error echoing the API key reaches the model, the log and events scrubbed', async () => {
    const { result, log, events, seenByModel } = await run('vendor.fail', { host: 'h', pin: '1' });
    expect(result.toolCalls[0]).toMatchObject({
      ok: false,
      error: { code: 'ToolFailed', message: expect.stringContaining('Incorrect API key provided: [Redacted]') },
    });
    for (const text of [log, events, seenByModel, JSON.stringify(result)]) expect(text).not.toContain(KEY);
  });

  it('secret-shaped values in streamed tool-call arguments are scrubbed in model.delta events', async () => {
    const { deltas } = await run('vendor.connect', { host: KEY, pin: '1' });
    expect(deltas).toContain('[Redacted]');
    expect(deltas).not.toContain(KEY);
  });

  it('a thrown plain object becomes a message without its secrets', async () => {
    const { result, seenByModel, log } = await run('vendor.throwObject', { host: 'h', pin: '1' });
    expect(result.toolCalls[0]!.error!.message).toMatch(/status: 500/);
    for (const text of [seenByModel, log, JSON.stringify(result)]) {
      expect(text).not.toContain(KEY);
      expect(text).not.toContain('hunter22');
    }
  });

  it("a hook's error event carries a scrubbed message", async () => {
    process.env.TRELLIS_TEST_EXPLODE = '1';
    try {
      const { result, events } = await run('vendor.connect', { host: 'h', pin: '1' });
      expect(result.status).toBe('failed');
      expect(events).toContain('Bearer [Redacted]');
      expect(events).not.toContain(KEY);
      expect(JSON.stringify(result.error)).not.toContain(KEY);
    } finally {
      delete process.env.TRELLIS_TEST_EXPLODE;
    }
  });
});

describe('describeError', () => {
  it('reduces a vendor-style object with headers to its message, scrubbed', () => {
    expect(describeError({ message: `bad key ${KEY}`, headers: { 'x-api-key': KEY } })).toBe('bad key [Redacted]');
  });

  it('cuts a huge thrown object', () => {
    expect(describeError({ body: 'x'.repeat(50_000) }).length).toBeLessThan(2_100);
  });
});
