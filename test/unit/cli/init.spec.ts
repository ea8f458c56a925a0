import 'reflect-metadata';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../../src/hosts/cli/program.js';
import { packageName } from '../../../src/hosts/cli/init/scaffold.js';
import { trellisPackage } from '../../../src/hosts/cli/package-root.js';
import { fakeCliIo, type FakeCliIo } from '../../support/fake-cli-io.js';

let cwd: string;

beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-init-')));
});

afterEach(() => rmSync(cwd, { recursive: true, force: true }));

const cli = (io: FakeCliIo, ...args: string[]) => runCli(['node', 'trellis', ...args], io);
const read = (...path: string[]) => readFileSync(join(cwd, ...path), 'utf8');
const packageJson = (dir: string) =>
  JSON.parse(read(dir, 'package.json')) as {
    name: string;
    type: string;
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };

describe('trellis init', () => {
  it('writes a project: package.json, tsconfig, jest config, trellis.config.ts, a plugin and its test', async () => {
    const io = fakeCliIo(cwd);

    expect(await cli(io, 'init', 'My App')).toBe(0);
    for (const file of [
      'package.json',
      'tsconfig.json',
      'jest.config.js',
      'trellis.config.ts',
      'plugins/greeter.plugin.ts',
      'test/greeter.spec.ts',
      '.gitignore',
      'README.md',
    ]) {
      expect(existsSync(join(cwd, 'My App', file))).toBe(true);
    }
    const json = packageJson('My App');
    expect(json.name).toBe('my-app');
    expect(json.type).toBe('module');
    const tsconfig = JSON.parse(read('My App', 'tsconfig.json')) as { compilerOptions: Record<string, unknown> };
    expect(tsconfig.compilerOptions).toMatchObject({
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      module: 'NodeNext',
    });
    expect(io.text()).toContain('Next:\n  cd My App\n  npm install\n  npm test\n  npx trellis run "Greet Ada"\n');
  });

  it('pins the same versions Trellis is tested with, and its peers', async () => {
    expect(await cli(fakeCliIo(cwd), 'init', 'app')).toBe(0);
    const { dependencies, devDependencies } = packageJson('app');
    const self = trellisPackage();

    expect(dependencies['reflect-metadata']).toBe(self.devDependencies['reflect-metadata']);
    expect(dependencies['class-validator']).toBe(self.devDependencies['class-validator']);
    expect(devDependencies).toEqual({
      '@types/jest': self.devDependencies['@types/jest'],
      '@types/node': self.devDependencies['@types/node'],
      jest: self.devDependencies.jest,
      'ts-jest': self.devDependencies['ts-jest'],
      typescript: self.devDependencies.typescript,
    });
  });

  it.each([
    [
      'a tarball',
      () => {
        writeFileSync(join(cwd, 'trellis-0.1.0.tgz'), '');
        return './trellis-0.1.0.tgz';
      },
      'file:../trellis-0.1.0.tgz',
    ],
    [
      'a clone folder',
      () => {
        mkdirSync(join(cwd, 'trellis'));
        return 'trellis';
      },
      'file:../trellis',
    ],
    ['a version range', () => '^0.1.0', '^0.1.0'],
    ['a tag', () => 'latest', 'latest'],
    ['a git spec', () => 'git+https://example.org/trellis.git', 'git+https://example.org/trellis.git'],
  ])('takes Trellis from %s', async (_what, given, spec) => {
    expect(await cli(fakeCliIo(cwd), 'init', 'app', '--trellis', given())).toBe(0);
    expect(packageJson('app').dependencies.trellis).toBe(spec);
  });

  it('defaults to this clone when run from one', async () => {
    expect(await cli(fakeCliIo(cwd), 'init', 'app')).toBe(0);
    const dependency = packageJson('app').dependencies.trellis ?? '';
    expect(dependency).toMatch(/^file:\.\.\//);
    expect(realpathSync(join(cwd, 'app', dependency.slice('file:'.length)))).toBe(realpathSync(trellisPackage().root));
  });

  it.each([
    ['./missing.tgz', /^trellis: --trellis \.\/missing\.tgz: no such file or folder/],
    ['not a spec!', /^trellis: --trellis not a spec!: not a path, a tarball or a version/],
  ])('refuses --trellis %s with exit 2 and writes nothing', async (given, message) => {
    const io = fakeCliIo(cwd);

    expect(await cli(io, 'init', 'app', '--trellis', given)).toBe(2);
    expect(io.stderr[0]).toMatch(message);
    expect(existsSync(join(cwd, 'app'))).toBe(false);
  });

  it('writes over no file: a folder with a package.json is refused, and left as it was', async () => {
    writeFileSync(join(cwd, 'package.json'), '{"name":"mine"}');
    const io = fakeCliIo(cwd);

    expect(await cli(io, 'init')).toBe(1);
    expect(io.stderr[0]).toBe(
      `trellis: ${cwd} already has package.json; trellis init writes no file over another. Choose a new or empty folder: trellis init <dir>`,
    );
    expect(read('package.json')).toBe('{"name":"mine"}');
    expect(existsSync(join(cwd, 'tsconfig.json'))).toBe(false);
  });

  it('keeps the example plugin and its test under 60 lines together', () => {
    const templates = join(trellisPackage().root, 'templates/init');
    const lines = ['plugins/greeter.plugin.ts', 'test/greeter.spec.ts'].map(
      (f) => readFileSync(join(templates, f), 'utf8').trimEnd().split('\n').length,
    );
    expect(lines[0]! + lines[1]!).toBeLessThan(60);
  });
});

describe('packageName', () => {
  it.each([
    ['My App', 'my-app'],
    ['.hidden', 'hidden'],
    ['!!!', 'my-trellis-project'],
  ])('makes %j into %j', (folder, name) => expect(packageName(folder)).toBe(name));
});
