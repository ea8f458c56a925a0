import type { InjectionToken } from '@nestjs/common';
import {
  ApplicationConfig,
  DiscoveryService,
  ExternalContextCreator,
  HttpAdapterHost,
  LazyModuleLoader,
  ModuleRef,
  ModulesContainer,
  SerializedGraph,
} from '@nestjs/core';
import { Trellis, TrellisError } from '../../../index.js';

type InstanceWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/**
 * Nest's providers that hand out the container or what it holds. Anything that injects one
 * can resolve any provider at call time (`moduleRef.get(token, { strict: false })`), so none
 * may be anywhere in a plugin's dependencies.
 */
const CONTAINER_ACCESS: ReadonlyMap<unknown, string> = new Map<unknown, string>([
  [ModuleRef, 'resolves any provider of the app'],
  [LazyModuleLoader, 'loads modules whose ModuleRef resolves any provider'],
  [DiscoveryService, 'lists every provider with its instance'],
  [ModulesContainer, 'holds every module with its providers'],
  [ExternalContextCreator, 'holds the container'],
  [ApplicationConfig, 'holds the global enhancers, Trellis’s request interceptor among them'],
  [HttpAdapterHost, 'is the HTTP server every request passes through'],
  [SerializedGraph, 'describes the whole container'],
]);

/** What no plugin built by Nest may reach, however it is injected. */
export interface PluginSeal {
  /** Tokens of Trellis's own providers (the app, the agents, `TrellisHost`); every provider of their modules is refused too. */
  readonly tokens: ReadonlySet<unknown>;
  /** Objects refused under whatever token the host registers them: the app, its store, its options, the agents. */
  readonly instances: ReadonlySet<unknown>;
}

/** The plugin classes discovered at bootstrap, the modules Trellis's providers live in, and the seal. */
export interface SealScope {
  readonly seal: PluginSeal;
  readonly kernelModules: ReadonlySet<unknown>;
  readonly plugins: ReadonlySet<unknown>;
}

interface Breach {
  readonly path: string;
  readonly what: 'kernel' | 'plugin' | 'container';
  readonly why: string;
}

/**
 * Refuses a Nest-built plugin whose dependency graph reaches, at any depth, a provider of
 * Trellis's own, an object the seal names, another plugin, or Nest's container. The graph is
 * what Nest's injector resolved and recorded on each provider (constructor parameters, `inject`
 * of a factory or `useExisting`, and `@Inject()` properties), read once every instance exists.
 * A provider in `trusted` is the host's statement that it hands out nothing of the container it
 * keeps: behind it, Nest's container-access providers are allowed; Trellis's own providers and
 * other plugins are refused there as everywhere.
 */
export function assertSealed(
  name: string,
  plugin: InstanceWrapper,
  scope: SealScope,
  trusted: ReadonlySet<InjectionToken>,
): void {
  const breach = findBreach(plugin, scope, trusted);
  if (!breach) return;
  const reached = {
    kernel: 'the Trellis app, an agent or the store',
    plugin: 'another plugin',
    container: "Nest's container",
  }[breach.what];
  const hint = {
    kernel:
      'A plugin talks to sessions through its tools, hooks and the context; inject the Nest services it needs, never Trellis itself (docs/nestjs.md, "Sealing")',
    plugin:
      'Plugins share a service through @Plugin({ exports }) and host.export(token, value), never by injecting each other',
    container: `Inject what the plugin needs by its own token instead. If it needs a provider that keeps the container (e.g. CQRS's CommandBus), give it a narrow port (a factory returning only the functions it needs) and trust that port: forFeature([{ plugin: ${name}, trust: [PORT] }])`,
  }[breach.what];
  throw new TrellisError(
    'KernelAccess',
    `${name} reaches ${reached} through its dependencies: ${breach.path} (${breach.why}); a plugin never gets the kernel, another plugin or the container`,
    {
      hint,
      details: { plugin: name, path: breach.path },
    },
  );
}

function findBreach(root: InstanceWrapper, scope: SealScope, trusted: ReadonlySet<InjectionToken>): Breach | undefined {
  const seen = new Set<InstanceWrapper>([root]);
  const stack: { wrapper: InstanceWrapper; path: string; vouched: boolean }[] = [
    { wrapper: root, path: label(root), vouched: false },
  ];
  while (stack.length > 0) {
    const { wrapper, path, vouched } = stack.pop()!;
    for (const { dep, edge } of dependenciesOf(wrapper)) {
      if (seen.has(dep)) continue;
      seen.add(dep);
      const at = `${path} → ${edge}${label(dep)}`;
      const refused = judge(dep, scope);
      if (refused) return { path: at, ...refused };
      const trustedHere = vouched || trusted.has(dep.token);
      const container = CONTAINER_ACCESS.get(dep.token);
      if (container && !trustedHere) return { path: at, what: 'container', why: `${label(dep)} ${container}` };
      stack.push({ wrapper: dep, path: at, vouched: trustedHere });
    }
  }
  return undefined;
}

function judge(dep: InstanceWrapper, scope: SealScope): Omit<Breach, 'path'> | undefined {
  const instance = staticInstance(dep);
  if (
    scope.kernelModules.has(dep.host) ||
    scope.seal.tokens.has(dep.token) ||
    dep.metatype === Trellis ||
    (instance !== undefined && scope.seal.instances.has(instance))
  ) {
    return { what: 'kernel', why: `${label(dep)} is Trellis's own` };
  }
  if (scope.plugins.has(dep.metatype)) return { what: 'plugin', why: `${label(dep)} is a plugin` };
  return undefined;
}

function* dependenciesOf(wrapper: InstanceWrapper): Iterable<{ dep: InstanceWrapper; edge: string }> {
  for (const dep of wrapper.getCtorMetadata() ?? []) if (dep) yield { dep, edge: '' };
  for (const property of wrapper.getPropertiesMetadata() ?? [])
    if (property?.wrapper) yield { dep: property.wrapper, edge: `property ${String(property.key)}: ` };
}

function staticInstance(wrapper: InstanceWrapper): unknown {
  const instance: unknown = wrapper.instance;
  return instance === null ? undefined : instance;
}

function label(wrapper: InstanceWrapper): string {
  const name: unknown = wrapper.name;
  return typeof name === 'string' && name.length > 0 ? name : String(wrapper.token);
}
