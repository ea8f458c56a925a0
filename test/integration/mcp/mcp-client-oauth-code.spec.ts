import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { ScriptedModel, SqliteStore, Trellis, type TrellisEvent } from 'trellis';
import { McpServerClient, mcpSpecProblems, mcpTokensIn } from 'trellis/mcp';
import { browse, protectedServer } from '../../support/oauth-peers.js';

describe('MCP client: OAuth authorization code (PKCE) for an HTTP server, tokens in the Trellis store', () => {
  let dir: string;
  let server: Awaited<ReturnType<typeof protectedServer>>;
  const apps: Trellis[] = [];
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'trellis-oauth-'));
    server = await protectedServer();
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.stop();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function open(): { app: Trellis; store: SqliteStore; events: TrellisEvent[] } {
    const store = SqliteStore.open(join(dir, 'trellis.db'));
    const app = Trellis.create({ store });
    apps.push(app);
    const events: TrellisEvent[] = [];
    app.events$.subscribe((e) => events.push(e));
    return { app, store, events };
  }

  const spec = () => ({ url: server.url, oauth: { flow: 'authorization_code' as const } });

  it('a human signs in once in a browser; the tokens are kept in the store, and another app on it signs in no more', async () => {
    const first = open();
    const signIns: string[] = [];
    await McpServerClient.connect(first.app, 'ledger', spec(), {
      tokenStore: mcpTokensIn(first.store),
      onAuthorize: async ({ url }) => {
        signIns.push(url);
        // A stale or forged redirect is refused, and the sign-in goes on waiting.
        const redirect = new URL(url).searchParams.get('redirect_uri')!;
        expect((await fetch(`${redirect}?code=forged&state=not-it`)).status).toBe(400);
        expect(await browse(url)).toBe(200);
      },
    });
    expect(signIns).toHaveLength(1);
    expect(new URL(signIns[0]!).searchParams.get('code_challenge_method')).toBe('S256');
    expect(server.auth.log).toMatchObject({ registrations: 1, signIns: 1, codeExchanges: 1 });
    const model = new ScriptedModel([{ toolCalls: [{ name: 'ledger.balance', args: { account: 'a1' } }] }, 'ok']);
    expect(
      (await first.app.agent({ name: 'a', model, instructions: '' }).session().send('balance?')).toolCalls[0],
    ).toMatchObject({ ok: true, value: 'a1: 42' });
    // Kept in the store, by server: the tokens and the client registration.
    const kept = JSON.parse((await first.store.loadCredential('mcp:ledger', 'tokens'))!) as OAuthTokens;
    expect(server.auth.tokens.has(kept.access_token)).toBe(true);
    expect(JSON.parse((await first.store.loadCredential('mcp:ledger', 'client'))!)).toMatchObject({
      client_id: expect.stringMatching(/^client-/),
    });
    // Never on the event stream.
    expect(JSON.stringify(first.events)).not.toContain(kept.access_token);
    expect(JSON.stringify(first.events)).not.toContain(kept.refresh_token!);

    const second = open();
    await McpServerClient.connect(second.app, 'ledger', spec(), {
      tokenStore: mcpTokensIn(second.store),
      onAuthorize: () => void signIns.push('again'),
    });
    const again = new ScriptedModel([{ toolCalls: [{ name: 'ledger.balance', args: { account: 'b2' } }] }, 'ok']);
    expect(
      (await second.app.agent({ name: 'a', model: again, instructions: '' }).session().send('balance?')).toolCalls[0],
    ).toMatchObject({ ok: true, value: 'b2: 42' });
    expect(signIns).toHaveLength(1);
    expect(server.auth.log).toMatchObject({ registrations: 1, signIns: 1 });
  });

  it('an expired access token is refreshed with the refresh token, and the new tokens are kept', async () => {
    const { app, store } = open();
    await McpServerClient.connect(app, 'ledger', spec(), {
      tokenStore: mcpTokensIn(store),
      onAuthorize: async ({ url }) => void (await browse(url)),
    });
    const before = JSON.parse((await store.loadCredential('mcp:ledger', 'tokens'))!) as OAuthTokens;
    // The access token expires now, on the server (a short lifetime raced a slow connect under load).
    for (const token of server.auth.tokens.values()) token.expiresAt = Date.now() - 1;
    const model = new ScriptedModel([{ toolCalls: [{ name: 'ledger.balance', args: { account: 'a1' } }] }, 'ok']);
    expect(
      (await app.agent({ name: 'a', model, instructions: '' }).session().send('balance?')).toolCalls[0],
    ).toMatchObject({ ok: true, value: 'a1: 42' });
    expect(server.auth.log).toMatchObject({ signIns: 1, refreshes: 1 });
    const after = JSON.parse((await store.loadCredential('mcp:ledger', 'tokens'))!) as OAuthTokens;
    expect(after.access_token).not.toBe(before.access_token);
  });

  it('nobody signing in within authorizeTimeoutMs fails the connection with McpServerFailed', async () => {
    const { app, store } = open();
    const error = await McpServerClient.connect(app, 'ledger', spec(), {
      tokenStore: mcpTokensIn(store),
      onAuthorize: () => undefined,
      authorizeTimeoutMs: 300,
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'McpServerFailed',
      message: expect.stringContaining('nobody signed in within'),
    });
  });

  it('checks an authorization-code entry in the config', () => {
    expect(mcpSpecProblems('ledger', { url: 'https://x/mcp', oauth: { flow: 'authorization_code' } })).toEqual([]);
    expect(
      mcpSpecProblems('ledger', {
        url: 'https://x/mcp',
        oauth: { flow: 'authorization_code', redirectUrl: 'https://example.com/cb', extra: 1 },
      }),
    ).toEqual([
      expect.stringContaining("unknown field 'extra'"),
      expect.stringContaining('redirectUrl must be a loopback http:// URL'),
    ]);
    expect(mcpSpecProblems('ledger', { url: 'https://x/mcp', oauth: { flow: 'device' } })).toEqual([
      expect.stringContaining("oauth.flow must be 'client_credentials'"),
    ]);
  });
});
