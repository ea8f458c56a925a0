import { Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { Trellis, TrellisError } from '../../index.js';
import type { FeatureDeclaration, FeaturePluginEntry } from './feature-plugin.js';
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
 * `@nestjs/bullmq` finds processors). Refuses what would break the kernel's sealing.
 */
@Injectable()
export class PluginDiscovery {
  constructor(private readonly discovery: DiscoveryService) {}

  discover(forbidden: ReadonlySet<unknown>): DiscoveredPlugin[] {
    const providers = this.discovery.getProviders();
    const found: DiscoveredPlugin[] = [];
    for (const feature of providers.filter((w) => w.token === TRELLIS_FEATURE_TOKEN)) {
      const declaration = feature.instance as FeatureDeclaration;
      const owners = providers.map((w) => w.host).filter((m) => m !== undefined && feature.host !== undefined && m.imports.has(feature.host));
      for (const entry of declaration.entries) found.push(this.resolve(entry, providers, new Set(owners), forbidden));
    }
    return found;
  }

  private resolve(entry: FeaturePluginEntry, providers: readonly InstanceWrapper[], owners: ReadonlySet<unknown>, forbidden: ReadonlySet<unknown>): DiscoveredPlugin {
    const name = entry.plugin.name;
    const importers = [...owners].map((m) => (m as { name: string }).name);
    const where = importers.join(', ') || 'no module';
    const owned = providers.filter((w) => w.metatype === entry.plugin && owners.has(w.host));
    if (owned.length === 0) {
      throw new TrellisError('InvalidPlugin', `${name} is listed in TrellisModule.forFeature() imported by ${where}, but that module does not provide it`, {
        hint: `Add ${name} to the providers of ${importers[0] ?? 'the module that imports the forFeature() call'}, next to the services it injects`,
      });
    }
    const wrapper = owned[0]!;
    if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
      throw new TrellisError('InvalidPlugin', `${name} is request-scoped or transient (or injects something that is); a plugin is one instance for the whole app`, {
        hint: 'Make it and what it injects default (singleton) scope; read per-request values from the context (@Requires) instead',
      });
    }
    const reached = wrapper.getCtorMetadata()?.filter((dep) => dep && (forbidden.has(dep.token) || dep.metatype === Trellis)) ?? [];
    if (reached.length > 0) {
      throw new TrellisError('InvalidPlugin', `${name} injects the Trellis kernel or an agent (${reached.map((d) => String(d.name ?? d.token)).join(', ')}); plugins never get the kernel`, {
        hint: 'Inject the Nest services the plugin needs; talk to the session through tools, hooks and the context',
      });
    }
    if (owned.length > 1) {
      throw new TrellisError('InvalidPlugin', `${name} is provided by more than one module that imports its forFeature() declaration (${where})`, {
        hint: 'Each plugin belongs to one feature module: provide it there only',
      });
    }
    return { ...entry, instance: wrapper.instance as object, module: (wrapper.host as { name: string }).name };
  }
}

/** Tokens a plugin must never inject: the app, the agents, and whatever holds them. */
export function kernelTokens(agentTokens: readonly string[], holders: readonly unknown[]): ReadonlySet<unknown> {
  return new Set<unknown>([TRELLIS_APP_TOKEN, Trellis, ...agentTokens, ...holders]);
}
