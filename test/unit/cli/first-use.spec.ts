import 'reflect-metadata';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../../../src/hosts/cli/program.js';
import { fakeCliIo, type FakeCliIo } from '../../support/fake-cli-io.js';

const FLAKY = fileURLToPath(new URL('../../fixtures/cli/flaky-locale.plugin.ts', import.meta.url));
const CARD = fileURLToPath(new URL('../../fixtures/cli/greeting-card.dto.ts', import.meta.url));
let cwd: string;

beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-first-use-')));
});

afterEach(() => rmSync(cwd, { recursive: true, force: true }));

const cli = (io: FakeCliIo, ...args: string[]) => runCli(['node', 'trellis', ...args], io);

describe('trellis run', () => {
  it.each(['', '   '])('refuses an empty message (%j) with exit 2, before opening anything', async (message) => {
    const io = fakeCliIo(cwd);

    expect(await cli(io, 'run', message)).toBe(2);
    expect(io.stderr).toEqual(['trellis: run needs a message, and this one is empty. e.g. trellis run "Greet Ada"']);
  });

  it('names a config file it does not read when falling back to the example', async () => {
    writeFileSync(join(cwd, 'trellis.config.yaml'), 'plugins: ./plugins\n');
    const io = fakeCliIo(cwd);

    expect(await cli(io, 'run', 'Who are our best customers?')).toBe(0);
    expect(io.stderr[0]).toBe(
      `note: no trellis.config.{ts,js,mjs,json} in ${cwd} (trellis.config.yaml is not a name the CLI reads); running the SQL report desk example, which writes its sessions, database, logs and exports under ${join(cwd, '.trellis')} (trellis init <dir> creates a project of your own)`,
    );
  });

  it('shows that a retryable failure was retried, and counts it in the summary', async () => {
    writeFlakyConfig();
    const io = fakeCliIo(cwd);

    expect(await cli(io, 'run', 'Greet Ada')).toBe(0);
    expect(io.stderr).toContain(
      '  ↻ flaky.hello failed (ToolFailed: the greeting service is unavailable); attempt 2 in 0 ms',
    );
    expect(io.text()).toContain('Said: Bonjour Ada');
    expect(io.text()).toMatch(/— completed · 2 rounds · 1 tool · 1 retry · \d+ tokens/);
  });
});

describe('trellis run --json', () => {
  it("prints the result as one JSON object, a typed agent's output included, and nothing else on stdout", async () => {
    writeFlakyConfig(
      `output: GreetingCard, maxOutputRepairs: 0,`,
      `'{"greeting":"' + request.messages.at(-1)?.content + '","language":"fr"}'`,
    );
    const io = fakeCliIo(cwd);

    expect(await cli(io, 'run', '--json', '-s', 'j1', 'Greet Ada')).toBe(0);
    const printed = JSON.parse(io.text()) as Record<string, unknown>;
    expect(printed).toMatchObject({
      sessionId: 'j1',
      status: 'completed',
      output: { greeting: 'Bonjour Ada', language: 'fr' },
      rounds: 2,
      usage: { totalTokens: expect.any(Number) },
    });
    expect(printed.toolCalls).toEqual([expect.objectContaining({ tool: 'flaky.hello', ok: true })]);
  });

  it('prints a turn whose answer does not validate as failed/OutputInvalid, and exits 1', async () => {
    writeFlakyConfig(`output: GreetingCard, maxOutputRepairs: 0,`, `'{"greeting":"hi","language":"de"}'`);
    const io = fakeCliIo(cwd);

    expect(await cli(io, 'run', '--json', 'Greet Ada')).toBe(1);
    expect(JSON.parse(io.text())).toMatchObject({ status: 'failed', error: { code: 'OutputInvalid' } });
    expect(JSON.parse(io.text()).output).toBeUndefined();
  });
});

describe('trellis plugins', () => {
  it('refuses a plugins folder with no @Plugin class in it, instead of running with none', async () => {
    mkdirSync(join(cwd, 'plugins'));
    writeFileSync(join(cwd, 'plugins/helpers.js'), 'export const x = 1;\n');
    writeFileSync(join(cwd, 'trellis.config.json'), JSON.stringify({ plugins: './plugins' }));
    const io = fakeCliIo(cwd);

    expect(await cli(io, 'plugins')).toBe(1);
    expect(io.stderr[0]).toBe(
      `trellis: No module in ${join(cwd, 'plugins')} exports a @Plugin class, so there is nothing to run. Point "plugins" in ${join(cwd, 'trellis.config.json')} at your plugin modules (paths are relative to the config file), or export the plugin classes`,
    );
  });

  it("lists each tool's @Requires keys, optional ones marked", async () => {
    writeFlakyConfig();
    const io = fakeCliIo(cwd);

    expect(await cli(io, 'plugins')).toBe(0);
    expect(io.text()).toContain(
      '  tool flaky.hello\n    Greets a person. Use to greet.\n    input: { name: string }\n    middleware: RetryMiddleware\n    requires: app.locale, app.user?\n',
    );
  });
});

/**
 * A .ts config installing the flaky fixture plugin, with a scripted model that calls it once
 * and then answers `answer` (an expression of `request`); `agent` adds agent fields.
 */
function writeFlakyConfig(agent = '', answer = `'Said: ' + request.messages.at(-1)?.content`): void {
  const testing = fileURLToPath(new URL('../../../testing.ts', import.meta.url));
  writeFileSync(join(cwd, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(
    join(cwd, 'trellis.config.ts'),
    `import { ScriptedModel } from '${testing}';
     import { FlakyLocalePlugin } from '${FLAKY}';
     import { GreetingCard } from '${CARD}';
     export default {
       plugins: [FlakyLocalePlugin],
       agent: { ${agent} },
       context: { 'app.locale': 'fr' },
       model: new ScriptedModel((request) => request.messages.at(-1)?.role === 'tool' ? ${answer} : { toolCalls: [{ name: 'flaky.hello', args: { name: 'Ada' } }] }),
     };`,
  );
}

describe('trellis chat approvals', () => {
  it('asks again after an unclear answer, and never sends that answer to the model', async () => {
    const io = fakeCliIo(cwd, 'export the top customers as csv\nmaybe\nn\n/exit\n');

    expect(await cli(io, 'chat')).toBe(0);
    const out = io.text();
    expect(out).toContain("  please answer y (run it) or n (do not run it), not 'maybe'");
    expect(out.match(/approve\? \[y\/n\] /g)).toHaveLength(2);
    expect(out).toMatch(/ {2}rejected call_\w+/);
    // One turn only: 'maybe' did not become a message.
    expect(out.match(/^— /gm)).toHaveLength(1);
  });

  it('prints the waiting call once, not once as activity and again as the question', async () => {
    const io = fakeCliIo(cwd, 'export the top customers as csv\nn\n/exit\n');

    expect(await cli(io, 'chat')).toBe(0);
    const everything = `${io.text()}\n${io.stderr.join('\n')}`;
    expect(everything.match(/waits for approval/g)).toHaveLength(1);
  });
});

describe('trellis sessions show', () => {
  it('cuts a huge message with a note saying how much is left out; --full prints it whole', async () => {
    const huge = `${'x'.repeat(50_000)}END`;
    expect(await cli(fakeCliIo(cwd), 'run', '-s', 'big', huge)).toBe(0);

    const shown = fakeCliIo(cwd);
    expect(await cli(shown, 'sessions', 'show', 'big')).toBe(0);
    expect(shown.text()).toContain('[46,003 more characters not shown; all of it: trellis sessions show big --full]');
    expect(shown.text()).not.toContain('END');
    expect(shown.text().length).toBeLessThan(10_000);

    const full = fakeCliIo(cwd);
    expect(await cli(full, 'sessions', 'show', 'big', '--full')).toBe(0);
    expect(full.text()).toContain(huge);
  });
});
