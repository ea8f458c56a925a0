import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TrellisError } from '../../../../index.js';
import { isLoopback } from '../../../net/loopback.js';
import { sameSecret } from '../../../net/secret.js';

const PAGE = (text: string) => `<!doctype html><meta charset="utf-8"><title>Trellis</title><p>${text}</p>`;

/**
 * Where the browser comes back after a human signed in to an MCP server's authorization
 * server (RFC 8252, a native app's loopback redirect): a listener on 127.0.0.1 for the
 * redirect's path only, taking one `code` whose `state` is the sign-in's own.
 */
export class LoopbackRedirect {
  #waiting: { resolve(code: string): void; reject(error: Error): void; state: () => string | undefined } | undefined;

  private constructor(
    private readonly server: Server,
    /** The redirect URL to register and send: `http://127.0.0.1:<port><path>`. */
    readonly url: string,
    private readonly path: string,
    private readonly name: string,
  ) {
    server.on('request', (req, res) => {
      const at = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (req.method !== 'GET' || at.pathname !== this.path) return void res.writeHead(404).end();
      const waiting = this.#waiting;
      const state = waiting?.state();
      const given = at.searchParams.get('state') ?? '';
      if (!waiting || state === undefined || !sameSecret(given, state)) {
        // Not the sign-in under way (a stale tab, another site's request): nothing is taken.
        return void res
          .writeHead(400, { 'content-type': 'text/html' })
          .end(PAGE('This sign-in is not the one Trellis is waiting for. Start it again from Trellis.'));
      }
      const error = at.searchParams.get('error');
      const code = at.searchParams.get('code');
      this.#waiting = undefined;
      if (error !== null || !code) {
        res
          .writeHead(400, { 'content-type': 'text/html' })
          .end(PAGE('The sign-in did not complete. You can close this tab.'));
        return waiting.reject(
          new TrellisError(
            'McpServerFailed',
            `MCP server '${this.name}': the sign-in ended with ${error ?? 'no code'}${at.searchParams.get('error_description') ? ` (${at.searchParams.get('error_description')})` : ''}`,
            { hint: 'Sign in again; check the client registration and the scopes', kind: 'system' },
          ),
        );
      }
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(PAGE('Signed in. You can close this tab and go back to Trellis.'));
      waiting.resolve(code);
    });
  }

  /**
   * Listens where `redirectUrl` says (a loopback `http://` URL; its port, 0 or absent for a free one).
   *
   * @throws TrellisError `InvalidConfig` for a redirect URL that is not loopback HTTP; `McpServerFailed` when the port is taken.
   */
  static async listen(name: string, redirectUrl = 'http://127.0.0.1:0/callback'): Promise<LoopbackRedirect> {
    const wanted = new URL(redirectUrl);
    if (wanted.protocol !== 'http:' || !isLoopback(wanted.hostname)) {
      throw new TrellisError(
        'InvalidConfig',
        `MCP server '${name}': oauth.redirectUrl must be a loopback http:// URL this process listens on, got ${redirectUrl}`,
        { hint: 'e.g. http://127.0.0.1:33418/callback' },
      );
    }
    const host = wanted.hostname.replace(/^\[|\]$/g, '');
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error) =>
        reject(
          new TrellisError(
            'McpServerFailed',
            `MCP server '${name}': cannot listen for the sign-in redirect on ${wanted.host}: ${error.message}`,
            { kind: 'system', hint: 'Free the port, or give oauth.redirectUrl another one' },
          ),
        ),
      );
      server.listen(Number(wanted.port || 0), host, () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    const path = wanted.pathname || '/';
    return new LoopbackRedirect(server, `http://${wanted.hostname}:${port}${path}`, path, name);
  }

  /**
   * The code the browser brings back for the sign-in whose `state` this is, within `timeoutMs`.
   *
   * @throws TrellisError `McpServerFailed` when nobody signed in in time, or the sign-in failed.
   */
  code(state: () => string | undefined, timeoutMs: number): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting = undefined;
        reject(
          new TrellisError(
            'McpServerFailed',
            `MCP server '${this.name}': nobody signed in within ${Math.round(timeoutMs / 1000)} s`,
            { hint: 'Open the sign-in URL Trellis printed, then try again', kind: 'system' },
          ),
        );
      }, timeoutMs);
      this.#waiting = {
        state,
        resolve: (code) => (clearTimeout(timer), resolve(code)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      };
    });
  }

  /** Stops listening (a sign-in still waited for fails). */
  close(): Promise<void> {
    this.#waiting?.reject(
      new TrellisError('McpServerFailed', `MCP server '${this.name}': the connection was closed during the sign-in`, {
        kind: 'system',
      }),
    );
    this.#waiting = undefined;
    return new Promise((resolve) => {
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }
}
