import 'reflect-metadata';
import { request } from 'node:http';
import { IsInt, IsString } from 'class-validator';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import {
  Hook,
  Plugin,
  Requires,
  ScriptedModel,
  suspend,
  Tool,
  Trellis,
  type ToolCallInfo,
  type ToolContext,
} from 'trellis';
import { APPROVAL_REQUIRED, serveMcp, type McpServing } from 'trellis/mcp';

class Add {
  @IsInt() a!: number;
  @IsInt() b!: number;
}
class Note {
  @IsString() text!: string;
}

@Plugin({ name: 'calc', version: '1.0.0' })
class Calc {
  @Tool({ name: 'calc.add', description: 'Add two integers.', input: Add })
  add(input: Add) {
    return input.a + input.b;
  }
  @Tool({ name: 'calc.whoami', description: 'The caller, from the bearer token.', input: Note })
  @Requires('app.user')
  whoami(input: Note, ctx: ToolContext) {
    return `${String(ctx.deps['app.user'])}: ${input.text}`;
  }
  @Tool({
    name: 'calc.wipe',
    description: 'Dangerous.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  })
  wipe() {
    return 'wiped';
  }
  @Tool({ name: 'calc.hidden', description: 'Not exposed.', input: Note })
  hidden() {
    return 'no';
  }
  @Hook('tool.gate')
  gate(call: ToolCallInfo) {
    return call.tool === 'calc.wipe' ? suspend('Wiping needs approval') : undefined;
  }
}

describe("serveMcp over Streamable HTTP, with the SDK's Client", () => {
  let app: Trellis;
  let serving: McpServing;
  let client: Client;
  beforeEach(async () => {
    app = Trellis.create();
    await app.install(Calc);
    const asker = app.agent({
      name: 'helper',
      model: new ScriptedModel([{ toolCalls: [{ name: 'calc.add', args: { a: 20, b: 22 } }] }, 'It is 42.']),
      instructions: '',
    });
    serving = await serveMcp(app, {
      transport: { kind: 'http', port: 0 },
      tools: ['calc.add', 'calc.whoami', 'calc.wipe'],
      ask: [asker],
      // No elicitation over stateless HTTP: a parked call waits this long for a decision made elsewhere.
      approvals: { waitMs: 100, pollMs: 20 },
      authenticate: (token) => (token === 'secret-ann' ? { 'app.user': 'ann' } : undefined),
    });
    client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(serving.url!), {
        requestInit: { headers: { Authorization: 'Bearer secret-ann' } },
      }),
    );
  });
  afterEach(async () => {
    await client.close();
    await serving.close();
    await app.stop();
  });

  it('lists the allowed tools with their DTO schemas and descriptions, and the ask tool', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['ask_helper', 'calc.add', 'calc.whoami', 'calc.wipe']);
    expect(tools.find((t) => t.name === 'calc.add')).toMatchObject({
      description: 'Add two integers.',
      inputSchema: {
        type: 'object',
        properties: { a: { type: 'integer' }, b: { type: 'integer' } },
        required: ['a', 'b'],
      },
    });
  });

  it('runs calls through the pipeline: results, validation errors, bearer context, unknown tools', async () => {
    expect(await client.callTool({ name: 'calc.add', arguments: { a: 2, b: 3 } })).toMatchObject({
      content: [{ type: 'text', text: '5' }],
    });
    const bad = await client.callTool({ name: 'calc.add', arguments: { a: 'x', b: 3 } });
    expect(bad.isError).toBe(true);
    expect(JSON.parse((bad.content as { text: string }[])[0]!.text)).toMatchObject({ error: { code: 'ToolInput' } });
    expect(await client.callTool({ name: 'calc.whoami', arguments: { text: 'hi' } })).toMatchObject({
      content: [{ text: 'ann: hi' }],
    });
    await expect(client.callTool({ name: 'calc.hidden', arguments: { text: 'x' } })).rejects.toThrow(
      /Unknown tool: calc.hidden/,
    );
    // The SDK's client adds "MCP error <code>: " to what the server sent: the server's message must not carry it already.
    const unknown = (await client
      .callTool({ name: 'calc.hidden', arguments: {} })
      .catch((e: unknown) => e)) as McpError;
    expect(unknown.message).toBe('MCP error -32602: Unknown tool: calc.hidden');
  });

  it('a suspended gate nobody decides in time is an MCP error saying approval is required and where the call is parked; the tool does not run', async () => {
    const error = await client.callTool({ name: 'calc.wipe', arguments: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(APPROVAL_REQUIRED);
    expect((error as McpError).message).toContain('Approval required');
    expect((error as McpError).message).toContain('Wiping needs approval');
    expect((error as McpError).message).toMatch(/^MCP error -32010: Approval required/);
    expect((error as McpError).message).not.toMatch(/MCP error -32010: MCP error/);
    expect((error as McpError).data).toMatchObject({
      code: 'ApprovalRequired',
      sessionId: expect.stringContaining(':approval-'),
      callId: expect.any(String),
    });
  });

  it('refuses a request without a valid bearer token', async () => {
    const stranger = new Client({ name: 'stranger', version: '1' });
    await expect(
      stranger.connect(
        new StreamableHTTPClientTransport(new URL(serving.url!), {
          requestInit: { headers: { Authorization: 'Bearer nope' } },
        }),
      ),
    ).rejects.toThrow(/A valid bearer token is required/);
  });

  it("bound to loopback, refuses a foreign Host (DNS rebinding) and another site's Origin before authentication; its own origin passes", async () => {
    const port = new URL(serving.url!).port;
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    const post = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        // node:http, because fetch does not let a caller set Host.
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path: '/mcp',
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              authorization: 'Bearer secret-ann',
              ...headers,
            },
          },
          (res) => {
            let body = '';
            res
              .setEncoding('utf8')
              .on('data', (c: string) => (body += c))
              .on('end', () => resolve({ status: res.statusCode!, body }));
          },
        );
        req.once('error', reject);
        req.end(JSON.stringify(initialize));
      });
    expect(await post({ host: `rebound.example.com:${port}` })).toEqual({
      status: 403,
      body: expect.stringContaining('is not this machine'),
    });
    expect(await post({ origin: 'https://evil.example.com' })).toEqual({
      status: 403,
      body: expect.stringContaining('refuses calls from other sites'),
    });
    expect(await post({ origin: 'null' })).toMatchObject({ status: 403 });
    expect((await post({ origin: `http://localhost:${port}` })).status).toBe(200);
    expect((await post({ host: `localhost:${port}` })).status).toBe(200);
  });

  it('exposes an agent as ask_<agent>, running a whole turn', async () => {
    expect(await client.callTool({ name: 'ask_helper', arguments: { message: 'What is 20 + 22?' } })).toMatchObject({
      content: [{ type: 'text', text: 'It is 42.' }],
    });
  });
});
