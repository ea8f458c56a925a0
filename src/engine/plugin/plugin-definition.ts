import type { ServiceIdentifier } from 'inversify';
import type { PluginOptions } from '../../../decorators/plugin.decorator.js';
import type { ToolOptions } from '../../../decorators/tool.decorator.js';
import type { StateKeyMetadata } from '../../../decorators/state-key.decorator.js';
import type { ContextKeySpec } from '../../contract/context-key.js';
import type { HookPoint } from '../../contract/hook-points.js';
import type { MiddlewareDeclaration } from '../../contract/tool-middleware.js';

export type PluginClass<T = object> = new (...args: any[]) => T;

/** What the explorer read from a plugin class's decorators; nothing is bound yet. */
export interface PluginDefinition {
  readonly type: PluginClass;
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly priority: number;
  readonly tags: readonly string[];
  /** The owning team (`@Plugin({ owner })`), when given. */
  readonly owner?: string;
  readonly dependsOn: readonly string[];
  /** The semver range each dependency must satisfy, by name (`dependsOn: { billing: '^2.1.0' }`); names given without one have none. */
  readonly dependsOnRanges: Readonly<Record<string, string>>;
  /** The DI tokens this plugin owns and may `host.export`; no other plugin may declare or export them. */
  readonly exports: readonly ServiceIdentifier[];
  readonly configType?: new () => object;
  readonly classRequires: readonly ContextKeySpec[];
  readonly classMiddleware: readonly MiddlewareDeclaration[];
  readonly tools: readonly {
    readonly method: string;
    readonly options: ToolOptions;
    readonly requires: readonly ContextKeySpec[];
    readonly middleware: readonly MiddlewareDeclaration[];
  }[];
  readonly hooks: readonly {
    readonly method: string;
    readonly point: HookPoint;
    readonly priority: number;
    readonly requires: readonly ContextKeySpec[];
  }[];
  readonly transforms: readonly {
    readonly method: string;
    readonly priority: number;
    readonly requires: readonly ContextKeySpec[];
  }[];
  readonly stateKeys: readonly StateKeyMetadata[];
  readonly effects: readonly {
    readonly method: string;
    readonly key: string;
    readonly requires: readonly ContextKeySpec[];
  }[];
  readonly actions: readonly {
    readonly method: string;
    readonly key: string;
    readonly requires: readonly ContextKeySpec[];
  }[];
  readonly selfTests: readonly string[];
}

export type { PluginOptions };
