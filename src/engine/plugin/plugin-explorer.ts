import 'reflect-metadata';
import { METADATA, readList } from '../../../decorators/metadata-keys.js';
import type { PluginOptions } from '../../../decorators/plugin.decorator.js';
import type { HookMetadata, TransformMetadata } from '../../../decorators/hook.decorator.js';
import type { ToolMetadata } from '../../../decorators/tool.decorator.js';
import type { StateKeyMetadata } from '../../../decorators/state-key.decorator.js';
import type { KeyedHandlerMetadata } from '../../../decorators/on-effect.decorator.js';
import { CLASS_MEMBER } from '../../../decorators/requires.decorator.js';
import type { ContextKeySpec } from '../../contract/context-key.js';
import semver from 'semver';
import { TrellisError } from '../../errors/trellis-error.js';
import { isHookPoint, HOOK_POINT_NAMES } from '../../contract/hook-points.js';
import type { MiddlewareDeclaration } from '../../contract/tool-middleware.js';
import { describeToken } from './kernel-guard.js';
import { inNamespace, reservedBy, reservedNamespace, tokenName } from './namespaces.js';
import type { PluginClass, PluginDefinition } from './plugin-definition.js';

const NAME = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$/i;
export const DEFAULT_PRIORITY = 100;

/**
 * Whether a value is a class decorated with `@Plugin` (its own decorator, not a parent's):
 * how a host picks the plugin classes out of a module it imported.
 *
 * @example
 * const classes = Object.values(await import(file)).filter(isPluginClass);
 */
export function isPluginClass(value: unknown): value is PluginClass {
  return typeof value === 'function' && Reflect.hasOwnMetadata(METADATA.plugin, value);
}

/**
 * Reads a plugin class's decorator metadata into a definition, checking what can be
 * checked without the rest of the app (the registry checks uniqueness and dependencies).
 */
export function explorePlugin(type: unknown): PluginDefinition {
  if (!isPluginClass(type)) {
    const name = typeof type === 'function' ? type.name : typeof type;
    throw new TrellisError('InvalidPlugin', `${name || 'The value'} is not a plugin class`, {
      hint: 'Decorate the class with @Plugin({ name, version })',
    });
  }
  const options = Reflect.getOwnMetadata(METADATA.plugin, type) as PluginOptions;
  const problems: string[] = [];
  if (typeof options.name !== 'string' || !NAME.test(options.name))
    problems.push(`name '${String(options.name)}' must be letters, digits, '-', '_' in dot-separated parts`);
  if (typeof options.version !== 'string' || options.version.length === 0) problems.push('version is required');
  const reserved = typeof options.name === 'string' ? reservedNamespace(options.name) : undefined;
  if (reserved !== undefined) problems.push(`name '${options.name}' is reserved: ${reservedBy(reserved)}`);
  if (options.owner !== undefined && (typeof options.owner !== 'string' || !OWNER.test(options.owner)))
    problems.push(
      `owner ${JSON.stringify(options.owner)} must be a team name: letters, digits, '.', '_', '-', at most 64 characters (e.g. 'team-payments')`,
    );
  const dependencies = readDependencies(options.dependsOn, problems);
  const proto = type.prototype as Record<string, unknown>;
  const requiresMap =
    (Reflect.getOwnMetadata(METADATA.requires, type) as Map<string, ContextKeySpec[]> | undefined) ?? new Map();
  const middlewareMap =
    (Reflect.getOwnMetadata(METADATA.middleware, type) as Map<string, MiddlewareDeclaration[]> | undefined) ??
    new Map();
  const requires = (method: string) => requiresMap.get(method) ?? [];
  const checkMethod = (method: string, what: string) => {
    if (typeof proto[method] !== 'function') problems.push(`${what} '${method}' is not a method`);
  };
  const priority = options.priority ?? DEFAULT_PRIORITY;

  const tools = readList<ToolMetadata>(METADATA.tools, type).map(({ method, options: tool }) => {
    checkMethod(method, '@Tool');
    if (typeof tool.name !== 'string' || !NAME.test(tool.name))
      problems.push(
        `tool name '${String(tool.name)}' on ${method} must be letters, digits, '-', '_' in dot-separated parts`,
      );
    const toolReserved = typeof tool.name === 'string' ? reservedNamespace(tool.name) : undefined;
    if (toolReserved !== undefined)
      problems.push(`tool name '${tool.name}' on ${method} is reserved: ${reservedBy(toolReserved)}`);
    if (typeof tool.description !== 'string' || tool.description.trim().length === 0)
      problems.push(`tool '${tool.name}' needs a description (it is the model's prompt for the tool)`);
    const hasSchema =
      typeof tool.inputSchema === 'object' && tool.inputSchema !== null && !Array.isArray(tool.inputSchema);
    if ((typeof tool.input === 'function') === hasSchema)
      problems.push(
        `tool '${tool.name}' needs exactly one of input (a DTO class) or inputSchema (a JSON Schema object)`,
      );
    if (tool.onCrash !== undefined && tool.onCrash !== 'retry' && tool.onCrash !== 'ask')
      problems.push(`tool '${tool.name}' has onCrash ${JSON.stringify(tool.onCrash)}; use 'retry' or 'ask'`);
    if (tool.onCrash === 'ask' && tool.idempotent === true)
      problems.push(
        `tool '${tool.name}' is declared idempotent (retried after a crash) and onCrash: 'ask' at once; keep one`,
      );
    return { method, options: tool, requires: requires(method), middleware: middlewareMap.get(method) ?? [] };
  });
  const hooks = readList<HookMetadata>(METADATA.hooks, type).map(({ method, point, priority: p }) => {
    checkMethod(method, '@Hook');
    if (!isHookPoint(point))
      problems.push(`@Hook('${String(point)}') on ${method}: unknown point (known: ${HOOK_POINT_NAMES.join(', ')})`);
    return { method, point, priority: p ?? priority, requires: requires(method) };
  });
  const transforms = readList<TransformMetadata>(METADATA.transforms, type).map(({ method, priority: p }) => {
    checkMethod(method, '@Transform');
    return { method, priority: p ?? priority, requires: requires(method) };
  });
  const stateKeys = readList<StateKeyMetadata>(METADATA.stateKeys, type);
  for (const key of stateKeys) {
    if (!key.key.startsWith(`${options.name}.`))
      problems.push(`state key '${key.key}' must be in the plugin's namespace '${options.name}.*'`);
    if (!['session', 'turn', 'execution'].includes(key.scope))
      problems.push(`state key '${key.key}': scope must be session, turn or execution`);
    if (!['exclusive', 'commutative'].includes(key.merge))
      problems.push(`state key '${key.key}': merge must be exclusive or commutative`);
    if (key.persistent && key.scope !== 'session')
      problems.push(`state key '${key.key}': only session keys can be persistent`);
  }
  // An effect handler listens to effects others emit (in their namespaces); an action handler owns its action.
  const keyed = (list: readonly KeyedHandlerMetadata[], what: string) =>
    list.map(({ method, key }) => {
      checkMethod(method, what);
      const keyReserved = typeof key === 'string' ? reservedNamespace(key) : undefined;
      if (keyReserved === 'trellis' || (keyReserved !== undefined && what === '@OnAction'))
        problems.push(`${what}('${key}') on ${method}: ${reservedBy(keyReserved)}`);
      return { method, key, requires: requires(method) };
    });
  const exports = options.exports ?? [];
  if (!Array.isArray(exports)) problems.push('exports must be a list of DI tokens');
  for (const token of Array.isArray(exports) ? exports : []) {
    const name = tokenName(token);
    const tokenReserved = name === undefined ? undefined : reservedNamespace(name);
    if (tokenReserved !== undefined)
      problems.push(`exported token '${name}' is reserved: ${reservedBy(tokenReserved)}`);
    else if (
      name !== undefined &&
      name.includes('.') &&
      typeof options.name === 'string' &&
      !inNamespace(name, options.name)
    ) {
      problems.push(
        `exported token '${name}' is named in another namespace: a dotted token name must be in '${options.name}.*'`,
      );
    } else if (typeof token !== 'string' && typeof token !== 'symbol' && typeof token !== 'function')
      problems.push(`exported token ${describeToken(token)} is not a class, symbol or string`);
  }
  const selfTests = readList<string>(METADATA.selfTests, type);
  selfTests.forEach((method) => checkMethod(method, '@SelfTest'));

  if (problems.length > 0) {
    throw new TrellisError('InvalidPlugin', `Plugin ${type.name} is invalid:\n- ${problems.join('\n- ')}`, {
      hint: 'Fix the decorators listed above',
      details: { plugin: options.name, problems },
    });
  }
  return {
    type,
    name: options.name,
    version: options.version,
    description: options.description ?? '',
    priority,
    tags: options.tags ?? [],
    ...(options.owner !== undefined && { owner: options.owner }),
    dependsOn: dependencies.names,
    dependsOnRanges: dependencies.ranges,
    exports: Array.isArray(exports) ? exports : [],
    configType: options.config,
    classRequires: requires(CLASS_MEMBER),
    classMiddleware: middlewareMap.get(CLASS_MEMBER) ?? [],
    tools,
    hooks,
    transforms,
    stateKeys,
    effects: keyed(readList(METADATA.effects, type), '@OnEffect'),
    actions: keyed(readList(METADATA.actions, type), '@OnAction'),
    selfTests,
  };
}

/** A team name: what `@Plugin({ owner })` takes. */
const OWNER = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** `dependsOn` as names, or names with semver ranges; each range checked with `semver.validRange`. */
function readDependencies(
  dependsOn: PluginOptions['dependsOn'],
  problems: string[],
): { names: string[]; ranges: Record<string, string> } {
  if (dependsOn === undefined) return { names: [], ranges: {} };
  if (Array.isArray(dependsOn)) {
    if (!dependsOn.every((n) => typeof n === 'string' && n.length > 0))
      problems.push('dependsOn must list plugin names, or map names to semver ranges');
    return { names: [...dependsOn], ranges: {} };
  }
  if (typeof dependsOn !== 'object' || dependsOn === null) {
    problems.push("dependsOn must list plugin names, or map names to semver ranges ({ billing: '^2.1.0' })");
    return { names: [], ranges: {} };
  }
  const ranges: Record<string, string> = {};
  for (const [name, range] of Object.entries(dependsOn)) {
    if (typeof range !== 'string' || semver.validRange(range) === null)
      problems.push(`dependsOn.${name}: ${JSON.stringify(range)} is not a semver range (e.g. '^2.1.0', '>=1.4 <3')`);
    else ranges[name] = range;
  }
  return { names: Object.keys(dependsOn), ranges };
}
