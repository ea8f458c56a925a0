/**
 * Jest on ES modules: ts-jest compiles the TypeScript (with decorator metadata), and
 * `./x.js` imports are mapped to the `./x.ts` sources. Run with `npm test`, which starts
 * node with --experimental-vm-modules.
 * @type {import('jest').Config}
 */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
};
