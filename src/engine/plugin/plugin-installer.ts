import { describeError } from '../../errors/describe-error.js';
import { Container } from 'inversify';
import { normalizeKey, type ContextKeySpec } from '../../contract/context-key.js';
import semver from 'semver';
import { TrellisError } from '../../errors/trellis-error.js';
import type { MiddlewareDeclaration } from '../../contract/tool-middleware.js';
import { dtoJsonSchema } from '../validation/dto-json-schema.js';
import { toolInputValidator } from '../validation/tool-input.js';
import { formatFieldErrors, validateDto } from '../validation/validate-dto.js';
import type { InstalledPlugin } from './installed-plugin.js';
import { buildMiddleware, validateMiddlewareOptions, type BuiltMiddleware } from './middleware-factory.js';
import type { PluginDefinition } from './plugin-definition.js';
import type { PluginMember, StateKeyEntry } from '../../contract/plugin-member.js';
import { PLUGIN_CONFIG, SESSION_STORE, TRELLIS_APP } from '../../contract/plugin-tokens.js';
import { missingInjectionError } from './constructor-metadata.js';
import { describeToken, kernelAccessOf } from './kernel-guard.js';
import { inNamespace } from './namespaces.js';
import type { PluginGrant } from './plugin-host.js';
import type { RegistrySnapshot } from './registry-snapshot.js';

/** What `app.install` accepts besides the class. */
export interface InstallOptions {
  /** Checked against the plugin's `config` DTO; injected as `PLUGIN_CONFIG`. */
  readonly config?: unknown;
  /** Extra tool middleware for every tool of this plugin, inside the class-level ones. */
  readonly middleware?: readonly MiddlewareDeclaration[];
  /** Install disabled: structural parts only until `app.enable(name)`. Default true. */
  readonly enabled?: boolean;
  /**
   * What the host hands this plugin beyond its sealed container, by name: `'events'` (the
   * app's event stream on its `PluginHost`), `'store'` (`SESSION_STORE`), `'app'`
   * (`TRELLIS_APP`, the whole kernel). Never given by default.
   */
  readonly grants?: readonly PluginGrant[];
  /**
   * An instance of the plugin class built elsewhere (by a host's own DI, e.g. NestJS),
   * used instead of building one in the plugin's container. It must be an instance of
   * exactly the class installed; config, middleware, grant and name checks are unchanged.
   */
  readonly instance?: object;
}

export interface InstallEnvironment {
  /** The container plugins resolve from: host providers, exports, guards; never the kernel. */
  readonly container: Container;
  /** What `grants` may bind in the plugin's own container. */
  readonly grantable: { readonly app: unknown; readonly store: unknown };
  readonly appMiddleware: readonly BuiltMiddleware[];
  readonly seq: number;
  /** On reload: the plugin being replaced, whose names may be reused. */
  readonly replacing?: string;
}

const INSTALL_OPTION_NAMES = ['config', 'middleware', 'enabled', 'grants', 'instance'] as const;

/**
 * The host's install options, read as own properties only, into an object with no prototype:
 * a key set on `Object.prototype` (`Object.prototype.grants = ['app']`) is no option.
 */
export function ownInstallOptions(options: InstallOptions | undefined): InstallOptions {
  const own = Object.create(null) as Record<string, unknown>;
  if (typeof options !== 'object' || options === null) return own;
  for (const name of INSTALL_OPTION_NAMES)
    if (Object.prototype.hasOwnProperty.call(options, name) && options[name] !== undefined) own[name] = options[name];
  return own;
}

/**
 * Checks a definition against the installed set and builds it: config validated, class
 * bound in its own child container, middleware built, members bound. Throws before
 * anything is registered; the caller publishes the result.
 */
export function preparePlugin(
  definition: PluginDefinition,
  given: InstallOptions,
  current: RegistrySnapshot,
  env: InstallEnvironment,
): InstalledPlugin {
  const options = ownInstallOptions(given);
  checkUnique(definition, current, env.replacing);
  const missing = definition.dependsOn.filter((name) => !current.byName.has(name) || name === env.replacing);
  if (missing.length > 0) {
    throw new TrellisError(
      'MissingDependency',
      `Plugin '${definition.name}' depends on ${missing.map((m) => `'${m}'`).join(', ')}, which ${missing.length > 1 ? 'are' : 'is'} not installed`,
      {
        hint: 'Install the plugins it depends on first',
        details: { plugin: definition.name, missing },
      },
    );
  }
  checkDependencyVersions(definition, current);
  const config = validateConfig(definition, options.config);
  const where = `Plugin '${definition.name}'`;
  const pluginDeclarations = [...definition.classMiddleware, ...(options.middleware ?? [])];
  const pluginOptions = pluginDeclarations.map((d) => validateMiddlewareOptions(d, where));
  const toolOptions = definition.tools.map((t) =>
    t.middleware.map((d) => validateMiddlewareOptions(d, `${where}, tool '${t.options.name}'`)),
  );

  const grants = checkGrants(definition.name, options.grants);
  const container = new Container({ parent: env.container });
  container.bind(PLUGIN_CONFIG).toConstantValue(config ?? {});
  if (grants.includes('app')) container.bind(TRELLIS_APP).toConstantValue(env.grantable.app);
  if (grants.includes('store') && env.grantable.store !== undefined)
    container.bind(SESSION_STORE).toConstantValue(env.grantable.store);
  const instance =
    options.instance === undefined
      ? construct(definition, container)
      : hostBuilt(definition, options.instance, container);
  const pluginMiddleware = pluginDeclarations.map((d, i) => buildMiddleware(d, pluginOptions[i], container));

  const name = definition.name;
  const member = (method: string, extra: readonly ContextKeySpec[] = []): PluginMember => {
    const requires = [...definition.classRequires, ...extra].map(normalizeKey);
    return {
      plugin: name,
      method,
      requires,
      declared: new Set(requires.map((r) => r.key)),
      fn: instance[method]!.bind(instance),
    };
  };
  const order = (index: number) => env.seq * 10_000 + index;

  const tools = definition.tools.map((tool, index) => {
    const own = tool.middleware.map((d, i) => buildMiddleware(d, toolOptions[index]![i], container));
    const chain = [...env.appMiddleware, ...pluginMiddleware, ...own];
    const base = member(tool.method, [...tool.requires, ...chain.flatMap((m) => m.requires)]);
    return {
      ...base,
      name: tool.options.name,
      description: tool.options.description,
      input: tool.options.input,
      output: tool.options.output,
      tags: tool.options.tags ?? [],
      timeoutMs: tool.options.timeoutMs,
      maxResultChars: tool.options.maxResultChars,
      onCrash: tool.options.onCrash ?? (tool.options.idempotent === true ? 'retry' : 'ask'),
      chain: chain.map((m) => m.instance),
      chainNames: chain.map((m) => m.name),
      schema: tool.options.inputSchema ?? dtoJsonSchema(tool.options.input!),
      validateInput: toolInputValidator(
        tool.options.input,
        tool.options.inputSchema,
        `tool '${tool.options.name}' of plugin '${name}'`,
      ),
    };
  });
  const stateKeys: StateKeyEntry[] = definition.stateKeys.map((k) => ({
    key: k.key,
    owner: name,
    scope: k.scope,
    merge: k.merge,
    persistent: k.persistent ?? false,
    retainOnUninstall: k.retainOnUninstall ?? false,
    default: k.default,
  }));
  // Each tool's latest result is recorded at turn level as `<tool>.result`.
  for (const tool of tools)
    stateKeys.push({
      key: `${tool.name}.result`,
      owner: name,
      scope: 'turn',
      merge: 'commutative',
      persistent: false,
      retainOnUninstall: false,
    });

  return {
    definition,
    instance,
    container,
    config,
    enabled: options.enabled ?? true,
    grants,
    seq: env.seq,
    hooks: definition.hooks.map((h, i) => ({
      ...member(h.method, h.requires),
      point: h.point,
      priority: h.priority,
      order: order(i),
    })),
    transforms: definition.transforms.map((t, i) => ({
      ...member(t.method, t.requires),
      priority: t.priority,
      order: order(i),
    })),
    tools,
    stateKeys,
    effects: definition.effects.map((e) => ({ ...member(e.method, e.requires), key: e.key })),
    actions: definition.actions.map((a) => ({ ...member(a.method, a.requires), key: a.key })),
  };
}

const GRANTS: readonly PluginGrant[] = ['events', 'store', 'app'];

function checkGrants(plugin: string, grants: readonly PluginGrant[] | undefined): readonly PluginGrant[] {
  if (grants === undefined) return [];
  const bad = Array.isArray(grants) ? grants.filter((g) => !GRANTS.includes(g)) : [String(grants)];
  if (bad.length > 0) {
    throw new TrellisError(
      'InvalidOptions',
      `Plugin '${plugin}': unknown grant ${bad.map((g) => `'${String(g)}'`).join(', ')}`,
      { hint: `Grants are ${GRANTS.map((g) => `'${g}'`).join(', ')}` },
    );
  }
  return grants;
}

type PluginInstance = Record<string, (...args: unknown[]) => unknown>;

function construct(definition: PluginDefinition, container: Container): PluginInstance {
  try {
    // Inside the try: inversify reads the constructor's metadata when the class is bound.
    container.bind(definition.type).toSelf().inSingletonScope();
    return container.get(definition.type) as PluginInstance;
  } catch (error) {
    const sealed = kernelAccessOf(error, definition.name);
    if (sealed) throw sealed;
    const unnamed = missingInjectionError(error, definition.name, definition.type);
    if (unnamed) throw unnamed;
    throw new TrellisError(
      'InvalidPlugin',
      `Plugin '${definition.name}' could not be constructed: ${describeError(error)}`,
      {
        hint: 'Register the services it injects with Trellis.create({ providers }), or fix its constructor',
        cause: error,
      },
    );
  }
}

/** A host-built instance: of exactly this class, never a look-alike or a subclass swapped in. */
function hostBuilt(definition: PluginDefinition, instance: object, container: Container): PluginInstance {
  if (
    typeof instance !== 'object' ||
    instance === null ||
    Object.getPrototypeOf(instance)?.constructor !== definition.type
  ) {
    const got =
      typeof instance === 'object' && instance !== null
        ? `an instance of ${Object.getPrototypeOf(instance)?.constructor?.name ?? 'an unknown class'}`
        : String(instance);
    throw new TrellisError(
      'InvalidPlugin',
      `Plugin '${definition.name}' was installed with an instance that is not a ${definition.type.name}: got ${got}`,
      {
        hint: `Pass app.install(${definition.type.name}, { instance }) an object built with new ${definition.type.name}(…)`,
      },
    );
  }
  container.bind(definition.type).toConstantValue(instance);
  return instance as PluginInstance;
}

function validateConfig(definition: PluginDefinition, config: unknown): object | undefined {
  if (!definition.configType) {
    if (config !== undefined) {
      throw new TrellisError('InvalidConfig', `Plugin '${definition.name}' takes no config, but one was given`, {
        hint: 'Declare @Plugin({ config: ConfigDto }) or drop the config',
      });
    }
    return undefined;
  }
  const result = validateDto(definition.configType, config ?? {});
  if (!result.ok) {
    throw new TrellisError(
      'InvalidConfig',
      `Plugin '${definition.name}' config is invalid:\n${formatFieldErrors(result.errors)}`,
      {
        hint: `Fix the fields above in app.install(${definition.type.name}, { config })`,
        details: { plugin: definition.name, errors: result.errors },
      },
    );
  }
  return result.value;
}

function checkUnique(definition: PluginDefinition, current: RegistrySnapshot, replacing: string | undefined): void {
  if (current.byName.has(definition.name) && definition.name !== replacing) {
    throw new TrellisError(
      'DuplicatePlugin',
      `A plugin named '${definition.name}' is already installed (${current.byName.get(definition.name)!.definition.type.name})`,
      {
        hint: `Uninstall it first, or use app.reload('${definition.name}', NewClass) to swap versions`,
      },
    );
  }
  const clashes: string[] = [];
  const owners = (kind: string, names: readonly string[], find: (name: string) => string | undefined) => {
    const seen = new Set<string>();
    for (const name of names) {
      if (seen.has(name)) clashes.push(`${kind} '${name}' is declared twice by '${definition.name}'`);
      seen.add(name);
      const owner = find(name);
      if (owner !== undefined && owner !== replacing)
        clashes.push(`${kind} '${name}' is declared by both '${owner}' and '${definition.name}'`);
    }
  };
  const others = current.plugins;
  owners(
    'tool',
    definition.tools.map((t) => t.options.name),
    (n) => current.tools.get(n)?.plugin,
  );
  owners(
    'state key',
    definition.stateKeys.map((k) => k.key),
    (n) => current.stateKeys.get(n)?.owner,
  );
  owners(
    'effect',
    [...new Set(definition.effects.map((e) => e.key))],
    (n) => others.find((p) => p.effects.some((e) => e.key === n))?.definition.name,
  );
  owners('action', [...new Set(definition.actions.map((a) => a.key))], (n) => current.actions.get(n)?.plugin);
  clashes.push(...namespaceClashes(definition, current, replacing));
  for (const token of definition.exports) {
    const owner = others.find((p) => p.definition.name !== replacing && p.definition.exports.includes(token));
    if (owner)
      clashes.push(
        `token ${describeToken(token)} is declared by both '${owner.definition.name}' and '${definition.name}'`,
      );
  }
  if (clashes.length > 0) {
    throw new TrellisError(
      'DuplicateRegistration',
      `Plugin '${definition.name}' clashes with what is installed:\n- ${clashes.join('\n- ')}`,
      {
        hint: 'Names are global: prefix them with the plugin name, or uninstall the other owner',
        details: { plugin: definition.name, clashes },
      },
    );
  }
}

/** Each `dependsOn` range against the version installed: a contract this plugin was not written for is refused at install. */
function checkDependencyVersions(definition: PluginDefinition, current: RegistrySnapshot): void {
  const wrong = Object.entries(definition.dependsOnRanges).flatMap(([name, range]) => {
    const installed = current.byName.get(name)?.definition.version;
    if (installed === undefined || semver.satisfies(installed, range, { includePrerelease: true })) return [];
    return [{ name, range, installed }];
  });
  if (wrong.length === 0) return;
  throw new TrellisError(
    'MissingDependency',
    `Plugin '${definition.name}' needs ${wrong.map((w) => `'${w.name}' ${w.range}, but ${w.installed} is installed`).join('; ')}`,
    {
      hint: `Install a version of ${wrong.map((w) => `'${w.name}'`).join(', ')} in that range, or a version of '${definition.name}' written for the one installed`,
      details: { plugin: definition.name, versions: wrong },
    },
  );
}

/**
 * A plugin owns its namespace `<name>.*`: no other plugin's name, tool or action may be inside
 * it, whichever of the two is installed first (a tool `vault.reset` of plugin `mallory` would
 * own the key `vault.reset.result` and answer the model under vault's name).
 */
function namespaceClashes(
  definition: PluginDefinition,
  current: RegistrySnapshot,
  replacing: string | undefined,
): string[] {
  const clashes: string[] = [];
  const name = definition.name;
  const others = current.plugins.filter((p) => p.definition.name !== replacing && p.definition.name !== name);
  const ownNames = [
    ...definition.tools.map((t) => ['tool', t.options.name] as const),
    ...definition.actions.map((a) => ['action', a.key] as const),
  ];
  for (const other of others) {
    const theirs = other.definition.name;
    if (inNamespace(name, theirs)) clashes.push(`plugin name '${name}' is inside the namespace of plugin '${theirs}'`);
    else if (inNamespace(theirs, name))
      clashes.push(`plugin '${theirs}' is inside this plugin's namespace '${name}.*'`);
    for (const [kind, own] of ownNames)
      if (inNamespace(own, theirs)) clashes.push(`${kind} '${own}' is in the namespace of plugin '${theirs}'`);
    const foreign = [
      ...other.tools.map((t) => ['tool', t.name] as const),
      ...other.actions.map((a) => ['action', a.key] as const),
    ];
    for (const [kind, their] of foreign)
      if (inNamespace(their, name) && !inNamespace(their, theirs))
        clashes.push(`${kind} '${their}' of plugin '${theirs}' is in this plugin's namespace '${name}.*'`);
  }
  return clashes;
}
