import 'reflect-metadata';
import { ScriptedModel, Trellis } from 'trellis';
import { McpServerClient } from '../../../src/hosts/mcp/client/mcp-server-client.js';
import { startHttpTripServer } from '../../support/mcp-peers.js';

describe('MCP client over Streamable HTTP, against a server built with the SDK', () => {
  let app: Trellis;
  let servers: { stop(): Promise<void> }[] = [];
  afterEach(async () => {
    await app?.stop();
    for (const s of servers) await s.stop();
    servers = [];
  });

  it('calls tools, validating against the $defs schema, and survives a server restart mid-session', async () => {
    const first = await startHttpTripServer();
    servers.push(first);
    app = Trellis.create();
    await McpServerClient.connect(app, 'trips', { url: first.url }, { initialDelayMs: 20 });
    const model = new ScriptedModel((request, i) =>
      i % 2 === 0
        ? {
            toolCalls: [
              { name: 'trips.plan_trip', args: { stops: [{ city: 'Oslo', nights: i + 1 }] } },
              { name: 'trips.whoami', args: {} },
            ],
          }
        : 'ok',
    );
    const session = app.agent({ name: 'a', model, instructions: '' }).session();
    const before = await session.send('plan');
    expect(before.toolCalls.map((c) => c.value)).toEqual(['1 stops, 1 nights', String(first.child.pid)]);
    // The server dies and comes back on the same port; it no longer knows the client's session (404).
    await first.stop();
    const second = await startHttpTripServer(first.port);
    servers.push(second);
    const after = await session.send('plan again');
    expect(after.toolCalls.map((c) => c.value)).toEqual(['1 stops, 3 nights', String(second.child.pid)]);
  });

  it('waits for a server that is down and fails the call as retryable when it does not come back', async () => {
    const server = await startHttpTripServer();
    servers.push(server);
    app = Trellis.create();
    await McpServerClient.connect(
      app,
      'trips',
      { url: server.url },
      { initialDelayMs: 20, maxDelayMs: 50, callWaitMs: 500 },
    );
    await server.stop();
    const model = new ScriptedModel([{ toolCalls: [{ name: 'trips.echo', args: { text: 'x' } }] }, 'ok']);
    const result = await app.agent({ name: 'a', model, instructions: '' }).session().send('echo');
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'McpUnavailable', retryable: true } });
    expect(result.toolCalls[0]!.error!.message).toContain("MCP server 'trips' (http: ");
  });
});
