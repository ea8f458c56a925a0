import { ClientCredentialsProvider, type OAuthClientProvider, type OAuthTokens } from '../sdk.js';

/** OAuth 2.1 client credentials for an HTTP MCP server (machine to machine). */
export interface McpOAuthSpec {
  readonly clientId: string;
  /** Never logged, never in an error message. */
  readonly clientSecret: string;
  /** The authorization server the credentials were registered with: they are sent to no other. */
  readonly issuer: string;
  /** Space-separated scopes to ask for. */
  readonly scope?: string;
}

/**
 * Where an MCP client keeps the access tokens it got, by server name, so a restart does not
 * ask for new ones. Tokens are secrets: an implementation must not log them.
 */
export interface McpTokenStore {
  load(server: string): Promise<OAuthTokens | undefined>;
  save(server: string, tokens: OAuthTokens): Promise<void>;
}

/** Tokens kept in this process only (the default). */
export function memoryTokenStore(): McpTokenStore {
  const tokens = new Map<string, OAuthTokens>();
  return {
    load: async (server) => tokens.get(server),
    save: async (server, value) => void tokens.set(server, value),
  };
}

/**
 * The SDK's client-credentials provider, with its tokens read from and written to a
 * {@link McpTokenStore}: the SDK asks the authorization server for a token on a 401 and
 * sends it as the bearer from then on.
 */
export function clientCredentialsProvider(server: string, spec: McpOAuthSpec, store: McpTokenStore): OAuthClientProvider {
  const inner = new ClientCredentialsProvider({ clientId: spec.clientId, clientSecret: spec.clientSecret, scope: spec.scope, expectedIssuer: spec.issuer });
  return {
    get redirectUrl() {
      return inner.redirectUrl;
    },
    get clientMetadata() {
      return inner.clientMetadata;
    },
    clientInformation: () => inner.clientInformation(),
    saveClientInformation: (info) => inner.saveClientInformation(info as never),
    tokens: () => store.load(server),
    saveTokens: (tokens) => store.save(server, tokens),
    redirectToAuthorization: () => inner.redirectToAuthorization(),
    saveCodeVerifier: () => inner.saveCodeVerifier(),
    codeVerifier: () => inner.codeVerifier(),
    prepareTokenRequest: (scope) => inner.prepareTokenRequest(scope),
  };
}
