import { injectable } from 'inversify';
import { IsString } from 'class-validator';
import {
  Hook,
  Middleware,
  Plugin,
  Tool,
  Trellis,
  type HookPoint,
  type NextToolHandler,
  type PluginClass,
  type ToolInvocation,
  type ToolMiddleware,
  type ToolResult,
} from '../index.js';
import { HOOK_POINTS } from '../plugin.js';

const EVERY_POINT = Object.keys(HOOK_POINTS) as HookPoint[];

class InstallInput {
  @IsString() text!: string;
}

@injectable()
class PassMiddleware implements ToolMiddleware {
  intercept(_call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    return next();
  }
}

/** A typical small plugin: one tool with a DTO input and a middleware, and a hook on every point. */
export function typicalPlugin(name: string): PluginClass {
  class Typical {}
  const proto = Typical.prototype as unknown as Record<string, unknown>;
  proto['run'] = (input: InstallInput) => input.text;
  Tool({
    name: `${name}.run`,
    description: 'Returns the text. Use in the install benchmark only.',
    input: InstallInput,
  })(proto, 'run', Object.getOwnPropertyDescriptor(proto, 'run')!);
  Middleware(PassMiddleware)(proto, 'run', Object.getOwnPropertyDescriptor(proto, 'run')!);
  for (const point of EVERY_POINT) {
    const method = `on_${point.replace('.', '_')}`;
    proto[method] = () => undefined;
    Hook(point)(proto, method, Object.getOwnPropertyDescriptor(proto, method)!);
  }
  Plugin({ name, version: '1.0.0' })(Typical);
  return Typical;
}

export interface InstallFigures {
  readonly plugins: number;
  readonly totalMs: number;
  readonly perPluginMs: number;
  readonly medianMs: number;
  /** Mean install time of the first and the last tenth: growth shows a cost per installed plugin. */
  readonly firstTenthMs: number;
  readonly lastTenthMs: number;
}

export async function installFigures(count: number, runs = 3): Promise<InstallFigures> {
  let best: InstallFigures | undefined;
  for (let run = 0; run < runs; run++) {
    const classes = Array.from({ length: count }, (_, i) => typicalPlugin(`inst${run}-${String(i).padStart(3, '0')}`));
    const app = Trellis.create();
    const times: number[] = [];
    const started = performance.now();
    for (const type of classes) {
      const t = performance.now();
      await app.install(type);
      times.push(performance.now() - t);
    }
    const totalMs = performance.now() - started;
    if (app.describe().plugins.length !== count)
      throw new Error(`install: ${app.describe().plugins.length} of ${count} plugins installed`);
    const tenth = Math.max(1, Math.floor(count / 10));
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const sorted = [...times].sort((x, y) => x - y);
    const figures = {
      plugins: count,
      totalMs,
      perPluginMs: totalMs / count,
      medianMs: sorted[Math.floor(count / 2)]!,
      firstTenthMs: mean(times.slice(0, tenth)),
      lastTenthMs: mean(times.slice(-tenth)),
    };
    // The first run pays for JIT warm-up; keep the fastest, as for any timing.
    if (!best || figures.totalMs < best.totalMs) best = figures;
  }
  return best!;
}
