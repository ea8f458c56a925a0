import { randomBytes } from 'node:crypto';
import { TrellisError } from '../../../../index.js';
import type { CredentialStore } from '../../../../stores.js';
import {
  ClientCredentialsProvider,
  type OAuthClientInformationFull,
  type OAuthClientProvider,
  type OAuthTokens,
} from '../sdk.js';

/** OAuth 2.1 client credentials for an HTTP MCP server (machine to machine). */
export interface McpClientCredentialsSpec {
  readonly flow?: 'client_credentials';
  readonly clientId: string;
  /** Never logged, never in an error message. */
  readonly clientSecret: string;
  /** The authorization server the credentials were registered with: they are sent to no other. */
  readonly issuer: string;
  /** Space-separated scopes to ask for. */
  readonly scope?: string;
}

/**
 * OAuth 2.1 authorization code with PKCE for an HTTP MCP server: a human signs in once in a
 * browser (the client prints or hands over the URL, and listens on a loopback address for the
 * redirect); the tokens it gets are kept and refreshed from then on.
 */
export interface McpAuthorizationCodeSpec {
  readonly flow: 'authorization_code';
  /** A client registered with the authorization server. Without it the client registers itself (dynamic client registration) and keeps the registration. */
  readonly clientId?: string;
  /** With `clientId`, for a confidential client. Never logged, never in an error message. */
  readonly clientSecret?: string;
  /**
   * Where the browser comes back: a loopback `http://127.0.0.1:<port>/<path>` this process
   * listens on while a sign-in is under way. Default `http://127.0.0.1:<a free port>/callback`
   * (a registered `clientId` usually needs the exact URL it was registered with).
   */
  readonly redirectUrl?: string;
  /** Space-separated scopes to ask for. */
  readonly scope?: string;
}

export type McpOAuthSpec = McpClientCredentialsSpec | McpAuthorizationCodeSpec;

/** Whether the spec asks a human to sign in (authorization code) rather than send client credentials. */
export function isAuthorizationCode(spec: McpOAuthSpec): spec is McpAuthorizationCodeSpec {
  return spec.flow === 'authorization_code';
}

/**
 * Where an MCP client keeps what OAuth gave it, by server name, so a restart does not ask
 * again: the tokens, and (authorization code) the client registration. These are secrets: an
 * implementation must not log them. {@link mcpTokensIn} keeps them in the Trellis store.
 */
export interface McpTokenStore {
  load(server: string): Promise<OAuthTokens | undefined>;
  save(server: string, tokens: OAuthTokens): Promise<void>;
  /** The registration a dynamic client registration made; without these methods it is kept in memory. */
  loadClient?(server: string): Promise<OAuthClientInformationFull | undefined>;
  saveClient?(server: string, client: OAuthClientInformationFull): Promise<void>;
  /** Forgets what the authorization server no longer accepts. */
  forget?(server: string, what: 'tokens' | 'client'): Promise<void>;
}

/** Tokens kept in this process only: gone with it. */
export function memoryTokenStore(): McpTokenStore {
  const kept = new Map<string, string>();
  const key = (server: string, what: string) => JSON.stringify([server, what]);
  return {
    load: async (server) => parsed(kept.get(key(server, 'tokens'))),
    save: async (server, tokens) => void kept.set(key(server, 'tokens'), JSON.stringify(tokens)),
    loadClient: async (server) => parsed(kept.get(key(server, 'client'))),
    saveClient: async (server, client) => void kept.set(key(server, 'client'), JSON.stringify(client)),
    forget: async (server, what) => void kept.delete(key(server, what)),
  };
}

/**
 * The tokens and client registrations of MCP servers kept in a Trellis store (the one given
 * to `Trellis.create`; every built-in store keeps credentials), under owner `mcp:<server>`:
 * another process, or the next run, on the same store uses them without asking again.
 *
 * @example
 * const store = SqliteStore.open('.trellis/trellis.db');
 * await connectMcpServers(Trellis.create({ store }), servers, { tokenStore: mcpTokensIn(store) });
 */
export function mcpTokensIn(store: CredentialStore): McpTokenStore {
  if (
    typeof store?.loadCredential !== 'function' ||
    typeof store.saveCredential !== 'function' ||
    typeof store.deleteCredential !== 'function'
  ) {
    throw new TrellisError(
      'InvalidOptions',
      'mcpTokensIn needs a store that keeps credentials (MemoryStore, SqliteStore, PostgresStore)',
      { hint: 'Pass the store you gave Trellis.create' },
    );
  }
  const owner = (server: string) => `mcp:${server}`;
  return {
    load: async (server) => parsed(await store.loadCredential(owner(server), 'tokens')),
    save: (server, tokens) => store.saveCredential(owner(server), 'tokens', JSON.stringify(tokens)),
    loadClient: async (server) => parsed(await store.loadCredential(owner(server), 'client')),
    saveClient: (server, client) => store.saveCredential(owner(server), 'client', JSON.stringify(client)),
    forget: (server, what) => store.deleteCredential(owner(server), what),
  };
}

/** A kept JSON value, or undefined when there is none or it does not read as an object. */
function parsed<T>(text: string | undefined): T | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The SDK's client-credentials provider, with its tokens read from and written to a
 * {@link McpTokenStore}: the SDK asks the authorization server for a token on a 401 and
 * sends it as the bearer from then on.
 */
export function clientCredentialsProvider(
  server: string,
  spec: McpClientCredentialsSpec,
  store: McpTokenStore,
): OAuthClientProvider {
  const inner = new ClientCredentialsProvider({
    clientId: spec.clientId,
    clientSecret: spec.clientSecret,
    scope: spec.scope,
    expectedIssuer: spec.issuer,
  });
  return {
    get redirectUrl() {
      return inner.redirectUrl;
    },
    get clientMetadata() {
      return inner.clientMetadata;
    },
    clientInformation: () => inner.clientInformation(),
    saveClientInformation: (info) => inner.saveClientInformation(info),
    tokens: () => store.load(server),
    saveTokens: (tokens) => store.save(server, tokens),
    redirectToAuthorization: () => inner.redirectToAuthorization(),
    saveCodeVerifier: () => inner.saveCodeVerifier(),
    codeVerifier: () => inner.codeVerifier(),
    prepareTokenRequest: (scope) => inner.prepareTokenRequest(scope),
  };
}

/** The authorization-code provider of one connection attempt, and where its sign-in stands. */
export interface AuthorizationCodeProvider extends OAuthClientProvider {
  /** The `state` of the sign-in under way, which the redirect must carry back; undefined before one starts. */
  readonly expectedState: string | undefined;
}

/**
 * The SDK's `OAuthClientProvider` for the authorization-code flow with PKCE: tokens and the
 * client registration in the {@link McpTokenStore}, the verifier and `state` in memory for the
 * one sign-in under way, and the authorization URL handed to `signIn` (a human opens it).
 */
export function authorizationCodeProvider(
  server: string,
  spec: McpAuthorizationCodeSpec,
  store: McpTokenStore,
  redirectUrl: string,
  signIn: (url: URL) => void | Promise<void>,
): AuthorizationCodeProvider {
  let verifier: string | undefined;
  let state: string | undefined;
  let registered: OAuthClientInformationFull | undefined;
  const metadata = {
    client_name: 'Trellis',
    redirect_uris: [redirectUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: spec.clientSecret ? 'client_secret_basic' : 'none',
    ...(spec.scope !== undefined && { scope: spec.scope }),
  };
  return {
    get redirectUrl() {
      return redirectUrl;
    },
    get clientMetadata() {
      return metadata;
    },
    get expectedState() {
      return state;
    },
    state: () => (state = randomBytes(24).toString('base64url')),
    clientInformation: async () => {
      if (spec.clientId)
        return {
          client_id: spec.clientId,
          ...(spec.clientSecret !== undefined && { client_secret: spec.clientSecret }),
        };
      const kept = registered ?? (await store.loadClient?.(server));
      // A registration for another redirect URL (another free port last time) is registered again.
      return kept && Array.isArray(kept.redirect_uris) && kept.redirect_uris.includes(redirectUrl) ? kept : undefined;
    },
    saveClientInformation: async (info) => {
      registered = info as OAuthClientInformationFull;
      await store.saveClient?.(server, registered);
    },
    tokens: () => store.load(server),
    saveTokens: (tokens) => store.save(server, tokens),
    redirectToAuthorization: async (url) => {
      await signIn(url);
    },
    saveCodeVerifier: (value) => void (verifier = value),
    codeVerifier: () => {
      if (verifier === undefined)
        throw new TrellisError('McpServerFailed', `MCP server '${server}': no sign-in is under way to finish`, {
          kind: 'system',
        });
      return verifier;
    },
    invalidateCredentials: async (scope) => {
      if (scope === 'all' || scope === 'tokens') await store.forget?.(server, 'tokens');
      if ((scope === 'all' || scope === 'client') && !spec.clientId) {
        registered = undefined;
        await store.forget?.(server, 'client');
      }
      if (scope === 'all' || scope === 'verifier') verifier = undefined;
    },
  };
}
