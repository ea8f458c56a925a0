import { Module, type DynamicModule } from '@nestjs/common';
import { TrellisError } from '../../../../index.js';
import type { HostContext } from '../trellis-module-options.js';
import { createSessionsController } from './sessions-controller.js';
import { ownerOnlySessionPolicy, userIdPrincipal, type SessionPolicy } from './session-policy.js';

/** Options of `TrellisSessionsModule.register`. */
export interface TrellisSessionsOptions {
  /** Where the routes live, e.g. `'api/support'`: required and never the root. */
  readonly prefix: string;
  /** The agent (from `TrellisModule.forRoot({ agents })`) the sessions talk to. */
  readonly agent: string;
  /**
   * Who the caller is, from the request's host context (`TrellisModuleOptions.requestContext`).
   * Default: its `app.user_id`. A request without one is answered 401.
   */
  readonly principal?: (context: HostContext) => string | undefined;
  /**
   * Who may read, send to, cancel or decide on a session, asked in every handler. Default
   * {@link ownerOnlySessionPolicy}: the owner (who opened it) does all but decide; deciding
   * on a waiting call needs a policy of the host's that grants it.
   */
  readonly policy?: SessionPolicy;
}

/**
 * An optional HTTP face for one agent's sessions, under an explicit prefix:
 * `POST <prefix>/sessions/:id/messages` (JSON, or SSE for `Accept: text/event-stream`),
 * `GET <prefix>/sessions/:id`, `GET <prefix>/sessions/:id/events` (SSE, `Last-Event-ID` honoured on the queue), `POST <prefix>/sessions/:id/decisions`,
 * `DELETE <prefix>/sessions/:id/pending` (withdraws the calls waiting for a decision). Bodies
 * and queries are validated DTOs (400 on a bad one); Trellis errors become HTTP errors
 * carrying the Trellis `code`. Every handler asks the session `policy` first (default: the
 * owner only, and deciding only where the host's policy grants it).
 *
 * @example
 * imports: [TrellisSessionsModule.register({ prefix: 'api/support', agent: 'support' })]
 */
@Module({})
export class TrellisSessionsModule {
  static register(options: TrellisSessionsOptions): DynamicModule {
    const prefix = typeof options?.prefix === 'string' ? options.prefix.trim().replace(/^\/+|\/+$/g, '') : '';
    if (prefix.length === 0 || /[*:?()]/.test(prefix)) {
      throw new TrellisError(
        'InvalidOptions',
        `TrellisSessionsModule needs an explicit, literal route prefix, got ${JSON.stringify(options?.prefix)}`,
        {
          hint: "Pass e.g. { prefix: 'api/support', agent: 'support' }: the routes never mount at the root or on a pattern",
        },
      );
    }
    if (typeof options.agent !== 'string' || options.agent.length === 0) {
      throw new TrellisError('InvalidOptions', 'TrellisSessionsModule needs the name of the agent to serve', {
        hint: "Pass { prefix, agent: 'support' }",
      });
    }
    for (const field of ['principal', 'policy'] as const) {
      if (options[field] !== undefined && typeof options[field] !== 'function') {
        throw new TrellisError(
          'InvalidOptions',
          `TrellisSessionsModule's ${field} must be a function, got ${typeof options[field]}`,
          { hint: 'See docs/nestjs.md, "Who may touch a session"' },
        );
      }
    }
    const guard = { principal: options.principal ?? userIdPrincipal, policy: options.policy ?? ownerOnlySessionPolicy };
    return { module: TrellisSessionsModule, controllers: [createSessionsController(prefix, options.agent, guard)] };
  }
}
