import {
  Body,
  Controller,
  Get,
  HttpCode,
  Inject,
  Module,
  Param,
  Post,
  Req,
  Res,
  type DynamicModule,
  type Type,
} from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import {
  ownerDecidesSessionPolicy,
  TrellisError,
  type SessionAccess,
  type SessionAction,
  type SessionPolicy,
} from '../../../../index.js';
import { authorizeSessionAccess, userIdPrincipal } from '../../../../host.js';
import type { HostedAgent } from '../hosted-agent.js';
import type { HostedSession } from '../hosted-session.js';
import { TrellisRequestContext } from '../request-context.js';
import type { HostContext } from '../trellis-module-options.js';
import { getAgentToken } from '../trellis-tokens.js';

/** Options of `TrellisChatModule.register`. */
export interface TrellisChatOptions {
  /** Where `useChat` posts, e.g. `'api/chat'` (its `api` option: `/api/chat`): required and never the root. */
  readonly prefix: string;
  /** The agent (from `TrellisModule.forRoot({ agents })`) the chats talk to. */
  readonly agent: string;
  /**
   * The session id of a chat. Default: the chat id itself (the session policy decides who
   * reaches it); a host may still scope ids, e.g. `(chatId, req) => \`${req.user.id}:${chatId}\``.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the host's request (Express, Fastify) with what its guards added, such as `user`
  readonly sessionId?: (chatId: string, request: any) => string;
  /**
   * Who the caller is, from the request's host context (`TrellisModuleOptions.requestContext`).
   * Default: its `app.user_id`. A request without one is answered 401.
   */
  readonly principal?: (context: HostContext) => string | undefined;
  /**
   * Who may stream (`read`, a reconnect), send to and decide on a chat's session, asked on
   * every request. Default {@link ownerDecidesSessionPolicy}: the caller who opened the chat
   * does all three (its approval buttons are theirs); anyone else gets 403.
   */
  readonly policy?: SessionPolicy;
}

/** The `ai` package loads with the first chat request, not with `trellis/nestjs`. */
type AiSdk = typeof import('../../../../ai-sdk.js');
type TurnSession = import('../../../../ai-sdk.js').TurnSession;
let aiSdk: Promise<AiSdk> | undefined;
const loadAiSdk = () => (aiSdk ??= import('../../../../ai-sdk.js'));

function createChatController(options: TrellisChatOptions, prefix: string): Type<unknown> {
  const principalOf = options.principal ?? userIdPrincipal;
  const policy = options.policy ?? ownerDecidesSessionPolicy;
  @Controller(prefix)
  class TrellisChatController {
    #streams: InstanceType<AiSdk['ChatStreams']> | undefined;

    constructor(
      @Inject(getAgentToken(options.agent)) readonly agent: HostedAgent,
      @Inject(TrellisRequestContext) readonly requestContext: TrellisRequestContext,
    ) {}

    /**
     * The caller's access to the chat's session for `action`: 401 without a principal, 403 when
     * the policy says no. A first turn running here counts as its caller's before it lands.
     */
    authorize(
      session: TurnSession,
      action: SessionAction,
      streams: InstanceType<AiSdk['ChatStreams']>,
    ): Promise<SessionAccess> {
      const context = this.requestContext.current() ?? {};
      return authorizeSessionAccess({
        action,
        sessionId: session.id,
        principal: principalOf(context),
        context,
        policy,
        ownerNow: () => streams.ownerNow(session),
        host: `The chat endpoint of agent '${options.agent}'`,
        principalHint:
          "Map the request to host context with TrellisModule's requestContext (e.g. { 'app.user_id': user.id }), or pass principal to TrellisChatModule.register",
      });
    }

    sessionOf(chatId: string, req: unknown): HostedSession {
      return this.agent.session(options.sessionId?.(chatId, req) ?? chatId);
    }

    /**
     * One useChat request: a user message runs a turn, approval responses resume it; the
     * answer is the AI SDK UI message stream. Turns run where the module says (in process or
     * on the worker queue), with the request's host context.
     */
    @Post()
    @HttpCode(200)
    async chat(@Body() body: unknown, @Req() req: unknown, @Res() res: ServerResponse): Promise<void> {
      const sdk = await loadAiSdk();
      const streams = (this.#streams ??= new sdk.ChatStreams());
      await sdk.serveChatRequest(body, (chatId) => this.sessionOf(chatId, req), res, {
        streams,
        authorize: (session, action) => this.authorize(session, action, streams),
      });
    }

    /** A reconnect (`useChat({ resume: true })`): the chat's running stream, or 204. */
    @Get(':id/stream')
    async reconnect(@Param('id') id: string, @Req() req: unknown, @Res() res: ServerResponse): Promise<void> {
      const sdk = await loadAiSdk();
      const streams = (this.#streams ??= new sdk.ChatStreams());
      const session = this.sessionOf(id, req);
      // The same policy as a message: a reconnect streams the session's turn, so it is a read.
      await sdk.serveChatReconnect(session.id, streams, res, {
        authorize: () => this.authorize(session, 'read', streams),
      });
    }
  }
  Object.defineProperty(TrellisChatController, 'name', { value: `TrellisChatController(${options.agent})` });
  return TrellisChatController;
}

/**
 * A `useChat` endpoint (the AI SDK UI message stream protocol) for one agent:
 * `POST <prefix>` and `GET <prefix>/:id/stream`. See docs/ai-sdk.md.
 *
 * @example
 * imports: [TrellisChatModule.register({ prefix: 'api/chat', agent: 'support' })]
 */
@Module({})
export class TrellisChatModule {
  static register(options: TrellisChatOptions): DynamicModule {
    const prefix = typeof options?.prefix === 'string' ? options.prefix.trim().replace(/^\/+|\/+$/g, '') : '';
    if (prefix.length === 0 || /[*:?()]/.test(prefix)) {
      throw new TrellisError(
        'InvalidOptions',
        `TrellisChatModule needs an explicit, literal route prefix, got ${JSON.stringify(options?.prefix)}`,
        {
          hint: "Pass e.g. { prefix: 'api/chat', agent: 'support' }",
        },
      );
    }
    if (typeof options.agent !== 'string' || options.agent.length === 0) {
      throw new TrellisError('InvalidOptions', 'TrellisChatModule needs the name of the agent to serve', {
        hint: "Pass { prefix, agent: 'support' }",
      });
    }
    for (const field of ['sessionId', 'principal', 'policy'] as const) {
      if (options[field] !== undefined && typeof options[field] !== 'function') {
        throw new TrellisError(
          'InvalidOptions',
          `TrellisChatModule's ${field} must be a function, got ${typeof options[field]}`,
          { hint: 'See docs/ai-sdk.md, "Who may use a chat"' },
        );
      }
    }
    return { module: TrellisChatModule, controllers: [createChatController(options, prefix)] };
  }
}
