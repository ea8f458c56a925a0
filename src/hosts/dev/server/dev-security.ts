import type { MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { hostName, isLoopback } from '../../../net/loopback.js';
import { sameSecret as same } from '../../../net/secret.js';

/** The cookie a browser keeps the token in after opening the page's `?token=` link. */
export const TOKEN_COOKIE = 'trellis_dev_token';
/** The header a script sends the token in (or `Authorization: Bearer …`). */
export const TOKEN_HEADER = 'x-trellis-token';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** How the dev server guards itself. */
export interface DevSecurityOptions {
  /** When set, every request must carry it (header, cookie, or once as `?token=`). */
  readonly token: string | undefined;
  /** When true, the Host header must name a loopback address (stops DNS rebinding). */
  readonly loopbackOnly: boolean;
}

/**
 * The dev server's gate, in order: (1) bound to loopback, a request whose Host is not a
 * loopback name is refused, so a web page cannot reach the server through a rebinding DNS
 * name; (2) with a token, every request must present it — `?token=` on a page link sets
 * a SameSite=Strict cookie and redirects to the clean URL; (3) a request that changes
 * something (any method but GET/HEAD/OPTIONS) must send the token in a header, or come
 * from this server's own pages (`Sec-Fetch-Site: same-origin`, or an `Origin` equal to the
 * server's), so another site cannot make a browser post to it.
 */
export function devSecurity(options: DevSecurityOptions): MiddlewareHandler {
  return async (c, next) => {
    const url = new URL(c.req.url);
    const host = c.req.header('host') ?? '';
    if (options.loopbackOnly && !isLoopback(hostName(host))) {
      return c.json(
        refusal('ForeignHost', `Host "${host}" is not this machine; trellis dev answers loopback names only`),
        403,
      );
    }
    const headerToken = c.req.header(TOKEN_HEADER) ?? bearer(c.req.header('authorization'));
    if (options.token !== undefined) {
      const query = url.searchParams.get('token');
      if (query !== null && SAFE_METHODS.has(c.req.method) && same(query, options.token)) {
        setCookie(c, TOKEN_COOKIE, options.token, { httpOnly: true, sameSite: 'Strict', path: '/' });
        url.searchParams.delete('token');
        return c.redirect(`${url.pathname}${url.search}`, 303);
      }
      const presented = headerToken ?? getCookie(c, TOKEN_COOKIE);
      if (presented === undefined || !same(presented, options.token)) {
        return c.json(
          refusal(
            'TokenRequired',
            'This trellis dev server needs its token',
            'Open the URL it printed (with ?token=…), or send the token in the x-trellis-token header',
          ),
          401,
        );
      }
    }
    if (!SAFE_METHODS.has(c.req.method)) {
      const tokenInHeader =
        options.token !== undefined && headerToken !== undefined && same(headerToken, options.token);
      if (!tokenInHeader && !sameOrigin(c.req.header('sec-fetch-site'), c.req.header('origin'), url.protocol, host)) {
        return c.json(
          refusal(
            'CrossOrigin',
            'A request that changes something must come from the trellis dev page itself or carry the token',
            'Use the page, or start trellis dev with --token and send it in the x-trellis-token header',
          ),
          403,
        );
      }
    }
    await next();
  };
}

function sameOrigin(
  fetchSite: string | undefined,
  origin: string | undefined,
  protocol: string,
  host: string,
): boolean {
  if (fetchSite !== undefined) return fetchSite === 'same-origin';
  return origin !== undefined && origin === `${protocol}//${host}`;
}

function bearer(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer\s+(.+)$/i);
  return match?.[1];
}

function refusal(code: string, message: string, hint?: string) {
  return { error: { code, message, ...(hint ? { hint } : {}) } };
}
