import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { moduleLoadHint } from '../../../src/hosts/cli/module-load-hint.js';
import { missingPackages, missingPeersMessage } from '../../../src/hosts/cli/peer-check.js';
import { checkDecoratorSettings } from '../../../src/hosts/cli/ts-loader.js';
import { TrellisError } from '../../../src/errors/trellis-error.js';

describe('moduleLoadHint', () => {
  it.each([
    'Cannot require() ES Module /p/trellis.config.ts in a cycle. A cycle involving require(esm) is not allowed',
    'require() of ES Module /p/node_modules/trellis/dist/index.js from /p/trellis.config.ts not supported.',
    'Cannot use import statement outside a module',
  ])('says to add "type": "module" for %j', (message) => {
    expect(moduleLoadHint(new Error(message), '/p/trellis.config.ts')).toMatch(
      /add "type": "module" to the package\.json of its folder/,
    );
  });

  it("says to turn on experimentalDecorators for esbuild's decorator error", () => {
    expect(
      moduleLoadHint(
        new Error('ERROR: Parameter decorators only work when experimental decorators are enabled'),
        '/p/a.ts',
      ),
    ).toMatch(/"experimentalDecorators": true/);
  });

  it('says to install a missing peer', () => {
    const error = Object.assign(new Error("Cannot find package 'class-validator' imported from /p/a.ts"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    expect(moduleLoadHint(error, '/p/a.ts')).toBe(
      'Install the peer dependencies next to trellis: npm install reflect-metadata class-validator',
    );
  });

  it('has nothing to add for other errors', () => {
    expect(moduleLoadHint(new Error('x is not defined'), '/p/a.ts')).toBeUndefined();
  });
});

describe('peer check', () => {
  it('finds the installed peers, and names the ones missing', () => {
    expect(missingPackages(['reflect-metadata', 'class-validator'])).toEqual([]);
    expect(missingPackages(['reflect-metadata', 'no-such-package-trellis-test'])).toEqual([
      'no-such-package-trellis-test',
    ]);
    expect(missingPeersMessage(['no-such-package-trellis-test'])).toBe(
      'trellis: missing peer dependency no-such-package-trellis-test; install it in your project: npm install no-such-package-trellis-test',
    );
    expect(missingPeersMessage()).toBeUndefined();
  });
});

describe('checkDecoratorSettings', () => {
  let dir: string;
  beforeEach(() => (dir = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-tsconfig-')))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a tsconfig.json without experimentalDecorators, naming it and the TS1240/TS1241 fix', () => {
    const file = join(dir, 'tsconfig.json');
    writeFileSync(file, '{\n  // comments are fine\n  "compilerOptions": { "target": "ES2022", },\n}');

    let error: unknown;
    try {
      checkDecoratorSettings(file);
    } catch (caught) {
      error = caught;
    }
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    expect((error as Error).message).toContain(`${file} does not turn on legacy decorators`);
    expect((error as Error).message).toContain('TS1240/TS1241');
  });

  it.each([
    ['turns them on', { compilerOptions: { experimentalDecorators: true } }],
    ['extends another file', { extends: './base.json' }],
  ])('accepts a tsconfig.json that %s', (_what, json) => {
    const file = join(dir, 'tsconfig.json');
    writeFileSync(file, JSON.stringify(json));
    expect(() => checkDecoratorSettings(file)).not.toThrow();
  });
});
