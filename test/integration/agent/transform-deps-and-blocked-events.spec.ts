import 'reflect-metadata';
import { IsString } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  Transform,
  Requires,
  ScriptedModel,
  block,
  type HookContext,
  type TrellisEvent,
  type ToolCallInfo,
} from '../../../index.js';
import type { InferenceRequest } from '../../../plugin.js';

class Text {
  @IsString() text!: string;
}

@Plugin({ name: 'shop', version: '1.0.0' })
class Shop {
  @Tool({ name: 'shop.wipe', description: 'Deletes everything. Never use.', input: Text, tags: ['dangerous'] })
  wipe() {
    return 'wiped';
  }
}

@Plugin({ name: 'guard', version: '1.0.0' })
class Guard {
  seen: ToolCallInfo[] = [];
  @Hook('tool.gate')
  gate(call: ToolCallInfo) {
    this.seen.push(call);
    if (call.tags.includes('dangerous')) return block('dangerous tools are not allowed');
    return undefined;
  }
}

@Plugin({ name: 'plan', version: '1.0.0' })
class PlanByTier {
  @Transform()
  @Requires('app.tier')
  pick(request: InferenceRequest, ctx: HookContext): InferenceRequest {
    return { ...request, inference: { ...request.inference, model: ctx.deps['app.tier'] === 'pro' ? 'big' : 'small' } };
  }
}

describe('transforms and gate blocks', () => {
  it('resolves a transform’s @Requires keys into ctx.deps', async () => {
    const app = Trellis.create();
    await app.install(PlanByTier);
    const model = new ScriptedModel(['hi']);
    await app
      .agent({ name: 'a', model, instructions: 'x' })
      .session('s', { context: { 'app.tier': 'pro' } })
      .send('hello');
    expect(model.calls[0]!.inference.model).toBe('big');
  });

  it('fails the turn with MissingContext when a transform’s required key is absent', async () => {
    const app = Trellis.create();
    await app.install(PlanByTier);
    const result = await app
      .agent({ name: 'a', model: new ScriptedModel(['hi']), instructions: 'x' })
      .session('s')
      .send('hello');
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('MissingContext');
    expect(result.error?.message).toContain('app.tier');
  });

  it('gives gates the tool’s tags, and a blocked call still emits tool.finished', async () => {
    const app = Trellis.create();
    await app.install(Shop);
    const guard = (await app.install(Guard)).instance;
    const model = new ScriptedModel([{ toolCalls: [{ name: 'shop.wipe', args: { text: 'all' } }] }, 'never']);
    const session = app.agent({ name: 'a', model, instructions: 'x' }).session('s');
    const events: TrellisEvent[] = [];
    const sub = session.events$.subscribe((e) => events.push(e));
    const result = await session.send('wipe it');
    sub.unsubscribe();
    expect(result.status).toBe('blocked');
    expect(guard.seen[0]!.tags).toEqual(['dangerous']);
    const started = events.filter((e) => e.type === 'tool.started');
    const finished = events.filter((e) => e.type === 'tool.finished');
    expect(started).toHaveLength(1);
    expect(finished).toHaveLength(1);
    expect(finished[0]).toMatchObject({ ok: false, error: { code: 'Blocked' } });
  });
});
