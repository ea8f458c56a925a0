import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Response } from 'express';
import * as z from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { getOAuthProtectedResourceMetadataUrl, mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/**
 * An authorization server built from the SDK's server-side helpers (`mcpAuthRouter`: metadata,
 * dynamic client registration, authorize, token with PKCE, refresh) whose user always consents,
 * and an MCP server behind `requireBearerAuth` — one Express app on a loopback port.
 */
export class ConsentingAuthServer implements OAuthServerProvider {
  readonly clients = new Map<string, OAuthClientInformationFull>();
  readonly codes = new Map<string, { client: string; params: AuthorizationParams }>();
  readonly tokens = new Map<string, { client: string; expiresAt: number }>();
  readonly refreshTokens = new Map<string, string>();
  readonly log = { registrations: 0, signIns: 0, codeExchanges: 0, refreshes: 0 };
  /** Seconds an access token lives. */
  lifetime = 3600;

  get clientsStore() {
    return {
      getClient: (id: string) => this.clients.get(id),
      registerClient: (client: Omit<OAuthClientInformationFull, 'client_id' | 'client_id_issued_at'>) => {
        this.log.registrations++;
        const full = {
          ...client,
          client_id: `client-${randomUUID()}`,
          client_id_issued_at: Math.floor(Date.now() / 1000),
        } as OAuthClientInformationFull;
        this.clients.set(full.client_id, full);
        return full;
      },
    };
  }

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response): Promise<void> {
    this.log.signIns++;
    const code = randomUUID();
    this.codes.set(code, { client: client.client_id, params });
    const back = new URL(params.redirectUri);
    back.searchParams.set('code', code);
    if (params.state !== undefined) back.searchParams.set('state', params.state);
    res.redirect(back.href);
  }

  async challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string): Promise<string> {
    return this.codes.get(code)!.params.codeChallenge;
  }

  async exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<OAuthTokens> {
    const issued = this.codes.get(code);
    if (!issued || issued.client !== client.client_id) throw new Error('unknown code');
    this.codes.delete(code);
    this.log.codeExchanges++;
    return this.issue(client.client_id);
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string): Promise<OAuthTokens> {
    if (this.refreshTokens.get(refreshToken) !== client.client_id) throw new Error('unknown refresh token');
    this.refreshTokens.delete(refreshToken);
    this.log.refreshes++;
    return this.issue(client.client_id);
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const known = this.tokens.get(token);
    if (!known) throw new Error('unknown token');
    return { token, clientId: known.client, scopes: [], expiresAt: Math.floor(known.expiresAt / 1000) };
  }

  private issue(client: string): OAuthTokens {
    const access = `at-${randomUUID()}`;
    const refresh = `rt-${randomUUID()}`;
    this.tokens.set(access, { client, expiresAt: Date.now() + this.lifetime * 1000 });
    this.refreshTokens.set(refresh, client);
    return { access_token: access, token_type: 'Bearer', expires_in: this.lifetime, refresh_token: refresh };
  }
}

export async function protectedServer(): Promise<{
  base: string;
  url: string;
  auth: ConsentingAuthServer;
  close(): Promise<void>;
}> {
  const web = express();
  const http: Server = await new Promise((resolve) => {
    const s = web.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const url = `${base}/mcp`;
  const auth = new ConsentingAuthServer();
  web.use(
    mcpAuthRouter({
      provider: auth,
      issuerUrl: new URL(base),
      resourceServerUrl: new URL(url),
      authorizationOptions: { rateLimit: false },
      tokenOptions: { rateLimit: false },
      clientRegistrationOptions: { rateLimit: false },
    }),
  );
  web.post(
    '/mcp',
    requireBearerAuth({ verifier: auth, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(url)) }),
    express.json(),
    async (req, res) => {
      const server = new McpServer({ name: 'ledger', version: '1.0.0' });
      server.registerTool(
        'balance',
        { description: 'The balance.', inputSchema: { account: z.string() } },
        ({ account }) => ({ content: [{ type: 'text', text: `${account}: 42` }] }),
      );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => void transport.close());
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    },
  );
  return { base, url, auth, close: () => new Promise((r) => (http.closeAllConnections(), http.close(() => r()))) };
}

/** What a browser does with the sign-in URL: the authorization server (which consents) sends it back to the client's loopback redirect. */
export async function browse(signInUrl: string): Promise<number> {
  const atServer = await fetch(signInUrl, { redirect: 'manual' });
  const back = atServer.headers.get('location');
  if (!back) throw new Error(`the authorization server answered ${atServer.status}: ${await atServer.text()}`);
  return (await fetch(back)).status;
}
