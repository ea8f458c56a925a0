import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../../../src/hosts/cli/program.js';
import { fakeCliIo } from '../../support/fake-cli-io.js';

const BILLING = fileURLToPath(new URL('../../fixtures/governance/billing.plugin.ts', import.meta.url));

let cwd: string;
beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-contract-')));
  writeFileSync(join(cwd, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(
    join(cwd, 'trellis.config.ts'),
    `import { BillingPlugin } from '${BILLING}';\nexport default { plugins: [BillingPlugin], store: 'c.db' };`,
  );
});
afterEach(() => rmSync(cwd, { recursive: true, force: true }));

async function cli(...args: string[]) {
  const io = fakeCliIo(cwd);
  const code = await runCli(['node', 'trellis', ...args], io);
  return { code, out: io.text(), err: io.stderr.join('\n') };
}

describe('trellis plugins shows owners; --json writes contracts; trellis contract diff judges a change for CI', () => {
  it('fails a breaking change without a major bump, passes it with one, and passes a compatible change', async () => {
    const listed = await cli('plugins');
    expect(listed.out).toContain('billing 2.1.0 — Refunds\n  owner: team-payments');
    const json = await cli('plugins', '--json');
    expect(json.code).toBe(0);
    writeFileSync(join(cwd, 'old.json'), json.out);
    const before = JSON.parse(json.out) as {
      plugins: {
        owner: string;
        contract: { tools: { input: { required: string[] } }[]; hooks: string[]; version: string };
      }[];
    };
    expect(before.plugins[0]!.owner).toBe('team-payments');
    expect(before.plugins[0]!.contract.hooks).toEqual(['tool.after_call']);

    const edit = (change: (c: (typeof before)['plugins'][number]['contract']) => void, file: string) => {
      const copy = JSON.parse(readFileSync(join(cwd, 'old.json'), 'utf8')) as typeof before;
      change(copy.plugins[0]!.contract);
      writeFileSync(join(cwd, file), JSON.stringify(copy));
    };
    edit((c) => ((c.version = '2.2.0'), c.tools[0]!.input.required.push('amount')), 'minor.json');
    edit((c) => ((c.version = '3.0.0'), c.tools[0]!.input.required.push('amount')), 'major.json');
    edit((c) => ((c.version = '2.2.0'), c.hooks.push('tool.error')), 'compatible.json');

    const unbumped = await cli('contract', 'diff', 'old.json', 'minor.json');
    expect(unbumped.code).toBe(1);
    expect(unbumped.out).toContain(
      "BREAKING    billing  tool billing.refund input: field 'amount' is required now (was optional)",
    );
    expect(unbumped.err).toContain('Breaking contract changes without a major version bump: billing 2.1.0 → 2.2.0');
    expect((await cli('contract', 'diff', 'old.json', 'major.json')).code).toBe(0);
    const compatible = await cli('contract', 'diff', 'old.json', 'compatible.json');
    expect(compatible.code).toBe(0);
    expect(compatible.out).toContain("compatible  billing  hooks: hook point 'tool.error' was added");
    const bad = await cli('contract', 'diff', 'old.json', 'package.json');
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('is not a plugin contract');
  });
});
