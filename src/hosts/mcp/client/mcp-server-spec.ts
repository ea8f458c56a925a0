import type { McpOAuthSpec } from './mcp-oauth.js';

/** An MCP server run as a child process, spoken to over its stdin/stdout. */
export interface McpStdioServerSpec {
  readonly command: string;
  readonly args?: readonly string[];
  /** Added to a minimal safe environment (PATH, HOME, …), as the MCP SDK does. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

/** An MCP server reached over Streamable HTTP. */
export interface McpHttpServerSpec {
  readonly url: string;
  /** Sent with every request, e.g. `{ Authorization: 'Bearer …' }`. */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * OAuth for the server: client credentials (`{ clientId, clientSecret, issuer }`: the client
   * gets an access token from `issuer` on the server's 401), or `{ flow: 'authorization_code' }`
   * (a human signs in once in a browser). Tokens are kept in `McpClientOptions.tokenStore`.
   */
  readonly oauth?: McpOAuthSpec;
}

/**
 * One entry of `mcpServers` in `trellis.config` (the shape other MCP hosts use too).
 *
 * @example
 * { "mcpServers": { "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] },
 *                   "tickets": { "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer …" } } } }
 */
export type McpServerSpec = McpStdioServerSpec | McpHttpServerSpec;

const SERVER_NAME = /^[a-z][a-z0-9_-]*$/i;

/** Whether the spec names a command to spawn (stdio) rather than a URL. */
export function isStdioSpec(spec: McpServerSpec): spec is McpStdioServerSpec {
  return 'command' in spec;
}

/** `stdio: node server.js` or `http: https://…`, for listings and error messages. */
export function describeSpec(spec: McpServerSpec): string {
  return isStdioSpec(spec) ? `stdio: ${[spec.command, ...(spec.args ?? [])].join(' ')}` : `http: ${spec.url}`;
}

/** Every problem with one `mcpServers` entry; empty when it is usable. */
export function mcpSpecProblems(name: string, spec: unknown): string[] {
  const where = `mcpServers.${name}`;
  const problems: string[] = [];
  if (!SERVER_NAME.test(name))
    problems.push(
      `${where}: the name becomes the plugin's name, so it must be letters, digits, '-' or '_', starting with a letter`,
    );
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec))
    return [...problems, `${where} must be { command, args?, env? } or { url, headers? }`];
  const s = spec as Record<string, unknown>;
  const known = 'command' in s ? ['command', 'args', 'env', 'cwd'] : 'url' in s ? ['url', 'headers', 'oauth'] : [];
  if (known.length === 0)
    return [...problems, `${where} needs either command (a stdio server) or url (a Streamable HTTP server)`];
  for (const key of Object.keys(s))
    if (!known.includes(key)) problems.push(`${where}: unknown field '${key}' (known: ${known.join(', ')})`);
  if ('command' in s) {
    if (typeof s.command !== 'string' || s.command.trim() === '')
      problems.push(`${where}.command must be the program to run`);
    if (s.args !== undefined && !(Array.isArray(s.args) && s.args.every((a) => typeof a === 'string')))
      problems.push(`${where}.args must be a list of strings`);
    if (s.env !== undefined && !isStringMap(s.env)) problems.push(`${where}.env must map names to string values`);
    if (s.cwd !== undefined && typeof s.cwd !== 'string') problems.push(`${where}.cwd must be a directory path`);
  } else {
    if (typeof s.url !== 'string' || !URL.canParse(s.url) || !/^https?:$/.test(new URL(s.url).protocol))
      problems.push(`${where}.url must be an http(s) URL`);
    if (s.headers !== undefined && !isStringMap(s.headers))
      problems.push(`${where}.headers must map header names to string values`);
    if (s.oauth !== undefined) problems.push(...oauthProblems(where, s.oauth));
  }
  return problems;
}

function oauthProblems(where: string, oauth: unknown): string[] {
  const o = oauth as Record<string, unknown> | null;
  if (typeof o !== 'object' || o === null || Array.isArray(o))
    return [`${where}.oauth must be { clientId, clientSecret, issuer, scope? } or { flow: 'authorization_code', … }`];
  const optionalString = (k: string) => o[k] === undefined || (typeof o[k] === 'string' && o[k] !== '');
  if (o.flow === 'authorization_code') {
    const known = ['flow', 'clientId', 'clientSecret', 'redirectUrl', 'scope'];
    const problems = Object.keys(o)
      .filter((k) => !known.includes(k))
      .map((k) => `${where}.oauth: unknown field '${k}' (known: ${known.join(', ')})`);
    if (!['clientId', 'clientSecret', 'redirectUrl', 'scope'].every(optionalString))
      problems.push(
        `${where}.oauth: clientId, clientSecret, redirectUrl and scope are non-empty strings when given (the secret is never shown)`,
      );
    if (o.clientSecret !== undefined && o.clientId === undefined)
      problems.push(`${where}.oauth.clientSecret needs the clientId it was issued with`);
    if (
      typeof o.redirectUrl === 'string' &&
      (!URL.canParse(o.redirectUrl) || new URL(o.redirectUrl).protocol !== 'http:')
    )
      problems.push(`${where}.oauth.redirectUrl must be a loopback http:// URL, e.g. http://127.0.0.1:33418/callback`);
    return problems;
  }
  if (o.flow !== undefined && o.flow !== 'client_credentials')
    return [`${where}.oauth.flow must be 'client_credentials' (the default) or 'authorization_code'`];
  const ok =
    ['clientId', 'clientSecret', 'issuer'].every((k) => typeof o[k] === 'string' && o[k] !== '') &&
    (o.scope === undefined || typeof o.scope === 'string');
  if (!ok)
    return [`${where}.oauth must be { clientId, clientSecret, issuer, scope? } (strings; the secret is never shown)`];
  if (!URL.canParse(String(o.issuer))) return [`${where}.oauth.issuer must be the authorization server's URL`];
  return [];
}

function isStringMap(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((v) => typeof v === 'string')
  );
}
