import { Hook, Plugin, type HookPoint, type PluginClass } from '../index.js';
import { HOOK_POINTS } from '../plugin.js';
import { counters } from './workload.js';

const EVERY_POINT = Object.keys(HOOK_POINTS) as HookPoint[];

/**
 * A plugin with one cheap handler on each given point (every point by default): it counts
 * and returns nothing, which keeps the value at pipelines and allows at gates.
 */
export function hookPlugin(name: string, points: readonly HookPoint[] = EVERY_POINT): PluginClass {
  class HookPlugin {}
  const proto = HookPlugin.prototype as unknown as Record<string, unknown>;
  for (const point of points) {
    const method = `on_${point.replace('.', '_')}`;
    proto[method] = function cheapHook(): undefined {
      counters.hooks++;
      return undefined;
    };
    Hook(point)(proto, method, Object.getOwnPropertyDescriptor(proto, method)!);
  }
  Plugin({ name, version: '1.0.0', description: 'A cheap hook on every point' })(HookPlugin);
  return HookPlugin;
}

export function hookPlugins(count: number, prefix: string, points?: readonly HookPoint[]): PluginClass[] {
  return Array.from({ length: count }, (_, i) => hookPlugin(`${prefix}${String(i).padStart(3, '0')}`, points));
}
