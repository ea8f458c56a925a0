import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildDist, BUILD_TIMEOUT_MS } from './support/built-dist.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { TRIP_SERVER } from '../support/mcp-peers.js';
import { browse, protectedServer } from '../support/oauth-peers.js';

/** `trellis mcp` and `trellis plugins` from dist/, with a config whose tools come from an MCP server (mcpServers). */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'dist/src/hosts/cli/main.js');
let dir: string;

beforeAll(async () => {
  await buildDist();
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-mcp-')));
  writeFileSync(
    join(dir, 'trellis.config.json'),
    JSON.stringify({ mcpServers: { trips: { command: process.execPath, args: [TRIP_SERVER] } } }),
  );
}, BUILD_TIMEOUT_MS);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('trellis mcp and mcpServers in trellis.config', () => {
  it('trellis plugins lists the MCP tools with their source', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'plugins'], { cwd: dir, timeout: 30_000 });
    expect(stdout).toContain("trips 2.1.0 — MCP server 'trips' (stdio: ");
    expect(stdout).toMatch(
      /tool trips\.plan_trip\n {4}Plan a trip through stops\.\n.*\n {4}source: MCP server trips, tool plan_trip/,
    );
  }, 40_000);

  it("serves the configured tools over stdio to the SDK's Client, with the schema unchanged", async () => {
    const client = new Client({ name: 'e2e', version: '1' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      cwd: dir,
      stderr: 'pipe',
    });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('trips.plan_trip');
      expect(tools.find((t) => t.name === 'trips.plan_trip')!.inputSchema).toHaveProperty(
        '$defs.Stop.additionalProperties',
        false,
      );
      const result = await client.callTool({
        name: 'trips.plan_trip',
        arguments: { stops: [{ city: 'Oslo', nights: 4 }] },
      });
      expect(result.content).toEqual([{ type: 'text', text: '1 stops, 4 nights' }]);
    } finally {
      await client.close();
    }
  }, 60_000);

  /** Starts `trellis mcp --http 0 …` and resolves with the child and the URL it prints. */
  async function serveHttp(args: string[], env: NodeJS.ProcessEnv = process.env) {
    const child = spawn(process.execPath, [CLI, 'mcp', '--http', '0', ...args], {
      cwd: dir,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const url = await new Promise<string>((resolve, reject) => {
      let err = '';
      child.stderr.on('data', (c: Buffer) => {
        err += c.toString();
        const m = /listening on (\S+)/.exec(err);
        if (m) resolve(m[1]!);
      });
      child.once('exit', () => reject(new Error(err)));
    });
    const stop = async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    };
    return { url, stop };
  }

  it("honours the config's context: a @Requires('app.tenant') tool gets it over MCP", async () => {
    const own = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-mcp-context-')));
    try {
      // A plain-JS plugin against the built package, decorators applied as functions.
      writeFileSync(
        join(own, 'tenant.plugin.mjs'),
        `import { Plugin, Tool, Requires } from ${JSON.stringify(join(ROOT, 'dist/index.js'))};
export class TenantPlugin { name(_input, ctx) { return 'tenant ' + ctx.deps['app.tenant']; } }
const d = Object.getOwnPropertyDescriptor(TenantPlugin.prototype, 'name');
Tool({ name: 'tenant.name', description: 'The tenant.', inputSchema: { type: 'object', properties: {}, additionalProperties: false } })(TenantPlugin.prototype, 'name', d);
Requires('app.tenant')(TenantPlugin.prototype, 'name', d);
Plugin({ name: 'tenant', version: '1.0.0' })(TenantPlugin);
`,
      );
      writeFileSync(
        join(own, 'trellis.config.json'),
        JSON.stringify({ plugins: ['./tenant.plugin.mjs'], context: { 'app.tenant': 'acme' } }),
      );
      const client = new Client({ name: 'e2e', version: '1' });
      await client.connect(
        new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], cwd: own, stderr: 'pipe' }),
      );
      try {
        expect(await client.callTool({ name: 'tenant.name', arguments: {} })).toMatchObject({
          content: [{ type: 'text', text: 'tenant acme' }],
        });
      } finally {
        await client.close();
      }
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  }, 60_000);

  it('parks a gated call for a client without elicitation; trellis resume in another process answers the waiting call', async () => {
    const own = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-mcp-park-')));
    const dist = JSON.stringify(join(ROOT, 'dist/index.js'));
    try {
      writeFileSync(
        join(own, 'trellis.config.mjs'),
        `import { Plugin, Tool, Hook, suspend, ScriptedModel } from ${dist};
export class Vault { wipe(input) { return 'wiped ' + input.what; } gate(call) { return call.tool === 'vault.wipe' ? suspend('Wipe it?') : undefined; } }
const p = Vault.prototype;
Tool({ name: 'vault.wipe', description: 'Wipe.', inputSchema: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'], additionalProperties: false } })(p, 'wipe', Object.getOwnPropertyDescriptor(p, 'wipe'));
Hook('tool.gate')(p, 'gate', Object.getOwnPropertyDescriptor(p, 'gate'));
Plugin({ name: 'vault', version: '1.0.0' })(Vault);
export default { plugins: [Vault], model: new ScriptedModel((req) => 'closing: ' + req.messages.at(-1).content) };
`,
      );
      const client = new Client({ name: 'plain', version: '1' });
      await client.connect(
        new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], cwd: own, stderr: 'pipe' }),
      );
      try {
        const calling = client.callTool({ name: 'vault.wipe', arguments: { what: 'cache' } });
        const { SqliteStore } = (await import(join(ROOT, 'dist/index.js'))) as typeof import('../../index.js');
        const { parseSuspension } = (await import(join(ROOT, 'dist/host.js'))) as typeof import('../../host.js');
        let parked: { id: string; callId: string } | undefined;
        for (let i = 0; i < 200 && !parked; i++) {
          await new Promise((r) => setTimeout(r, 100));
          const store = SqliteStore.open(join(own, '.trellis', 'trellis.db'));
          const found = (await store.list()).find((x) => x.id.includes(':approval-'));
          const stored = found && (await store.load(found.id));
          const pending = stored ? parseSuspension(stored.suspension, stored.id)?.pending[0] : undefined;
          if (found && pending) parked = { id: found.id, callId: pending.callId };
          await store.close();
        }
        expect(parked).toBeDefined();
        const { stdout } = await promisify(execFile)(
          process.execPath,
          [CLI, 'resume', parked!.id, '--approve', parked!.callId],
          { cwd: own, timeout: 30_000 },
        );
        expect(stdout).toContain('closing: wiped cache');
        expect(await calling).toMatchObject({ content: [{ type: 'text', text: 'wiped cache' }] });
      } finally {
        await client.close();
      }
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  }, 90_000);

  it('over --http (stateless: no elicitation, even for a client that offers it) the call is parked; trellis resume answers the waiting request', async () => {
    const own = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-mcp-park-http-')));
    const dist = JSON.stringify(join(ROOT, 'dist/index.js'));
    try {
      writeFileSync(
        join(own, 'trellis.config.mjs'),
        `import { Plugin, Tool, Hook, suspend, ScriptedModel } from ${dist};
export class Vault { wipe(input) { return 'wiped ' + input.what; } gate(call) { return call.tool === 'vault.wipe' ? suspend('Wipe it?') : undefined; } }
const p = Vault.prototype;
Tool({ name: 'vault.wipe', description: 'Wipe.', inputSchema: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'], additionalProperties: false } })(p, 'wipe', Object.getOwnPropertyDescriptor(p, 'wipe'));
Hook('tool.gate')(p, 'gate', Object.getOwnPropertyDescriptor(p, 'gate'));
Plugin({ name: 'vault', version: '1.0.0' })(Vault);
export default { plugins: [Vault], model: new ScriptedModel((req) => 'closing: ' + req.messages.at(-1).content) };
`,
      );
      const child = spawn(process.execPath, [CLI, 'mcp', '--http', '0'], {
        cwd: own,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      const url = await new Promise<string>((resolve, reject) => {
        let err = '';
        child.stderr.on('data', (c: Buffer) => {
          err += c.toString();
          const m = /listening on (\S+)/.exec(err);
          if (m) resolve(m[1]!);
        });
        child.once('exit', () => reject(new Error(err)));
      });
      const asked: unknown[] = [];
      const client = new Client({ name: 'eliciting', version: '1' }, { capabilities: { elicitation: {} } });
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params);
        return { action: 'accept', content: { decision: 'approve' } };
      });
      try {
        await client.connect(new StreamableHTTPClientTransport(new URL(url)));
        const calling = client.callTool({ name: 'vault.wipe', arguments: { what: 'logs' } });
        const { SqliteStore } = (await import(join(ROOT, 'dist/index.js'))) as typeof import('../../index.js');
        const { parseSuspension } = (await import(join(ROOT, 'dist/host.js'))) as typeof import('../../host.js');
        let parked: { id: string; callId: string } | undefined;
        for (let i = 0; i < 200 && !parked; i++) {
          await new Promise((r) => setTimeout(r, 100));
          const store = SqliteStore.open(join(own, '.trellis', 'trellis.db'));
          const found = (await store.list()).find((x) => x.id.includes(':approval-'));
          const stored = found && (await store.load(found.id));
          const pending = stored ? parseSuspension(stored.suspension, stored.id)?.pending[0] : undefined;
          if (found && pending) parked = { id: found.id, callId: pending.callId };
          await store.close();
        }
        expect(parked).toBeDefined();
        const { stdout } = await promisify(execFile)(
          process.execPath,
          [CLI, 'resume', parked!.id, '--approve', parked!.callId],
          { cwd: own, timeout: 30_000 },
        );
        expect(stdout).toContain('closing: wiped logs');
        expect(await calling).toMatchObject({ content: [{ type: 'text', text: 'wiped logs' }] });
        // Stateless HTTP cannot carry the server's question back to the client: nothing was asked.
        expect(asked).toEqual([]);
      } finally {
        await client.close();
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  }, 90_000);

  it("a server's question during trellis run waits as an approval; trellis resume in another process answers it, and the run goes on", async () => {
    const own = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-mcp-elicit-')));
    const dist = JSON.stringify(join(ROOT, 'dist/index.js'));
    try {
      writeFileSync(
        join(own, 'trellis.config.mjs'),
        `import { ScriptedModel } from ${dist};
export default {
  agent: { name: 'travel' },
  mcpServers: { trips: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(TRIP_SERVER)}] } },
  model: new ScriptedModel((req) => req.messages.at(-1).role === 'user' ? { toolCalls: [{ id: 'c' + Math.random().toString(36).slice(2), name: 'trips.book', args: { city: 'Oslo' } }] } : 'The server said: ' + req.messages.at(-1).content),
};
`,
      );
      const run = spawn(process.execPath, [CLI, 'run', 'Book Oslo', '--session', 'trip-1'], {
        cwd: own,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      run.stdout.on('data', (c: Buffer) => void (out += c.toString()));
      const exited = new Promise<number | null>((resolve) => run.once('exit', resolve));
      const note = await new Promise<RegExpExecArray>((resolve, reject) => {
        run.stderr.on('data', (c: Buffer) => {
          err += c.toString();
          const m =
            /MCP server 'trips' asks: Book Oslo\?\n {2}It waits as call (\S+) of session (\S+)\. Answer with: .* resume \S+ --approve \S+/.exec(
              err,
            );
          if (m) resolve(m);
        });
        void exited.then(() => reject(new Error(`trellis run ended first: ${err}`)));
      });
      const [, callId, sessionId] = note;
      expect(sessionId!.startsWith('trip-1:elicitation-')).toBe(true);
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [CLI, 'resume', sessionId!, '--approve', callId!],
        { cwd: own, timeout: 30_000 },
      );
      expect(stdout).toContain('"answer":"accept"');
      expect(await exited).toBe(0);
      expect(out).toContain('The server said: booked Oslo');
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  }, 90_000);

  it('an OAuth server (authorization code): trellis prints the sign-in URL once; the tokens go to the store, and the next command signs in no more', async () => {
    const server = await protectedServer();
    const own = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-mcp-oauth-')));
    const dist = JSON.stringify(join(ROOT, 'dist/index.js'));
    try {
      writeFileSync(
        join(own, 'trellis.config.mjs'),
        `import { ScriptedModel } from ${dist};
export default {
  mcpServers: { ledger: { url: ${JSON.stringify(server.url)}, oauth: { flow: 'authorization_code' } } },
  model: new ScriptedModel((req) => req.messages.at(-1).role === 'user' ? { toolCalls: [{ id: 'c' + Math.random().toString(36).slice(2), name: 'ledger.balance', args: { account: 'a1' } }] } : 'Balance: ' + req.messages.at(-1).content),
};
`,
      );
      const run = spawn(process.execPath, [CLI, 'run', 'What is the balance?'], {
        cwd: own,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      run.stdout.on('data', (c: Buffer) => void (out += c.toString()));
      const exited = new Promise<number | null>((resolve) => run.once('exit', resolve));
      const signIn = await new Promise<string>((resolve, reject) => {
        run.stderr.on('data', (c: Buffer) => {
          err += c.toString();
          const m = /MCP server 'ledger' needs you to sign in: open (\S+)/.exec(err);
          if (m) resolve(m[1]!);
        });
        void exited.then(() => reject(new Error(`trellis run ended first: ${err}`)));
      });
      expect(await browse(signIn)).toBe(200);
      expect(await exited).toBe(0);
      expect(out).toContain('Balance: a1: 42');
      // The next process reads the tokens from the store: no sign-in.
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, 'run', 'Again?'], {
        cwd: own,
        timeout: 30_000,
      });
      expect(stdout).toContain('Balance: a1: 42');
      expect(stderr).not.toContain('sign in');
      expect(server.auth.log).toMatchObject({ registrations: 1, signIns: 1, codeExchanges: 1 });
    } finally {
      rmSync(own, { recursive: true, force: true });
      await server.close();
    }
  }, 90_000);

  it('--token (or TRELLIS_MCP_TOKEN) requires the bearer token on every request', async () => {
    const token = 'a-secret-of-24-characters';
    const { url, stop } = await serveHttp(['--tool', 'trips.echo'], { ...process.env, TRELLIS_MCP_TOKEN: token });
    try {
      const stranger = new Client({ name: 'e2e', version: '1' });
      await expect(stranger.connect(new StreamableHTTPClientTransport(new URL(url)))).rejects.toThrow(
        /A valid bearer token is required/,
      );
      const client = new Client({ name: 'e2e', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
        }),
      );
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['trips.echo']);
      await client.close();
    } finally {
      await stop();
    }
  }, 60_000);

  it('refuses to listen beyond loopback without a token, and a short token, with exit code 2', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [CLI, 'mcp', ...args],
          { cwd: dir, timeout: 30_000, env: { ...process.env, TRELLIS_MCP_TOKEN: '' } },
          (error, _stdout, stderr) =>
            resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stderr }),
        );
      });
    const open = await run(['--http', '0', '--host', '0.0.0.0']);
    expect(open.code).toBe(2);
    expect(open.stderr).toContain(
      '--host 0.0.0.0 opens the MCP endpoint beyond this machine, so it needs a bearer token',
    );
    const short = await run(['--http', '0', '--token', 'short']);
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('shorter than 16 characters');
    const port = await run(['--http', 'eighty']);
    expect(port).toMatchObject({ code: 2, stderr: expect.stringContaining('--http eighty is not a TCP port') });
  }, 60_000);

  it('serves Streamable HTTP with --http', async () => {
    const { url, stop } = await serveHttp(['--tool', 'trips.echo']);
    try {
      const client = new Client({ name: 'e2e', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['trips.echo']);
      expect(await client.callTool({ name: 'trips.echo', arguments: { text: 'hey' } })).toMatchObject({
        content: [{ text: 'echo: hey' }],
      });
      await client.close();
    } finally {
      await stop();
    }
  }, 60_000);
});
