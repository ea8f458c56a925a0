import 'reflect-metadata';
import { Hook, Plugin, ScriptedModel, suspend, Trellis, type ToolCallInfo } from 'trellis';
import { McpServerClient } from '../../../src/hosts/mcp/client/mcp-server-client.js';
import { isRunning, TRIP_SERVER, waitFor } from '../../support/mcp-peers.js';

const stdio = { command: process.execPath, args: [TRIP_SERVER] };

describe('MCP client over stdio, against a server built with the SDK', () => {
  let app: Trellis;
  afterEach(async () => app?.stop());

  it('installs the server tools as a plugin named after the server and runs them in a turn', async () => {
    app = Trellis.create();
    const mcp = await McpServerClient.connect(app, 'trips', stdio);
    expect([...mcp.toolNames].sort()).toEqual([
      'trips.add_tool',
      'trips.book',
      'trips.echo',
      'trips.fail',
      'trips.impatient',
      'trips.list_resources',
      'trips.plan_trip',
      'trips.read_resource',
      'trips.reserve',
      'trips.whoami',
    ]);
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'trips.echo', args: { text: 'hi' } },
          { name: 'trips.fail', args: {} },
        ],
      },
      'done',
    ]);
    const result = await app.agent({ name: 'a', model, instructions: '' }).session().send('go');
    expect(result.toolCalls.map((c) => (c.ok ? c.value : c.error?.code))).toEqual(['echo: hi', 'ToolFailed']);
    expect(result.toolCalls[1]!.error?.message).toContain('the trip database is down');
  });

  it('offers the model the schema unchanged ($defs, $ref) and validates against it exactly', async () => {
    app = Trellis.create();
    await McpServerClient.connect(app, 'trips', stdio);
    const model = new ScriptedModel([
      // `extra` is only forbidden by the $defs/Stop the item $ref points to: caught by Trellis, never sent.
      { toolCalls: [{ name: 'trips.plan_trip', args: { stops: [{ city: 'Oslo', nights: 2, extra: true }] } }] },
      {
        toolCalls: [
          {
            name: 'trips.plan_trip',
            args: {
              stops: [
                { city: 'Oslo', nights: 2 },
                { city: 'Rome', nights: 3 },
              ],
            },
          },
        ],
      },
      'ok',
    ]);
    const result = await app.agent({ name: 'a', model, instructions: '' }).session().send('plan');
    const offered = model.calls[0]!.tools.find((t) => t.name === 'trips.plan_trip')!.inputSchema;
    expect(offered.$defs).toEqual({
      Stop: {
        type: 'object',
        properties: { city: { type: 'string' }, nights: { type: 'integer', minimum: 1 } },
        required: ['city', 'nights'],
        additionalProperties: false,
      },
    });
    expect(JSON.stringify(offered)).toContain('"$ref":"#/$defs/Stop"');
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolInput' } });
    expect(result.toolCalls[0]!.error!.message).toContain('stops[0].extra');
    expect(result.toolCalls[1]).toMatchObject({ ok: true, value: '2 stops, 5 nights' });
  });

  it('suspends an MCP call at tool.gate and runs it once approved with session.resume', async () => {
    @Plugin({ name: 'approvals', version: '1.0.0' })
    class Approvals {
      @Hook('tool.gate')
      gate(call: ToolCallInfo) {
        return call.tool === 'trips.echo' ? suspend('Echo needs approval') : undefined;
      }
    }
    app = Trellis.create();
    await McpServerClient.connect(app, 'trips', stdio);
    await app.install(Approvals);
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'trips.echo', args: { text: 'approved' }, id: 'c1' }] },
      'sent',
    ]);
    const session = app.agent({ name: 'a', model, instructions: '' }).session();
    const first = await session.send('echo');
    expect(first.status).toBe('suspended');
    expect(first.suspended![0]!.callId).toBe('c1');
    const resumed = await session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] });
    expect(resumed.status).toBe('completed');
    expect(resumed.toolCalls).toEqual([expect.objectContaining({ callId: 'c1', ok: true, value: 'echo: approved' })]);
  });

  it('reconnects after the server is killed mid-session, with a new process', async () => {
    app = Trellis.create();
    const mcp = await McpServerClient.connect(app, 'trips', stdio, { initialDelayMs: 20 });
    const session = app
      .agent({
        name: 'a',
        model: new ScriptedModel((req, i) =>
          i % 2 === 0 ? { toolCalls: [{ name: 'trips.whoami', args: {} }] } : 'ok',
        ),
        instructions: '',
      })
      .session();
    const before = (await session.send('who')).toolCalls[0]!.value as string;
    expect(Number(before)).toBe(mcp.pid);
    process.kill(Number(before), 'SIGKILL');
    await waitFor(() => !isRunning(Number(before)));
    const after = (await session.send('who again')).toolCalls[0]!;
    expect(after.ok).toBe(true);
    expect(after.value).not.toBe(before);
    expect(Number(after.value)).toBe(mcp.pid);
  });

  it('swaps the plugin with app.reload when the server says its tool list changed', async () => {
    app = Trellis.create();
    const mcp = await McpServerClient.connect(app, 'trips', stdio);
    const reloaded: string[] = [];
    app.events$.subscribe((e) => e.type === 'plugin.reloaded' && reloaded.push(e.plugin));
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'trips.add_tool', args: {} }] },
      'added',
      { toolCalls: [{ name: 'trips.late_tool', args: { n: 21 } }] },
      'ok',
    ]);
    const session = app.agent({ name: 'a', model, instructions: '' }).session();
    await session.send('add');
    await waitFor(() => mcp.toolNames.includes('trips.late_tool'));
    // The new tools are visible as soon as the reload publishes them; the event follows once
    // the old plugin is torn down, which settled() waits for.
    await mcp.settled();
    expect(reloaded).toEqual(['trips']);
    const result = await session.send('use it');
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: 'late 42' });
  });

  it('stops the stdio child on app.stop, leaving no orphan', async () => {
    app = Trellis.create();
    const mcp = await McpServerClient.connect(app, 'trips', stdio);
    const pid = mcp.pid!;
    expect(isRunning(pid)).toBe(true);
    await app.stop();
    await waitFor(() => !isRunning(pid), 5000);
  });

  it('stops the child when the plugin is uninstalled', async () => {
    app = Trellis.create();
    const mcp = await McpServerClient.connect(app, 'trips', stdio);
    const pid = mcp.pid!;
    await app.uninstall('trips');
    await waitFor(() => !isRunning(pid), 5000);
  });

  it('reports a server that fails to start as a clear install error', async () => {
    app = Trellis.create();
    const broken = { command: process.execPath, args: ['-e', 'console.error("missing API key FOO"); process.exit(3)'] };
    const error = await McpServerClient.connect(app, 'broken', broken).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'McpServerFailed' });
    expect((error as Error).message).toMatch(/MCP server 'broken' \(stdio: .*\) could not be started/);
    expect((error as Error).message).toContain('missing API key FOO');
    expect(app.describe().plugins.some((p) => p.name === 'broken')).toBe(false);
    const missing = await McpServerClient.connect(app, 'nothere', { command: '/no/such/binary' }).catch(
      (e: unknown) => e,
    );
    expect(missing).toMatchObject({ code: 'McpServerFailed' });
    expect((missing as Error).message).toContain('ENOENT');
  });
});
