import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { TrellisError } from '../../../index.js';
import { canLogTurnEvents } from '../../../stores.js';
import { DEV_SCRIPT } from './assets/dev-script.js';
import { DEV_STYLE } from './assets/dev-style.js';
import { TurnEventRecorder } from './recording/turn-event-recorder.js';
import { devApi } from './server/dev-api.js';
import { devEventsRoute } from './server/dev-events.js';
import type { DevServerOptions } from './server/dev-host.js';
import { isLoopback } from '../../net/loopback.js';
import { devSecurity } from './server/dev-security.js';
import { errorResponse } from './server/error-response.js';
import { devPages } from './server/dev-pages.js';
import { SessionReader } from './server/session-reader.js';
import { DEFAULT_DEV_PORT } from './dev-defaults.js';

export { DEFAULT_DEV_PORT } from './dev-defaults.js';

/** Requests larger than this are refused before they are read (a message, a decision with edited arguments). */
const MAX_BODY_BYTES = 1024 * 1024;

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** A running dev server. */
export interface DevServer {
  /** The page's address, e.g. `http://127.0.0.1:4477/`. */
  readonly url: string;
  /** The request handler (also usable without a socket, e.g. `dev.fetch(new Request(…))`). */
  readonly fetch: (request: Request) => Response | Promise<Response>;
  /** Records the app's turns (into the store, when it keeps turn events): the host's, or the server's own. */
  readonly recorder: TurnEventRecorder;
  /** Ends open event streams, stops listening and recording. The app and store stay open. */
  close(): Promise<void>;
}

/**
 * Starts `trellis dev`'s HTTP server over an app, an agent and a store: the sessions list,
 * a session with its transcript, turn timelines and approvals, the plugins page, a chat
 * box, live updates by Server-Sent Events. It is a host: it drives sessions through the
 * public API (`agent.session`, `send`, `resume`, `pending`, `app.events$`, the store's
 * `list`/`load`/`turnEvents`). Binds to 127.0.0.1 unless `host` says otherwise, which
 * needs a `token`.
 *
 * @example
 * const dev = await startDevServer({ app, agent, store, port: 0 });
 * console.log(dev.url);
 * await dev.close();
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? DEFAULT_DEV_PORT;
  const loopback = isLoopback(host);
  if (!loopback && !options.token) {
    throw new TrellisError(
      'InvalidOptions',
      `trellis dev would listen on ${host}, beyond this machine, without a token`,
      {
        hint: 'Pass --token <secret> (at least 16 characters) to open it to other machines, or leave --host at 127.0.0.1',
      },
    );
  }
  if (options.token !== undefined && options.token.length < 16) {
    throw new TrellisError(
      'InvalidOptions',
      `The dev server token is ${options.token.length} characters long; it needs at least 16`,
      { hint: 'Use a long random string, e.g. `openssl rand -hex 16`' },
    );
  }
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new TrellisError('InvalidOptions', `Port ${String(port)} is not a TCP port`, {
      hint: 'Use a whole number from 1 to 65535, or 0 for any free port',
    });
  }
  const { store } = options;
  const owned = options.recorder === undefined;
  const recorder =
    options.recorder ??
    new TurnEventRecorder(options.app.events$, canLogTurnEvents(store) ? store : undefined, options.onError).start();
  const closing = new AbortController();
  const handler = devHandler(options, recorder, closing.signal, loopback);
  const server = createAdaptorServer({ fetch: handler, overrideGlobalObjects: false }) as Server;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
  } catch (error) {
    if (owned) await recorder.stop();
    throw new TrellisError(
      'InvalidOptions',
      `trellis dev cannot listen on ${host}:${port}: ${error instanceof Error ? error.message : String(error)}`,
      {
        hint: 'Pick another port with --port, or stop what is using this one',
        cause: error,
      },
    );
  }
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const base = `http://${shown}:${address.port}/`;
  return {
    url: options.token ? `${base}?token=${encodeURIComponent(options.token)}` : base,
    fetch: handler,
    recorder,
    async close() {
      closing.abort();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      if (owned) await recorder.stop();
    },
  };
}

/** The routes behind the security gate; exported for tests that call it without a socket. */
export function devHandler(
  options: DevServerOptions,
  recorder: TurnEventRecorder,
  closing: AbortSignal,
  loopbackOnly = isLoopback(options.host ?? '127.0.0.1'),
): (request: Request) => Response | Promise<Response> {
  const reader = new SessionReader(options, recorder);
  const web = new Hono();
  web.use(async (c, next) => {
    await next();
    c.header('Content-Security-Policy', CSP);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'no-referrer');
    c.header('Cache-Control', 'no-store');
  });
  web.use(devSecurity({ token: options.token, loopbackOnly }));
  web.use(
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) =>
        c.json({ error: { code: 'TooLarge', message: `Request bodies are limited to ${MAX_BODY_BYTES} bytes` } }, 413),
    }),
  );
  web.get('/assets/dev.js', (c) => c.body(DEV_SCRIPT, 200, { 'content-type': 'text/javascript; charset=utf-8' }));
  web.get('/assets/dev.css', (c) => c.body(DEV_STYLE, 200, { 'content-type': 'text/css; charset=utf-8' }));
  web.get('/api/events', (c) => devEventsRoute(c, options.app, closing));
  web.route('/api', devApi(options, reader));
  web.route('/', devPages(options, reader));
  web.onError((error, c) => {
    const { status, body } = errorResponse(error);
    return c.json(body, status);
  });
  return (request) => web.fetch(request);
}
