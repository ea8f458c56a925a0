import 'reflect-metadata';
import { inject, injectable } from 'inversify';
import { IsString } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  Middleware,
  ScriptedModel,
  type ToolContext,
  type ToolInvocation,
  type NextToolHandler,
  type ToolResult,
} from '../../../index.js';
import { MIDDLEWARE_OPTIONS } from '../../../plugin.js';
import { kernelOf } from '../../../src/app/kernel-access.js';

let log: string[] = [];

class LabelOptions {
  @IsString() label!: string;
}

/** Records its label on the way in and out, so nesting is visible. */
@injectable()
class Label {
  static readonly optionsType = LabelOptions;
  constructor(@inject(MIDDLEWARE_OPTIONS) private readonly options: LabelOptions) {}
  async intercept(_call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    log.push(`>${this.options.label}`);
    const result = await next();
    log.push(`<${this.options.label}`);
    return result;
  }
}

class NoInput {}

@Plugin({ name: 'layers', version: '1.0.0' })
@Middleware(Label, { label: 'plugin1' })
@Middleware(Label, { label: 'plugin2' })
class LayersPlugin {
  @Tool({ name: 'layers.run', description: 'Runs. Tests only.', input: NoInput })
  @Middleware(Label, { label: 'method1' })
  @Middleware(Label, { label: 'method2' })
  run(_input: NoInput, _ctx: ToolContext) {
    log.push('tool');
    return 'ran';
  }
}

beforeEach(() => {
  log = [];
});

describe('middleware order', () => {
  it('runs app-wide, then plugin, then install-option, then method middleware; the first declared is outermost', async () => {
    const app = Trellis.create({
      middleware: [
        { type: Label, options: { label: 'app1' } },
        { type: Label, options: { label: 'app2' } },
      ],
    });
    await app.install(LayersPlugin, { middleware: [{ type: Label, options: { label: 'install' } }] });
    const model = new ScriptedModel([{ toolCalls: [{ name: 'layers.run', args: {} }] }, 'done']);

    const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('go');

    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: 'ran' });
    const inward = ['app1', 'app2', 'plugin1', 'plugin2', 'install', 'method1', 'method2'];
    expect(log).toEqual([...inward.map((l) => `>${l}`), 'tool', ...[...inward].reverse().map((l) => `<${l}`)]);
  });

  it('refuses invalid middleware options at install, naming the field', async () => {
    const app = Trellis.create();
    const install = app.install(LayersPlugin, { middleware: [{ type: Label, options: { label: 5 } }] });
    await expect(install).rejects.toMatchObject({ code: 'InvalidOptions' });
    await expect(install).rejects.toThrow(/label/);
    expect(kernelOf(app).registry.tools.has('layers.run')).toBe(false);
  });

  it('refuses invalid middleware options declared with @Middleware on a method', async () => {
    @Plugin({ name: 'badmw', version: '1.0.0' })
    class BadPlugin {
      @Tool({ name: 'badmw.run', description: 'Runs. Tests only.', input: NoInput })
      @Middleware(Label, { nope: true })
      run() {
        return 1;
      }
    }
    const app = Trellis.create();
    await expect(app.install(BadPlugin)).rejects.toMatchObject({ code: 'InvalidOptions' });
    expect(kernelOf(app).registry.tools.has('badmw.run')).toBe(false);
  });

  it('refuses invalid app-wide middleware options at Trellis.create', () => {
    expect(() => Trellis.create({ middleware: [{ type: Label, options: {} }] })).toThrow(/label/);
  });
});
