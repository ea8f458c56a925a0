import 'reflect-metadata';
import { injectable } from 'inversify';
import { IsString, ValidateBy } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  Transform,
  Middleware,
  Requires,
  ScriptedModel,
  MemoryStore,
  type ToolContext,
  type HookContext,
  type ToolInvocation,
  type NextToolHandler,
  type ToolResult,
  type ToolCallInfo,
  type ModelRequest,
} from '../../../index.js';
import type { ToolCallOutcome, TurnExchange, InferenceRequest } from '../../../plugin.js';
import type { SessionCheckpoint } from '../../../stores.js';

/** Everything the recording plugin, middleware, validator, model and store see, in order. */
let log: string[] = [];

class EchoInput {
  @IsString()
  @ValidateBy({
    name: 'recorded',
    validator: { validate: (value: unknown) => (log.push(`validate:${String(value)}`), true) },
  })
  text!: string;
}

@injectable()
class RecordingMiddleware {
  async intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    log.push(`middleware:${call.tool}`);
    return next();
  }
}

@Plugin({ name: 'rec', version: '1.0.0' })
@Middleware(RecordingMiddleware)
class RecordingPlugin {
  @Tool({ name: 'rec.a', description: 'Echoes text. Use in tests only.', input: EchoInput })
  a(input: EchoInput, _ctx: ToolContext) {
    log.push('tool:rec.a');
    return `a:${input.text}`;
  }
  @Tool({ name: 'rec.b', description: 'Echoes text. Use in tests only.', input: EchoInput })
  b(input: EchoInput, _ctx: ToolContext) {
    log.push('tool:rec.b');
    return `b:${input.text}`;
  }
  @Hook('message.received') received(message: string) {
    log.push('message.received');
    return message;
  }
  @Hook('task.start') taskStart() {
    log.push('task.start');
  }
  @Hook('planning.started') planning(instructions: string) {
    log.push('planning.started');
    return instructions;
  }
  @Hook('memory.read') memoryRead() {
    log.push('memory.read');
    return [];
  }
  @Hook('tool.register') toolRegister() {
    log.push('tool.register');
    return [];
  }
  @Hook('tool.select') toolSelect() {
    log.push('tool.select');
  }
  @Transform() transform(request: InferenceRequest) {
    log.push('transform');
    return request;
  }
  @Hook('llm.before') llmBefore() {
    log.push('llm.before');
  }
  @Hook('llm.after') llmAfter() {
    log.push('llm.after');
  }
  @Hook('tool.gate') gate(call: ToolCallInfo) {
    log.push(`tool.gate:${call.tool}`);
  }
  @Hook('tool.before_call') beforeCall(call: ToolCallInfo) {
    log.push(`tool.before_call:${call.tool}`);
  }
  @Hook('tool.after_call') afterCall(outcome: ToolCallOutcome) {
    log.push(`tool.after_call:${outcome.call.tool}`);
  }
  @Hook('tool.error') toolError(outcome: ToolCallOutcome) {
    log.push(`tool.error:${outcome.call.tool}`);
  }
  @Hook('memory.write') memoryWrite(item: ToolCallOutcome | TurnExchange) {
    log.push(item.kind === 'exchange' ? 'memory.write:exchange' : `memory.write:${item.call.tool}`);
  }
  @Hook('message.sending') sending(reply: string) {
    log.push('message.sending');
    return reply;
  }
  @Hook('task.end') taskEnd() {
    log.push('task.end');
  }
}

class RecordingStore extends MemoryStore {
  override async checkpoint(checkpoint: SessionCheckpoint): Promise<number> {
    log.push('checkpoint');
    return super.checkpoint(checkpoint);
  }
}

const ROUND = ['memory.read', 'tool.register', 'tool.select', 'transform', 'llm.before', 'model', 'llm.after'];
const call = (tool: string, text: string) => [
  `tool.gate:${tool}`,
  `tool.before_call:${tool}`,
  `validate:${text}`,
  `middleware:${tool}`,
  `tool:${tool}`,
  `tool.after_call:${tool}`,
  `memory.write:${tool}`,
];

function twoCallModel(): ScriptedModel {
  return new ScriptedModel((_request, index) => {
    log.push('model');
    return index === 0
      ? {
          toolCalls: [
            { name: 'rec.a', args: { text: 'x' } },
            { name: 'rec.b', args: { text: 'y' } },
          ],
        }
      : 'all done';
  });
}

beforeEach(() => {
  log = [];
});

describe('a turn runs every hook point in the documented order', () => {
  it('records the exact sequence of a 2-round turn with two tool calls (toolConcurrency 1)', async () => {
    const app = Trellis.create({ store: new RecordingStore() });
    await app.install(RecordingPlugin);
    const agent = app.agent({ name: 'order', model: twoCallModel(), instructions: 'Test.', toolConcurrency: 1 });

    const result = await agent.session('s1').send('go');

    expect(result.status).toBe('completed');
    expect(result.reply).toBe('all done');
    expect(log).toEqual([
      'message.received',
      'task.start',
      'planning.started',
      ...ROUND,
      ...call('rec.a', 'x'),
      ...call('rec.b', 'y'),
      ...ROUND,
      'message.sending',
      'memory.write:exchange',
      'task.end',
      'checkpoint',
    ]);
  });

  it('runs a failing call through tool.error instead of tool.after_call', async () => {
    const app = Trellis.create();
    await app.install(RecordingPlugin);
    const model = new ScriptedModel((_r, index) => {
      log.push('model');
      return index === 0 ? { toolCalls: [{ name: 'rec.a', args: { text: 7 } }] } : 'ok';
    });
    const agent = app.agent({ name: 'order', model, instructions: 'Test.' });

    await agent.session('s1').send('go');

    // Invalid input: validation fails, so neither middleware nor the tool runs.
    const calls = log.slice(log.indexOf('tool.gate:rec.a'), log.indexOf('memory.write:rec.a') + 1);
    expect(calls).toEqual([
      'tool.gate:rec.a',
      'tool.before_call:rec.a',
      'validate:7',
      'tool.error:rec.a',
      'memory.write:rec.a',
    ]);
  });
});

describe('the result is recorded between tool.after_call and memory.write', () => {
  it('<tool>.result is not set at tool.after_call and is set at memory.write', async () => {
    const seen: [string, unknown][] = [];
    class In {
      @IsString() text!: string;
    }
    @Plugin({ name: 'rr', version: '1.0.0' })
    class ResultReader {
      @Tool({ name: 'rr.echo', description: 'Echoes. Tests only.', input: In })
      echo(input: In) {
        return input.text;
      }
      @Hook('tool.after_call')
      @Requires({ key: 'rr.echo.result', optional: true })
      after(_o: unknown, ctx: HookContext) {
        seen.push(['tool.after_call', ctx.deps['rr.echo.result']]);
      }
      @Hook('memory.write')
      @Requires({ key: 'rr.echo.result', optional: true })
      write(item: ToolCallOutcome | TurnExchange, ctx: HookContext) {
        if (item.kind === 'tool_result') seen.push(['memory.write', ctx.deps['rr.echo.result']]);
      }
    }
    const app = Trellis.create();
    await app.install(ResultReader);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'rr.echo', args: { text: 'hi' } }] }, 'ok']);
    await app.agent({ name: 'rr', model, instructions: 'x' }).session('s').send('go');
    expect(seen).toEqual([
      ['tool.after_call', undefined],
      ['memory.write', 'hi'],
    ]);
  });
});

describe('tool calls of one round run concurrently up to toolConcurrency', () => {
  function overlapPlugin() {
    let bStarted!: () => void;
    const bStart = new Promise<void>((resolve) => (bStarted = resolve));
    class Input {
      @IsString() text!: string;
    }
    @Plugin({ name: 'lap', version: '1.0.0' })
    class OverlapPlugin {
      @Tool({ name: 'lap.a', description: 'Waits for lap.b to start. Tests only.', input: Input })
      async a() {
        const waited = await Promise.race([
          bStart.then(() => 'saw b start'),
          new Promise((r) => setTimeout(() => r('b never started'), 300)),
        ]);
        // Finish after b, so call order and completion order differ.
        await new Promise((r) => setTimeout(r, 20));
        log.push('a finished');
        return waited;
      }
      @Tool({ name: 'lap.b', description: 'Starts, then returns. Tests only.', input: Input })
      async b() {
        bStarted();
        log.push('b finished');
        return 'b result';
      }
    }
    return OverlapPlugin;
  }
  const script = () =>
    new ScriptedModel([
      {
        toolCalls: [
          { name: 'lap.a', args: { text: '1' } },
          { name: 'lap.b', args: { text: '2' } },
        ],
      },
      'fine',
    ]);

  it('with concurrency 2, call A sees call B start, yet results reach the model in call order', async () => {
    const app = Trellis.create();
    await app.install(overlapPlugin());
    const model = script();
    const agent = app.agent({ name: 'lap', model, instructions: 'Test.', toolConcurrency: 2 });

    const result = await agent.session('s1').send('go');

    expect(result.status).toBe('completed');
    expect(log).toEqual(['b finished', 'a finished']);
    const toolMessages = (model.calls[1] as ModelRequest).messages.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => [m.name, m.content])).toEqual([
      ['lap.a', 'saw b start'],
      ['lap.b', 'b result'],
    ]);
    expect(result.toolCalls.map((c) => c.tool)).toEqual(['lap.a', 'lap.b']);
  });

  it('with concurrency 1, call B does not start until call A finished', async () => {
    const app = Trellis.create();
    await app.install(overlapPlugin());
    const model = script();
    const agent = app.agent({ name: 'lap', model, instructions: 'Test.', toolConcurrency: 1 });

    await agent.session('s1').send('go');

    expect(log).toEqual(['a finished', 'b finished']);
    const toolMessages = (model.calls[1] as ModelRequest).messages.filter((m) => m.role === 'tool');
    expect(toolMessages[0]!.content).toBe('b never started');
  });
});

describe('maxRounds counts model calls only', () => {
  class Input {
    @IsString() text!: string;
  }
  @Plugin({ name: 'loop', version: '1.0.0' })
  class LoopPlugin {
    @Tool({ name: 'loop.step', description: 'One step. Tests only.', input: Input })
    step() {
      return 'stepped';
    }
  }

  it('ends max_rounds after exactly maxRounds model calls, however many tool calls each asked for', async () => {
    const app = Trellis.create();
    await app.install(LoopPlugin);
    const model = new ScriptedModel(() => ({
      toolCalls: [
        { name: 'loop.step', args: { text: '1' } },
        { name: 'loop.step', args: { text: '2' } },
        { name: 'loop.step', args: { text: '3' } },
      ],
    }));
    const agent = app.agent({ name: 'loop', model, instructions: 'Test.', maxRounds: 3 });

    const result = await agent.session('s1').send('go');

    expect(result.status).toBe('max_rounds');
    expect(result.rounds).toBe(3);
    expect(model.calls).toHaveLength(3);
    expect(result.toolCalls).toHaveLength(9);
  });

  it('completes when the answer comes on the last allowed model call', async () => {
    const app = Trellis.create();
    await app.install(LoopPlugin);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'loop.step', args: { text: '1' } }] }, 'answer']);
    const agent = app.agent({ name: 'loop', model, instructions: 'Test.', maxRounds: 2 });

    const result = await agent.session('s1').send('go');

    expect(result.status).toBe('completed');
    expect(result.rounds).toBe(2);
  });
});
