import 'reflect-metadata';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Trellis } from '../../../index.js';
import { kernelOf } from '../../../src/app/kernel-access.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '../../fixtures/plugins-dir');
const file = (name: string) => join(FIXTURES, name);

describe('app.loadDirectory', () => {
  it('installs every exported @Plugin class and reports each failure with its file and reason', async () => {
    const app = Trellis.create();

    const report = await app.loadDirectory(FIXTURES);

    expect(report.installed).toEqual([{ file: file('good.plugin.ts'), plugin: 'fixture-good' }]);
    const failures = [...report.failed].sort((a, b) => (a.plugin ?? '').localeCompare(b.plugin ?? ''));
    expect(failures).toEqual([
      {
        file: file('broken-import.plugin.ts'),
        reason: expect.stringMatching(/import failed: fixture module exploded on import/),
      },
      {
        file: file('invalid.plugin.ts'),
        plugin: 'DuplicateNameFixturePlugin',
        reason: expect.stringMatching(/'fixture-good' is already installed/),
      },
      {
        file: file('invalid.plugin.ts'),
        plugin: 'InvalidFixturePlugin',
        reason: expect.stringMatching(/elsewhere\.value/),
      },
      {
        file: file('invalid.plugin.ts'),
        plugin: 'NeedsConfigFixturePlugin',
        reason: expect.stringMatching(/config is invalid[\s\S]*endpoint/),
      },
    ]);
  });

  it('still loads the good plugins: their tools are usable', async () => {
    const app = Trellis.create();

    await app.loadDirectory(FIXTURES);

    expect([...kernelOf(app).registry.byName.keys()]).toEqual(['fixture-good']);
    expect(kernelOf(app).registry.byName.get('fixture-good')?.definition.version).toBe('1.0.0');
    expect(
      await kernelOf(app)
        .registry.tools.get('fixture-good.ping')!
        .fn(undefined, undefined as never),
    ).toBe('pong');
  });

  it('neither installs nor reports modules without a plugin, nor files that are not modules', async () => {
    const app = Trellis.create();

    const report = await app.loadDirectory(FIXTURES);

    const files = [...report.installed, ...report.failed].map((r) => r.file);
    expect(files).not.toContain(file('not-a-plugin.ts'));
    expect(files).not.toContain(file('README.md'));
  });
});
