import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { TrellisExceptionFilter } from './http/trellis-exception.filter.js';
import { featureEntries, type FeaturePlugin } from './feature-plugin.js';
import { PluginDiscovery } from './plugin-discovery.js';
import { TrellisRequestContext } from './request-context.js';
import { TrellisContextInterceptor } from './trellis-context.interceptor.js';
import { TrellisHost } from './trellis-host.js';
import { ASYNC_OPTIONS_TYPE, ConfigurableTrellisModule, OPTIONS_TYPE } from './trellis-module-definition.js';
import { getAgentToken, TRELLIS_APP_TOKEN, TRELLIS_FEATURE_TOKEN } from './trellis-tokens.js';

/** The module a `forFeature` declaration lives in; `TrellisHost` finds it at bootstrap. */
@Module({})
export class TrellisFeatureModule {}

/**
 * Trellis as a Nest module.
 *
 * - `forRoot(options)` / `forRootAsync({ imports, inject, useFactory, agentNames })`: one app
 *   with its store, models, agents and app-wide middleware; `isGlobal` as usual.
 * - `forFeature([OrdersPlugin, { plugin: RefundsPlugin, config }])` in a feature module that
 *   also lists the plugins in its `providers`: Nest builds them with that module's services;
 *   Trellis installs them at bootstrap.
 *
 * @example
 * @Module({
 *   imports: [TrellisModule.forFeature([OrdersPlugin])],
 *   providers: [OrdersService, OrdersPlugin],
 * })
 * export class OrdersModule {}
 */
@Module({})
export class TrellisModule extends ConfigurableTrellisModule {
  static override forRoot(options: typeof OPTIONS_TYPE): DynamicModule {
    const names = [...(options.agentNames ?? []), ...(options.agents ?? []).map((a) => a?.name)];
    return withProviders(super.forRoot(options), names, options.exposeApp ?? false, options.httpErrors ?? true);
  }

  static override forRootAsync(options: typeof ASYNC_OPTIONS_TYPE): DynamicModule {
    return withProviders(
      super.forRootAsync(options),
      options.agentNames ?? [],
      options.exposeApp ?? false,
      options.httpErrors ?? true,
    );
  }

  /** Declares the plugins this feature module owns; list them in its `providers` too. */
  static forFeature(plugins: readonly FeaturePlugin[]): DynamicModule {
    return {
      module: TrellisFeatureModule,
      providers: [{ provide: TRELLIS_FEATURE_TOKEN, useValue: { entries: featureEntries(plugins) } }],
    };
  }
}

function withProviders(
  definition: DynamicModule,
  agentNames: readonly string[],
  exposeApp: boolean,
  httpErrors: boolean,
): DynamicModule {
  const agents: Provider[] = [...new Set(agentNames)].map((name) => ({
    provide: getAgentToken(name),
    useFactory: (host: TrellisHost) => host.agent(name),
    inject: [TrellisHost],
  }));
  const app: Provider[] = exposeApp
    ? [{ provide: TRELLIS_APP_TOKEN, useFactory: (host: TrellisHost) => host.app, inject: [TrellisHost] }]
    : [];
  const tokens = [...agents, ...app].map((p) => (p as { provide: string | symbol }).provide);
  const filters: Provider[] = httpErrors ? [{ provide: APP_FILTER, useClass: TrellisExceptionFilter }] : [];
  return {
    ...definition,
    imports: [...(definition.imports ?? []), DiscoveryModule],
    providers: [
      ...(definition.providers ?? []),
      TrellisRequestContext,
      PluginDiscovery,
      TrellisHost,
      ...agents,
      ...app,
      { provide: APP_INTERCEPTOR, useClass: TrellisContextInterceptor },
      ...filters,
    ],
    exports: [...(definition.exports ?? []), TrellisRequestContext, ...tokens],
  };
}
