import type { Config } from 'jest';

/** Jest runs the TypeScript sources as ES modules (inversify 8 ships ESM only). */
const config: Config = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  moduleNameMapper: {
    '^trellis$': '<rootDir>/index.ts',
    '^trellis/plugin$': '<rootDir>/plugin.ts',
    '^trellis/testing$': '<rootDir>/testing.ts',
    '^trellis/queue$': '<rootDir>/queue.ts',
    '^trellis/nestjs$': '<rootDir>/nestjs.ts',
    '^trellis/mcp$': '<rootDir>/mcp.ts',
    '^trellis/ai-sdk$': '<rootDir>/ai-sdk.ts',
    '^trellis/ag-ui$': '<rootDir>/ag-ui.ts',
    '^trellis/a2a$': '<rootDir>/a2a.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json', diagnostics: false }],
  },
  testTimeout: 20000,
};

export default config;
