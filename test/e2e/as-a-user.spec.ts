import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildDist, BUILD_TIMEOUT_MS } from './support/built-dist.js';

/**
 * End to end, as a user would: build with tsc once, then run the example and the `trellis`
 * CLI from dist/ with plain `node`, each in a fresh working directory, offline.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EXAMPLE = join(ROOT, 'dist/examples/sql-report-desk/main.js');
const CLI = join(ROOT, 'dist/src/hosts/cli/main.js');
const RUN_TIMEOUT_MS = 30_000;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** No API keys: the scripted model answers, whatever the developer's shell holds. */
function offlineEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  // Nor does the npm script that started jest decide the CLI's folder (INIT_CWD).
  for (const key of [
    'OPENAI_API_KEY',
    'OPENAI_BASE_URL',
    'ANTHROPIC_API_KEY',
    'TRELLIS_MODEL',
    'INIT_CWD',
    'npm_package_json',
  ])
    delete env[key];
  return env;
}

function node(
  script: string,
  args: readonly string[],
  cwd: string,
  stdin?: string,
  extraEnv: NodeJS.ProcessEnv = {},
  timeoutMs = RUN_TIMEOUT_MS,
): Promise<Run> {
  const child = spawn(process.execPath, [script, ...args], {
    cwd,
    env: { ...offlineEnv(), ...extraEnv },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(stdin ?? '');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} ${args.join(' ')} did not finish in ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const trellis = (cwd: string, ...args: string[]): Promise<Run> => node(CLI, args, cwd);

/** A command line as a user pastes it: through `sh -c`, offline. */
function shell(command: string, cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', command], { cwd, env: offlineEnv(), timeout: RUN_TIMEOUT_MS }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
const lines = (text: string): string[] => text.split('\n').filter((l) => l.trim() !== '');

const dirs: string[] = [];
function workdir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-e2e-')));
  dirs.push(dir);
  return dir;
}

beforeAll(async () => {
  await buildDist();
}, BUILD_TIMEOUT_MS);

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('npm start: the SQL report desk example', () => {
  it(
    'runs the scripted conversation offline: a failed query and its lesson, an answer, an approved export',
    async () => {
      const cwd = workdir();

      const run = await node(EXAMPLE, [], cwd);

      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Model: the scripted model (offline; no API key is set)');
      expect(run.stdout).toMatch(/← db\.search failed: SqlError: .*no such column: o\.total/);
      expect(run.stdout).toMatch(/lesson kept for the next turn: db\.search failed with SqlError/);
      expect(run.stdout).toContain('1. Barbara Liskov (US) — $500.00');
      expect(run.stdout).toMatch(/⏸ export\.csv \(call_\w+\) waits for approval: Write top-customers\.csv/);
      expect(run.stdout).toMatch(/approval: approving export\.csv \(call_\w+\)/);
      expect(run.stdout).toContain('Saved 3 rows to .trellis/exports/top-customers.csv.');
      expect(readFileSync(join(cwd, '.trellis/exports/top-customers.csv'), 'utf8')).toBe(
        'name,country,spent\nBarbara Liskov,US,500\nGrace Hopper,US,467\nAda Lovelace,UK,425\n',
      );
      // The typed turn: a TopCustomersReport, validated, read field by field.
      expect(run.stdout).toContain('report card: Barbara Liskov leads with $500.00 of paid revenue');
      expect(run.stdout).toContain('total revenue: $1392.00 USD from 3 customers');

      // Re-runnable in the same folder: a new session each time, both kept in .trellis/trellis.db.
      const again = await node(EXAMPLE, [], cwd);
      expect(again.code).toBe(0);
      const sessionOf = (r: Run) => /session (desk-\w+) in \.trellis\/trellis\.db/.exec(r.stdout)?.[1];
      expect(sessionOf(again)).toBeDefined();
      expect(sessionOf(again)).not.toBe(sessionOf(run));
      const listed = await trellis(cwd, 'sessions');
      expect(
        lines(listed.stdout)
          .map((l) => l.split('  ')[0])
          .sort(),
      ).toEqual([sessionOf(run), sessionOf(again)].sort());
      expect(again.stdout).toContain('Saved 3 rows to .trellis/exports/top-customers-2.csv.');

      // Then the README's approval from the command line, after npm start wrote its files: it works the first time.
      const asked = await trellis(cwd, 'run', 'Please export that list as a CSV file.', '-s', 'q1');
      const approve = /^Decide with: (.+ resume q1 --approve call_\w+) {2}/m.exec(asked.stdout)![1]!;
      const approved = await shell(approve, cwd);
      expect(approved.stdout).toContain(`Saved 3 rows to ${join(cwd, '.trellis/exports/top-customers-3.csv')}.`);
      expect(approved.stdout).not.toContain('I did not write the file');
    },
    5 * RUN_TIMEOUT_MS,
  );
});

describe('the trellis CLI', () => {
  it(
    'prints help for the program and for a command',
    async () => {
      const cwd = workdir();
      const [help, resumeHelp] = await Promise.all([trellis(cwd, '--help'), trellis(cwd, 'resume', '--help')]);

      expect(help.code).toBe(0);
      for (const command of ['run', 'chat', 'plugins', 'sessions', 'resume'])
        expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
      expect(resumeHelp.code).toBe(0);
      expect(resumeHelp.stdout).toContain('Usage: trellis resume [options] <session>');
      expect(resumeHelp.stdout).toContain('--approve <callId>');
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'lists the example plugins: tools with input schemas and middleware, hooks by point and priority',
    async () => {
      const listing = await trellis(workdir(), 'plugins');

      expect(listing.code).toBe(0);
      expect(listing.stdout).toContain('tool db.search');
      expect(listing.stdout).toMatch(/input: \{ sql: string .*limit\?: integer/);
      expect(listing.stdout).toContain('middleware: LoggingMiddleware → RetryMiddleware');
      expect(listing.stdout).toContain('planning.started: strategy.plan (10), reflection.remind (100)');
      expect(listing.stdout).toContain('tool.gate: export.requireApproval (100)');
      expect(listing.stdout).toMatch(/^db 1\.0\.0 .*\n {2}owner: data-platform/m);
      expect(listing.stdout).toMatch(/^export 1\.0\.0 .*\n {2}owner: reporting/m);
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'runs one message: the reply, one summary line, and a plain note that the scripted model answered',
    async () => {
      const cwd = workdir();
      const run = await trellis(cwd, 'run', 'Who are our best customers?');

      expect(run.code).toBe(0);
      const out = lines(run.stdout);
      expect(out[0]).toBe('Top customers by paid revenue:');
      expect(out.at(-1)).toMatch(/^— completed · 3 rounds · 2 tools · \d+ tokens · \d+(\.\d)? m?s · session [\w-]+$/);
      expect(lines(run.stderr)[0]).toBe(
        `note: no trellis.config.{ts,js,mjs,json} in ${cwd}; running the SQL report desk example, which writes its sessions, database, logs and exports under ${join(cwd, '.trellis')} (node ${CLI} init <dir> creates a project of your own)`,
      );
      expect(lines(run.stderr)[1]).toBe(
        "note: no OPENAI_API_KEY or ANTHROPIC_API_KEY; using the example's scripted model (offline, canned answers)",
      );

      const session = /session ([\w-]+)$/.exec(out.at(-1)!)![1]!;
      const listed = await trellis(cwd, 'sessions');
      expect(listed.stdout).toContain(`${session}  sql-report-desk  1 turn  `);
      const shown = await trellis(cwd, 'sessions', 'show', session);
      expect(shown.stdout).toContain('user: Who are our best customers?');
      expect(shown.stdout).toContain('1. Barbara Liskov (US) — $500.00');
    },
    3 * RUN_TIMEOUT_MS,
  );

  it(
    'suspends an export, runs it once on `resume --approve`, and refuses a second resume in one line',
    async () => {
      const cwd = workdir();
      const asked = await trellis(cwd, 'run', '--session', 'exp', 'Export the top customers to CSV');
      expect(asked.code).toBe(0);
      expect(asked.stdout).toMatch(/— suspended · 1 round · 0 tools/);
      // Started with plain node outside any project, the CLI prints the command the same way.
      const decide = /^Decide with: (.+ resume exp --approve (call_\w+)) {3}\(or --reject call_\w+\)$/m.exec(
        asked.stdout,
      )!;
      const callId = decide[2]!;
      expect(decide[1]).toBe(`node ${CLI} resume exp --approve ${callId}`);
      expect(existsSync(join(cwd, '.trellis/exports/top-customers.csv'))).toBe(false);

      // What it printed runs as printed, in a shell.
      const approved = await shell(decide[1]!, cwd);
      expect(approved.code).toBe(0);
      expect(approved.stdout).toContain(`Saved 3 rows to ${join(cwd, '.trellis/exports/top-customers.csv')}.`);
      expect(lines(readFileSync(join(cwd, '.trellis/exports/top-customers.csv'), 'utf8'))).toHaveLength(4);

      // A decision applied twice changes nothing: said in one line, exit 0, no notes, nothing run again.
      const again = await trellis(cwd, 'resume', 'exp', '--approve', callId);
      expect(again.code).toBe(0);
      expect(again.stderr).toBe('');
      expect(lines(again.stdout)).toEqual([
        `Nothing to do: ${callId} was already decided (see node ${CLI} sessions show exp)`,
      ]);
      expect(lines(readFileSync(join(cwd, '.trellis/exports/top-customers.csv'), 'utf8'))).toHaveLength(4);
    },
    3 * RUN_TIMEOUT_MS,
  );

  it(
    'chats over stdin: streams the reply and asks before the export runs',
    async () => {
      const cwd = workdir();
      const chat = await node(CLI, ['chat'], cwd, 'Who are our best customers?\nplease export that as csv\nn\n');

      expect(chat.code).toBe(0);
      expect(chat.stdout).toContain('assistant> Top customers by paid revenue:');
      expect(chat.stdout).toMatch(/export\.csv \(call_\w+\) waits for approval/);
      expect(chat.stdout).toMatch(/rejected call_\w+/);
      expect(chat.stdout).toContain('assistant> I did not write the file:');
      expect(existsSync(join(cwd, '.trellis/exports/top-customers.csv'))).toBe(false);
    },
    RUN_TIMEOUT_MS,
  );

  it.each([
    [
      'an unknown session (show)',
      ['sessions', 'show', 'no-such-session'],
      1,
      /^trellis: No session 'no-such-session' in /,
    ],
    ['a bad flag', ['run', '--no-such-flag', 'hi'], 2, /^trellis: unknown option '--no-such-flag'/],
  ])(
    'answers %s with one line on stderr and a non-zero exit',
    async (_what, args, code, message) => {
      const run = await trellis(workdir(), ...args);

      expect(run.code).toBe(code);
      expect(lines(run.stderr)).toHaveLength(1);
      expect(run.stderr).toMatch(message);
      expect(run.stdout).toBe('');
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'runs the plugins and agent named in trellis.config.json instead of the example',
    async () => {
      const cwd = workdir();
      mkdirSync(join(cwd, 'plugins'));
      const index = pathToFileURL(join(ROOT, 'dist/index.js')).href;
      // Plain JavaScript has no decorator syntax yet: apply them as functions.
      writeFileSync(
        join(cwd, 'plugins/greeter.plugin.js'),
        `import { Plugin, Tool } from '${index}';
       class GreetInput {}
       export class GreeterPlugin { greet() { return 'hello'; } }
       Tool({ name: 'greeter.greet', description: 'Says hello. Use to greet.', input: GreetInput })(GreeterPlugin.prototype, 'greet');
       Plugin({ name: 'greeter', version: '2.1.0', description: 'Greets people' })(GreeterPlugin);`,
      );
      writeFileSync(
        join(cwd, 'trellis.config.json'),
        JSON.stringify({
          plugins: './plugins',
          agent: { name: 'greeter-agent', instructions: 'Greet.' },
          store: 'data/greeter.db',
        }),
      );

      const listing = await trellis(cwd, 'plugins');
      expect(listing.code).toBe(0);
      expect(listing.stdout).toContain(`Plugins from ${join(cwd, 'trellis.config.json')}`);
      expect(listing.stdout).toContain('greeter 2.1.0 — Greets people');
      expect(listing.stdout).toContain('tool greeter.greet');
      expect(listing.stdout).not.toContain('db.search');

      // The user's own config and no key: no falling back to the example's scripted model.
      const run = await trellis(cwd, 'run', '--session', 'g1', 'hi');
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(lines(run.stderr)).toEqual([
        'trellis: No model to run with: neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set. Set OPENAI_API_KEY or ANTHROPIC_API_KEY, or set model in a .ts/.js config to a ModelProvider (e.g. a ScriptedModel)',
      ]);
      expect(existsSync(join(cwd, 'data/greeter.db'))).toBe(true);
    },
    3 * RUN_TIMEOUT_MS,
  );

  const INDEX = () => pathToFileURL(join(ROOT, 'dist/index.js')).href;
  /** What a plugin author imports (`trellis/plugin`): the decorators and `PLUGIN_CONFIG`. */
  const PLUGIN = () => pathToFileURL(join(ROOT, 'dist/plugin.js')).href;
  const DEP = (name: string) => pathToFileURL(join(ROOT, 'node_modules', name)).href;
  /** A plugin taking config (units), a service ('greeting') and session context (app.locale). */
  function writeWeatherPlugin(cwd: string): void {
    mkdirSync(join(cwd, 'plugins'), { recursive: true });
    writeFileSync(
      join(cwd, 'plugins/weather.js'),
      `import { Plugin, Tool, Requires, PLUGIN_CONFIG } from '${PLUGIN()}';
       import { inject } from '${DEP('inversify/lib/index.js')}';
       import { IsIn } from '${DEP('class-validator/cjs/index.js')}';
       export class WeatherConfig { units = 'metric'; }
       IsIn(['metric', 'imperial'])(WeatherConfig.prototype, 'units');
       class NowInput {}
       export class WeatherPlugin {
         constructor(config, greeting) { this.config = config; this.greeting = greeting; }
         now(_input, ctx) { return { units: this.config.units, greeting: this.greeting, locale: ctx.get('app.locale') }; }
       }
       inject(PLUGIN_CONFIG)(WeatherPlugin, undefined, 0);
       inject('greeting')(WeatherPlugin, undefined, 1);
       Requires('app.locale')(WeatherPlugin.prototype, 'now');
       Tool({ name: 'weather.now', description: 'The weather now. Use for weather questions.', input: NowInput })(WeatherPlugin.prototype, 'now');
       Plugin({ name: 'weather', version: '1.0.0', config: WeatherConfig })(WeatherPlugin);`,
    );
  }

  it(
    'gives a plugin its config, services and session context from trellis.config.mjs',
    async () => {
      const cwd = workdir();
      writeWeatherPlugin(cwd);
      writeFileSync(
        join(cwd, 'trellis.config.mjs'),
        `import { ScriptedModel } from '${INDEX()}';
       export default {
         plugins: [{ path: './plugins/weather.js', config: { units: 'imperial' } }],
         context: { 'app.locale': 'en-GB' },
         providers: [{ provide: 'greeting', useValue: 'howdy' }],
         model: new ScriptedModel((request, i) => i === 0 ? { toolCalls: [{ name: 'weather.now', args: {} }] } : 'Tool said: ' + request.messages.at(-1).content),
       };`,
      );

      const run = await trellis(cwd, 'run', 'weather?');

      expect(run.stderr).not.toMatch(/^trellis:/m);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('"units":"imperial"');
      expect(run.stdout).toContain('"greeting":"howdy"');
      expect(run.stdout).toContain('"locale":"en-GB"');
      expect(run.stdout).toMatch(/— completed · 2 rounds · 1 tool/);
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'loads a trellis.config.ts with { plugin: Class, config } and TypeScript decorators, with no tsconfig.json in the folder',
    async () => {
      const cwd = workdir();
      mkdirSync(join(cwd, 'plugins'));
      writeFileSync(join(cwd, 'package.json'), JSON.stringify({ type: 'module' }));
      writeFileSync(
        join(cwd, 'plugins/echo.plugin.ts'),
        `import { Plugin, Tool, PLUGIN_CONFIG } from '${PLUGIN()}';
       import { inject } from '${DEP('inversify/lib/index.js')}';
       import { IsString } from '${DEP('class-validator/cjs/index.js')}';
       export class EchoConfig { @IsString() prefix!: string; }
       class SayInput {}
       @Plugin({ name: 'echo', version: '1.0.0', config: EchoConfig })
       export class EchoPlugin {
         constructor(@inject(PLUGIN_CONFIG) private readonly config: EchoConfig) {}
         @Tool({ name: 'echo.say', description: 'Says the prefix. Use to test.', input: SayInput })
         say() { return this.config.prefix + ' from config'; }
       }`,
      );
      writeFileSync(
        join(cwd, 'trellis.config.ts'),
        `import { ScriptedModel } from '${INDEX()}';
       import { EchoPlugin } from './plugins/echo.plugin.ts';
       export default {
         plugins: [{ plugin: EchoPlugin, config: { prefix: 'hello' } }],
         model: new ScriptedModel([{ toolCalls: [{ name: 'echo.say', args: {} }] }, 'ok']),
       };`,
      );

      const run = await trellis(cwd, 'run', 'say it');

      expect(run.stderr).not.toMatch(/^trellis:/m);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/— completed · 2 rounds · 1 tool/);
      const shown = await trellis(cwd, 'sessions', 'show', /session ([\w-]+)$/m.exec(run.stdout)![1]!);
      expect(shown.stdout).toContain('hello from config');
    },
    2 * RUN_TIMEOUT_MS,
  );

  it(
    "injects a plugin's constructor parameters by type, as tsc and ts-jest do: the CLI compiles decorated modules with their metadata",
    async () => {
      const cwd = workdir();
      mkdirSync(join(cwd, 'plugins'));
      writeFileSync(join(cwd, 'package.json'), JSON.stringify({ type: 'module' }));
      writeFileSync(
        join(cwd, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            experimentalDecorators: true,
            emitDecoratorMetadata: true,
            isolatedModules: true,
            skipLibCheck: true,
          },
        }),
      );
      writeFileSync(join(cwd, 'clock.ts'), `export class Clock { now(): string { return 'twelve o\\'clock'; } }`);
      // The way a NestJS team writes it: no @inject, the parameter's type says what it needs.
      writeFileSync(
        join(cwd, 'plugins/time.plugin.ts'),
        `import { Plugin, Tool } from '${INDEX()}';
       import { Clock } from '../clock.js';
       class NowInput {}
       @Plugin({ name: 'time', version: '1.0.0' })
       export class TimePlugin {
         constructor(private readonly clock: Clock) {}
         @Tool({ name: 'time.now', description: 'Tells the time. Use to test.', input: NowInput })
         now(): string { return this.clock.now(); }
       }`,
      );
      writeFileSync(
        join(cwd, 'trellis.config.ts'),
        `import { ScriptedModel } from '${INDEX()}';
       import { Clock } from './clock.js';
       import { TimePlugin } from './plugins/time.plugin.js';
       export default {
         plugins: [TimePlugin],
         providers: [Clock],
         model: new ScriptedModel([{ toolCalls: [{ name: 'time.now', args: {} }] }, 'ok']),
       };`,
      );

      // The first start loads TypeScript too: slower than the others on a busy machine.
      const run = await node(CLI, ['run', 'what time is it?'], cwd, undefined, {}, 3 * RUN_TIMEOUT_MS);

      expect(run.stderr).not.toMatch(/^trellis:/m);
      expect(run.code).toBe(0);
      const shown = await trellis(cwd, 'sessions', 'show', /session ([\w-]+)$/m.exec(run.stdout)![1]!);
      expect(shown.stdout).toContain("twelve o'clock");
    },
    5 * RUN_TIMEOUT_MS,
  );

  it(
    'points an invalid plugin config at trellis.config, field by field, on lines of their own',
    async () => {
      const cwd = workdir();
      writeWeatherPlugin(cwd);
      const config = join(cwd, 'trellis.config.json');
      writeFileSync(
        config,
        JSON.stringify({ plugins: [{ path: './plugins/weather.js', config: { units: 'kelvin' } }] }),
      );

      const listing = await trellis(cwd, 'plugins');

      expect(listing.code).toBe(1);
      const err = lines(listing.stderr);
      expect(err[0]).toBe("trellis: Plugin 'weather' config is invalid:");
      expect(err[1]).toMatch(/^ {2}- units: units must be one of the following values: metric, imperial$/);
      expect(err.at(-1)).toBe(`  Fix its "config" in the plugins entry ./plugins/weather.js of ${config}`);
      expect(listing.stderr).not.toContain('app.install');
      expect(listing.stderr).not.toMatch(/\bat .*\.js:\d+/);
    },
    RUN_TIMEOUT_MS,
  );

  it.each([
    ['a plugins directory', './plugins'],
    ['an explicit module path', ['./plugins/bad.ts']],
  ])(
    'names the file and the reason when a TypeScript plugin has a syntax error (%s)',
    async (_what, plugins) => {
      const cwd = workdir();
      mkdirSync(join(cwd, 'plugins'));
      writeFileSync(join(cwd, 'package.json'), JSON.stringify({ type: 'module' }));
      writeFileSync(
        join(cwd, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            target: 'ES2022',
            experimentalDecorators: true,
          },
        }),
      );
      writeFileSync(join(cwd, 'plugins/bad.ts'), 'export const x = ;\n');
      writeFileSync(join(cwd, 'trellis.config.json'), JSON.stringify({ plugins }));

      const listing = await trellis(cwd, 'plugins');

      expect(listing.code).toBe(1);
      expect(listing.stderr).not.toContain('Cannot convert object to primitive value');
      expect(listing.stderr).toMatch(/^trellis: /);
      expect(listing.stderr).toContain(join(cwd, 'plugins/bad.ts'));
      expect(listing.stderr).toContain('Unexpected ";"');
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'names the file and the reason when a JavaScript plugin has a syntax error',
    async () => {
      const cwd = workdir();
      mkdirSync(join(cwd, 'plugins'));
      writeFileSync(join(cwd, 'plugins/bad.js'), 'export const x = ;\n');
      writeFileSync(join(cwd, 'trellis.config.json'), JSON.stringify({ plugins: './plugins' }));

      const listing = await trellis(cwd, 'plugins');

      expect(listing.code).toBe(1);
      expect(listing.stderr).toContain(`${join(cwd, 'plugins/bad.js')}: import failed: Unexpected token ';'`);
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'stops quietly, exit 0, when the reader of its output goes away (trellis plugins | head -1)',
    async () => {
      const child = spawn(process.execPath, [CLI, 'plugins'], {
        cwd: workdir(),
        env: offlineEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.destroy(); // the reader is gone before the CLI writes
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));

      expect(stderr).not.toMatch(/EPIPE|Unhandled 'error' event/);
      expect(code).toBe(0);
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'reads the config from the folder npm was started in (INIT_CWD) under npm run trellis',
    async () => {
      const user = workdir();
      const packageRoot = workdir();
      writeFileSync(join(user, 'trellis.config.json'), JSON.stringify({ agent: { name: 'mine' } }));

      const listing = await node(CLI, ['plugins'], packageRoot, undefined, {
        INIT_CWD: user,
        npm_package_json: join(packageRoot, 'package.json'),
      });

      expect(listing.code).toBe(0);
      expect(listing.stdout).toContain(`Plugins from ${join(user, 'trellis.config.json')}`);
    },
    RUN_TIMEOUT_MS,
  );
});
