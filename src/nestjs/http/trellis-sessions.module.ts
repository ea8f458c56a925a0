import { Module, type DynamicModule } from '@nestjs/common';
import { TrellisError } from '../../../index.js';
import { createSessionsController } from './sessions-controller.js';

/** Options of `TrellisSessionsModule.register`. */
export interface TrellisSessionsOptions {
  /** Where the routes live, e.g. `'api/support'`: required and never the root. */
  readonly prefix: string;
  /** The agent (from `TrellisModule.forRoot({ agents })`) the sessions talk to. */
  readonly agent: string;
}

/**
 * An optional HTTP face for one agent's sessions, under an explicit prefix:
 * `POST <prefix>/sessions/:id/messages` (JSON, or SSE for `Accept: text/event-stream`),
 * `GET <prefix>/sessions/:id`, `POST <prefix>/sessions/:id/decisions`,
 * `DELETE <prefix>/sessions/:id/pending` (withdraws the calls waiting for a decision). Bodies
 * and queries are validated DTOs (400 on a bad one); Trellis errors become HTTP errors
 * carrying the Trellis `code`.
 *
 * @example
 * imports: [TrellisSessionsModule.register({ prefix: 'api/support', agent: 'support' })]
 */
@Module({})
export class TrellisSessionsModule {
  static register(options: TrellisSessionsOptions): DynamicModule {
    const prefix = typeof options?.prefix === 'string' ? options.prefix.trim().replace(/^\/+|\/+$/g, '') : '';
    if (prefix.length === 0 || /[*:?()]/.test(prefix)) {
      throw new TrellisError('InvalidOptions', `TrellisSessionsModule needs an explicit, literal route prefix, got ${JSON.stringify(options?.prefix)}`, {
        hint: "Pass e.g. { prefix: 'api/support', agent: 'support' }: the routes never mount at the root or on a pattern",
      });
    }
    if (typeof options.agent !== 'string' || options.agent.length === 0) {
      throw new TrellisError('InvalidOptions', 'TrellisSessionsModule needs the name of the agent to serve', { hint: "Pass { prefix, agent: 'support' }" });
    }
    return { module: TrellisSessionsModule, controllers: [createSessionsController(prefix, options.agent)] };
  }
}
