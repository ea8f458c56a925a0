import { Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { Trellis, TrellisError } from '../../../index.js';
import type { FeatureDeclaration, FeaturePluginEntry } from './feature-plugin.js';
import { assertSealed, type PluginSeal, type SealScope } from './plugin-seal.js';
import { TRELLIS_APP_TOKEN, TRELLIS_FEATURE_TOKEN } from './trellis-tokens.js';

type InstanceWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/** A plugin instance Nest built, with the module that owns it. */
export interface DiscoveredPlugin extends FeaturePluginEntry {
  readonly instance: object;
  /** The Nest module that provides the plugin and imports its `forFeature` declaration. */
  readonly module: string;
}

/**
 * Finds, at bootstrap, the plugins each `TrellisModule.forFeature([...])` declares, as the
 * instances Nest built in the module that imported the declaration (the way
 * `@nestjs/bullmq` finds processors). Refuses what would break the kernel's sealing: a plugin
 * whose dependencies reach Trellis, another plugin or Nest's container (`plugin-seal.ts`).
 */
@Injectable()
export class PluginDiscovery {
  constructor(private readonly discovery: DiscoveryService) {}

  discover(seal: PluginSeal): DiscoveredPlugin[] {
    const providers = this.discovery.getProviders();
    const features = providers.filter((w) => w.token === TRELLIS_FEATURE_TOKEN);
    const scope: SealScope = {
      seal,
      kernelModules: new Set([...features, ...providers.filter((w) => seal.tokens.has(w.token))].map((w) => w.host)),
      plugins: new Set(features.flatMap((f) => (f.instance as FeatureDeclaration).entries.map((e) => e.plugin))),
    };
    const found: DiscoveredPlugin[] = [];
    for (const feature of features) {
      const declaration = feature.instance as FeatureDeclaration;
      const owners = providers
        .map((w) => w.host)
        .filter((m) => m !== undefined && feature.host !== undefined && m.imports.has(feature.host));
      for (const entry of declaration.entries) found.push(this.resolve(entry, providers, new Set(owners), scope));
    }
    return found;
  }

  private resolve(
    entry: FeaturePluginEntry,
    providers: readonly InstanceWrapper[],
    owners: ReadonlySet<unknown>,
    scope: SealScope,
  ): DiscoveredPlugin {
    const name = entry.plugin.name;
    const importers = [...owners].map((m) => (m as { name: string }).name);
    const where = importers.join(', ') || 'no module';
    const owned = providers.filter((w) => w.metatype === entry.plugin && owners.has(w.host));
    if (owned.length === 0) {
      throw new TrellisError(
        'InvalidPlugin',
        `${name} is listed in TrellisModule.forFeature() imported by ${where}, but that module does not provide it`,
        {
          hint: `Add ${name} to the providers of ${importers[0] ?? 'the module that imports the forFeature() call'}, next to the services it injects`,
        },
      );
    }
    const wrapper = owned[0]!;
    if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
      throw new TrellisError(
        'InvalidPlugin',
        `${name} is request-scoped or transient (or injects something that is); a plugin is one instance for the whole app`,
        {
          hint: 'Make it and what it injects default (singleton) scope; read per-request values from the context (@Requires) instead',
        },
      );
    }
    assertSealed(name, wrapper, scope, new Set(entry.trust));
    if (owned.length > 1) {
      throw new TrellisError(
        'InvalidPlugin',
        `${name} is provided by more than one module that imports its forFeature() declaration (${where})`,
        {
          hint: 'Each plugin belongs to one feature module: provide it there only',
        },
      );
    }
    return { ...entry, instance: wrapper.instance as object, module: (wrapper.host as { name: string }).name };
  }
}

/**
 * What no plugin may reach: the app, the agents and whatever holds them, by token, and the
 * objects themselves (the app, its store, the module options, the agents) under any token.
 */
export function pluginSeal(
  agentTokens: readonly string[],
  holders: readonly unknown[],
  instances: readonly unknown[],
): PluginSeal {
  return {
    tokens: new Set<unknown>([TRELLIS_APP_TOKEN, Trellis, ...agentTokens, ...holders]),
    instances: new Set(instances.filter((i) => (typeof i === 'object' || typeof i === 'function') && i !== null)),
  };
}
