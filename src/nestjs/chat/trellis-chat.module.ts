import { Body, Controller, Get, HttpCode, Inject, Module, Param, Post, Req, Res, type DynamicModule, type Type } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { TrellisError } from '../../../index.js';
import type { HostedAgent } from '../hosted-agent.js';
import { getAgentToken } from '../trellis-tokens.js';

/** Options of `TrellisChatModule.register`. */
export interface TrellisChatOptions {
  /** Where `useChat` posts, e.g. `'api/chat'` (its `api` option: `/api/chat`): required and never the root. */
  readonly prefix: string;
  /** The agent (from `TrellisModule.forRoot({ agents })`) the chats talk to. */
  readonly agent: string;
  /**
   * The session id of a chat. Default: the chat id itself, so anyone who knows a chat id
   * reaches its session; scope it to the signed-in user, e.g.
   * `(chatId, req) => \`${req.user.id}:${chatId}\``.
   */
  readonly sessionId?: (chatId: string, request: any) => string;
}

/** The `ai` package loads with the first chat request, not with `trellis/nestjs`. */
type AiSdk = typeof import('../../../ai-sdk.js');
let aiSdk: Promise<AiSdk> | undefined;
const loadAiSdk = () => (aiSdk ??= import('../../../ai-sdk.js'));

function createChatController(options: TrellisChatOptions, prefix: string): Type<unknown> {
  @Controller(prefix)
  class TrellisChatController {
    #streams: InstanceType<AiSdk['ChatStreams']> | undefined;

    constructor(@Inject(getAgentToken(options.agent)) readonly agent: HostedAgent) {}

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
      await sdk.serveChatRequest(body, (chatId) => this.agent.session(options.sessionId?.(chatId, req) ?? chatId), res, { streams });
    }

    /** A reconnect (`useChat({ resume: true })`): the chat's running stream, or 204. */
    @Get(':id/stream')
    async reconnect(@Param('id') id: string, @Req() req: unknown, @Res() res: ServerResponse): Promise<void> {
      const sdk = await loadAiSdk();
      // Streams are recorded under the session id, so a reconnect finds only its own user's.
      sdk.serveChatReconnect(options.sessionId?.(id, req) ?? id, (this.#streams ??= new sdk.ChatStreams()), res);
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
      throw new TrellisError('InvalidOptions', `TrellisChatModule needs an explicit, literal route prefix, got ${JSON.stringify(options?.prefix)}`, {
        hint: "Pass e.g. { prefix: 'api/chat', agent: 'support' }",
      });
    }
    if (typeof options.agent !== 'string' || options.agent.length === 0) {
      throw new TrellisError('InvalidOptions', 'TrellisChatModule needs the name of the agent to serve', { hint: "Pass { prefix, agent: 'support' }" });
    }
    return { module: TrellisChatModule, controllers: [createChatController(options, prefix)] };
  }
}
