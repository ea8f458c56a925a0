import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { SqliteStore, Trellis } from 'trellis';
import { APPROVAL_REQUIRED, serveMcp, servedCallModel, type McpServing } from 'trellis/mcp';
import { ExportPlugin, exportRuns } from '../../support/export-desk.js';

/** The SDK's Client over in-memory stdio streams: the other end of serveMcp({ transport: { kind: 'stdio', stdin, stdout } }). */
function pipeTransport(toServer: PassThrough, fromServer: PassThrough): Transport {
  let buffer = '';
  const transport: Transport = {
    start: async () => {
      fromServer.setEncoding('utf8').on('data', (chunk: string) => {
        buffer += chunk;
        for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
          const line = buffer.slice(0, i);
          buffer = buffer.slice(i + 1);
          transport.onmessage?.(JSON.parse(line) as JSONRPCMessage);
        }
      });
    },
    send: async (message) => void toServer.write(`${JSON.stringify(message)}\n`),
    close: async () => {
      toServer.end();
      transport.onclose?.();
    },
  };
  return transport;
}

type Answer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> };

describe('serveMcp over stdio: a gated call asks the MCP client by elicitation', () => {
  let app: Trellis;
  let serving: McpServing;
  let answer: Answer;
  let asked: { message: string; requestedSchema: { properties: Record<string, { enum?: string[] }> } }[];
  let client: Client;
  beforeEach(async () => {
    exportRuns.length = 0;
    asked = [];
    app = Trellis.create();
    await app.install(ExportPlugin);
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    serving = await serveMcp(app, { transport: { kind: 'stdio', stdin, stdout } });
    client = new Client({ name: 'approver', version: '1' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params as never);
      return answer;
    });
    await client.connect(pipeTransport(stdin, stdout));
  });
  afterEach(async () => {
    await client.close();
    await serving.close();
    await app.stop();
  });

  it('approve: the human is asked with the ticket and the arguments, then the call runs once', async () => {
    answer = { action: 'accept', content: { decision: 'approve' } };
    const result = await client.callTool({ name: 'files.export', arguments: { name: 'q3' } });
    expect(result).toMatchObject({ content: [{ type: 'text', text: '{"written":"q3.csv","rows":3}' }] });
    expect(result.isError).toBeFalsy();
    expect(asked).toHaveLength(1);
    expect(asked[0]!.message).toContain('Write the CSV file?');
    expect(asked[0]!.message).toContain('"name":"q3"');
    // The ticket allows approve and reject only, so the form offers no edit.
    expect(asked[0]!.requestedSchema.properties.decision!.enum).toEqual(['approve', 'reject']);
    expect(exportRuns).toEqual(['q3']);
  });

  it('reject, decline and cancel never run the call', async () => {
    for (const a of [
      { action: 'accept', content: { decision: 'reject', reason: 'not now' } },
      { action: 'decline' },
      { action: 'cancel' },
    ] as Answer[]) {
      answer = a;
      const result = await client.callTool({ name: 'files.export', arguments: { name: 'q3' } });
      expect(result.isError).toBe(true);
      expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toMatchObject({
        error: { code: 'Rejected' },
      });
    }
    expect(exportRuns).toEqual([]);
  });

  it('edit: the call runs once with the edited arguments', async () => {
    answer = { action: 'accept', content: { decision: 'edit', arguments: '{"name":"q3-fixed"}' } };
    expect(await client.callTool({ name: 'files.purge', arguments: { name: 'q3' } })).toMatchObject({
      content: [{ text: 'purged q3-fixed' }],
    });
    expect(asked[0]!.requestedSchema.properties.decision!.enum).toEqual(['approve', 'reject', 'edit']);
    expect(exportRuns).toEqual(['purged q3-fixed']);
    // Edited arguments are checked like the model's: a bad one runs nothing.
    answer = { action: 'accept', content: { decision: 'edit', arguments: '{"name":7}' } };
    const bad = await client.callTool({ name: 'files.purge', arguments: { name: 'q3' } });
    expect(JSON.parse((bad.content as { text: string }[])[0]!.text)).toMatchObject({ error: { code: 'ToolInput' } });
    expect(exportRuns).toEqual(['purged q3-fixed']);
  });

  it('a call that needs no approval asks nothing', async () => {
    expect(await client.callTool({ name: 'files.count', arguments: { name: 'abc' } })).toMatchObject({
      content: [{ text: '3' }],
    });
    expect(asked).toEqual([]);
  });
});

describe('serveMcp over stateless HTTP (no elicitation there): a gated call is parked in the store and waits for a decision made elsewhere', () => {
  let dir: string;
  let app: Trellis;
  let other: Trellis;
  let serving: McpServing;
  let client: Client;
  beforeEach(async () => {
    exportRuns.length = 0;
    dir = mkdtempSync(join(tmpdir(), 'trellis-mcp-park-'));
    app = Trellis.create({ store: SqliteStore.open(join(dir, 'store.db')) });
    await app.install(ExportPlugin);
    // Another process on the same store, as `trellis resume` would be.
    other = Trellis.create({ store: SqliteStore.open(join(dir, 'store.db')) });
    await other.install(ExportPlugin);
    client = new Client({ name: 'plain', version: '1' });
  });
  afterEach(async () => {
    await client.close();
    await serving.close();
    await app.stop();
    await other.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function parkedSession(): Promise<{ id: string; callId: string }> {
    for (let i = 0; i < 200; i++) {
      const store = SqliteStore.open(join(dir, 'store.db'));
      const listed = await store.list();
      await store.close();
      const found = listed.find((s) => s.id.includes(':approval-'));
      if (found) {
        const pending = await other
          .agent({ name: 'mcp', model: servedCallModel(), instructions: '' })
          .session(found.id)
          .pending();
        if (pending[0]) return { id: found.id, callId: pending[0].callId };
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('no parked call');
  }

  it('the request waits; an approval from another app on the store runs the call once and the MCP call gets its result', async () => {
    serving = await serveMcp(app, { transport: { kind: 'http', port: 0 }, approvals: { pollMs: 50 } });
    await client.connect(new StreamableHTTPClientTransport(new URL(serving.url!)));
    const calling = client.callTool({ name: 'files.export', arguments: { name: 'q4' } });
    const { id, callId } = await parkedSession();
    expect(exportRuns).toEqual([]);
    const resumed = await other
      .agent({ name: 'mcp', model: servedCallModel(), instructions: '' })
      .session(id)
      .resume({ decisions: [{ callId, decision: 'approve' }] });
    expect(resumed.status).toBe('completed');
    expect(await calling).toMatchObject({ content: [{ type: 'text', text: '{"written":"q4.csv","rows":3}' }] });
    expect(exportRuns).toEqual(['q4']);
  });

  it('past waitMs the call is answered APPROVAL_REQUIRED naming the session and call, which stay decidable', async () => {
    serving = await serveMcp(app, { transport: { kind: 'http', port: 0 }, approvals: { waitMs: 200, pollMs: 50 } });
    await client.connect(new StreamableHTTPClientTransport(new URL(serving.url!)));
    const error = (await client
      .callTool({ name: 'files.export', arguments: { name: 'q5' } })
      .catch((e: unknown) => e)) as McpError;
    expect(error).toBeInstanceOf(McpError);
    expect(error.code).toBe(APPROVAL_REQUIRED);
    expect(error.message).toMatch(
      /^MCP error -32010: Approval required: files.export was suspended by a gate \(Write the CSV file\?\) and is parked in session \S+:approval-\S+ as call \S+\. It did not run; decide it with: trellis resume /,
    );
    const { sessionId, callId } = error.data as { sessionId: string; callId: string };
    expect(exportRuns).toEqual([]);
    await other
      .agent({ name: 'mcp', model: servedCallModel(), instructions: '' })
      .session(sessionId)
      .resume({ decisions: [{ callId, decision: 'approve' }] });
    expect(exportRuns).toEqual(['q5']);
  });
});
