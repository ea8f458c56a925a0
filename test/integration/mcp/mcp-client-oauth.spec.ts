import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import * as z from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ScriptedModel, Trellis, type TrellisEvent } from 'trellis';
import { McpServerClient, mcpSpecProblems, type McpTokenStore } from 'trellis/mcp';

/**
 * An MCP server (the SDK's McpServer, stateless) that answers 401 without a bearer token the
 * authorization server beside it issued, and an authorization server granting client credentials.
 */
async function protectedServer(): Promise<{ base: string; grants: string[]; close(): Promise<void> }> {
  const web = express();
  const grants: string[] = [];
  const issued = new Set<string>();
  let base = '';
  web.get(
    ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp'],
    (_req, res) => void res.json({ resource: `${base}/mcp`, authorization_servers: [base] }),
  );
  web.get(
    '/.well-known/oauth-authorization-server',
    (_req, res) =>
      void res.json({
        issuer: base,
        token_endpoint: `${base}/token`,
        authorization_endpoint: `${base}/authorize`,
        response_types_supported: ['code'],
        grant_types_supported: ['client_credentials'],
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
      }),
  );
  web.post('/token', express.urlencoded({ extended: false }), (req, res) => {
    const basic = Buffer.from(String(req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString();
    if (basic !== 'desk:s3cret-client-secret' || req.body.grant_type !== 'client_credentials')
      return void res.status(401).json({ error: 'invalid_client' });
    const token = `tok-${grants.length + 1}`;
    grants.push(token);
    issued.add(token);
    res.json({ access_token: token, token_type: 'Bearer', expires_in: 3600 });
  });
  web.post('/mcp', express.json(), async (req, res) => {
    const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (!issued.has(token))
      return void res
        .status(401)
        .set('WWW-Authenticate', `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`)
        .json({ error: 'invalid_token' });
    const server = new McpServer({ name: 'ledger', version: '1.0.0' });
    server.registerTool(
      'balance',
      { description: 'The balance.', inputSchema: { account: z.string() } },
      ({ account }) => ({ content: [{ type: 'text', text: `${account}: 42 (token ${token})` }] }),
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  const http: Server = await new Promise((resolve) => {
    const s = web.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return { base, grants, close: () => new Promise((r) => http.close(() => r())) };
}

describe('MCP client: OAuth client credentials for an HTTP server', () => {
  it('gets a token on the 401, keeps it in the token store and reuses it; the client secret appears in no event', async () => {
    const server = await protectedServer();
    const kept = new Map<string, unknown>();
    const tokenStore: McpTokenStore = {
      load: async (name) => kept.get(name) as never,
      save: async (name, tokens) => void kept.set(name, tokens),
    };
    const app = Trellis.create();
    const events: TrellisEvent[] = [];
    app.events$.subscribe((e) => events.push(e));
    try {
      await McpServerClient.connect(
        app,
        'ledger',
        {
          url: `${server.base}/mcp`,
          oauth: { clientId: 'desk', clientSecret: 's3cret-client-secret', issuer: server.base },
        },
        { tokenStore },
      );
      expect(kept.get('ledger')).toMatchObject({ access_token: 'tok-1', token_type: 'Bearer' });
      const model = new ScriptedModel([{ toolCalls: [{ name: 'ledger.balance', args: { account: 'a1' } }] }, 'ok']);
      const result = await app.agent({ name: 'a', model, instructions: '' }).session().send('balance?');
      // The model read the tool's value; the turn result carries a redacted copy (a `token …` shape).
      expect(result.toolCalls[0]).toMatchObject({ ok: true, value: 'a1: 42 (token [Redacted]' });
      // One grant for the connection and the call: the stored token was reused.
      expect(server.grants).toEqual(['tok-1']);
      expect(JSON.stringify(events)).not.toContain('s3cret-client-secret');
    } finally {
      await app.stop();
      await server.close();
    }
  });

  it('a token already in the store is used without asking the authorization server', async () => {
    const server = await protectedServer();
    const first = Trellis.create();
    const kept = new Map<string, unknown>();
    const tokenStore: McpTokenStore = {
      load: async (name) => kept.get(name) as never,
      save: async (name, tokens) => void kept.set(name, tokens),
    };
    const spec = {
      url: `${server.base}/mcp`,
      oauth: { clientId: 'desk', clientSecret: 's3cret-client-secret', issuer: server.base },
    };
    await McpServerClient.connect(first, 'ledger', spec, { tokenStore });
    await first.stop();
    const second = Trellis.create();
    try {
      await McpServerClient.connect(second, 'ledger', spec, { tokenStore });
      expect(server.grants).toEqual(['tok-1']);
    } finally {
      await second.stop();
      await server.close();
    }
  });

  it('wrong credentials fail the connection with McpServerFailed, without the secret in the message', async () => {
    const server = await protectedServer();
    const app = Trellis.create();
    try {
      const error = await McpServerClient.connect(
        app,
        'ledger',
        {
          url: `${server.base}/mcp`,
          oauth: { clientId: 'desk', clientSecret: 'wrong-secret-value', issuer: server.base },
        },
        { connectTimeoutMs: 5000 },
      ).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'McpServerFailed' });
      expect(String((error as Error).message)).not.toContain('wrong-secret-value');
    } finally {
      await app.stop();
      await server.close();
    }
  });

  it('a bad oauth entry is a config problem', () => {
    expect(mcpSpecProblems('ledger', { url: 'https://x/mcp', oauth: { clientId: 'a' } })).toEqual([
      expect.stringContaining('oauth must be { clientId, clientSecret, issuer, scope? }'),
    ]);
  });
});
