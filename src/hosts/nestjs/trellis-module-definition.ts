import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { TrellisModuleExtras, TrellisModuleOptions } from './trellis-module-options.js';

/**
 * Nest's own builder makes `forRoot` / `forRootAsync`; `TrellisModule` adds its providers
 * to the definition it returns (see `trellis-providers.ts`).
 */
export const {
  ConfigurableModuleClass: ConfigurableTrellisModule,
  MODULE_OPTIONS_TOKEN: TRELLIS_MODULE_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<TrellisModuleOptions>({ moduleName: 'Trellis' })
  .setClassMethodName('forRoot')
  .setExtras<TrellisModuleExtras>(
    { isGlobal: false, agentNames: [], exposeApp: false, httpErrors: true },
    (definition, extras) => ({ ...definition, global: extras.isGlobal }),
  )
  .build();
