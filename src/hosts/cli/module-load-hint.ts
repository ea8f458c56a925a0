import { describeError } from './cli-errors.js';

/**
 * What to do about a config or plugin module that failed to import, for the failures a
 * new project runs into; `undefined` when the error is not one of them.
 */
export function moduleLoadHint(error: unknown, file: string): string | undefined {
  const text = `${(error as { code?: string })?.code ?? ''} ${describeError(error)}`;
  if (
    /ERR_REQUIRE_ESM|ERR_REQUIRE_CYCLE_MODULE|ERR_REQUIRE_ASYNC_MODULE|require\(\) of ES Module|Cannot require\(\) ES Module|require\(esm\)|Cannot use import statement outside a module|exports is not defined in ES module scope/.test(
      text,
    )
  ) {
    return `${file} was loaded as CommonJS, but Trellis is an ES module: add "type": "module" to the package.json of its folder (trellis init writes one), or rename the file to .mts/.mjs`;
  }
  if (/[Dd]ecorators? (only work|are not valid)|experimental decorators/.test(text)) {
    return `Turn on legacy decorators: "experimentalDecorators": true and "emitDecoratorMetadata": true in the compilerOptions of the tsconfig.json that includes ${file} (see docs/getting-started.md)`;
  }
  if (
    /ERR_MODULE_NOT_FOUND|Cannot find (package|module)/.test(text) &&
    /'(reflect-metadata|class-validator)'/.test(text)
  ) {
    return 'Install the peer dependencies next to trellis: npm install reflect-metadata class-validator';
  }
  return undefined;
}
