import type { Config } from 'jest';

/**
 * Jest runs the TypeScript sources as ES modules (inversify 8 ships ESM only), compiled file
 * by file by SWC: legacy decorators with their metadata, as tsc emits them, and no type
 * checking, which `npm run typecheck` does for the whole project before jest starts.
 */
const swc = {
  swcrc: false,
  sourceMaps: 'inline',
  module: { type: 'es6' },
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    // As tsc with this tsconfig: experimentalDecorators, emitDecoratorMetadata, ES2022 class fields.
    transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: true },
    keepClassNames: true,
  },
};

const config: Config = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  moduleNameMapper: {
    '^trellis$': '<rootDir>/index.ts',
    '^trellis/plugin$': '<rootDir>/plugin.ts',
    '^trellis/testing$': '<rootDir>/testing.ts',
    '^trellis/models$': '<rootDir>/models.ts',
    '^trellis/stores$': '<rootDir>/stores.ts',
    '^trellis/governance$': '<rootDir>/governance.ts',
    '^trellis/host$': '<rootDir>/host.ts',
    '^trellis/plugins/([a-z-]+)$': '<rootDir>/plugins/$1/index.ts',
    '^trellis/queue$': '<rootDir>/queue.ts',
    '^trellis/nestjs$': '<rootDir>/nestjs.ts',
    '^trellis/mcp$': '<rootDir>/mcp.ts',
    '^trellis/ai-sdk$': '<rootDir>/ai-sdk.ts',
    '^trellis/ag-ui$': '<rootDir>/ag-ui.ts',
    '^trellis/a2a$': '<rootDir>/a2a.ts',
    '^trellis/eval$': '<rootDir>/eval.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['@swc/jest', swc],
  },
  // One id for the whole run, so suites that need dist/ build it once between them (test/e2e/support/built-dist.ts).
  globalSetup: '<rootDir>/test/support/jest-global-setup.mjs',
  globalTeardown: '<rootDir>/test/support/jest-global-teardown.mjs',
  testTimeout: 20000,
  // Suites run in a worker process that is replaced once it holds more than this after a file:
  // run in band, the ES-module registries of ~190 files piled up past 3 GB and the run slowed
  // to a crawl. (Setting a limit is also what makes jest use a worker on a 2-core machine.)
  workerIdleMemoryLimit: '1GB',
  // Three suites at a time on the 2-core machine this is developed on: most of the slow suites
  // wait on child processes, servers and builds rather than compute (jest 577 s with one worker,
  // 300 s with two, 254 s with three; `--maxWorkers=N` on the command line overrides it).
  // The suites that share PostgreSQL, Redis or a port are written to run side by side.
  maxWorkers: 3,
};

export default config;
