import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Res,
  type Type,
} from '@nestjs/common';
import type { ChatMessage, SessionAccess } from '../../../../index.js';
import { TrellisError } from '../../../../index.js';
import type { HostedAgent } from '../hosted-agent.js';
import { TrellisRequestContext } from '../request-context.js';
import type { HostContext } from '../trellis-module-options.js';
import { getAgentToken } from '../trellis-tokens.js';
import { BoundedValidationPipe } from './bounded-validation.pipe.js';
import { CancelPendingQuery } from './cancel-pending.query.js';
import { clientAbort, type HttpResponseLike } from './client-abort.js';
import { CancelTurnQuery } from './cancel-turn.query.js';
import { DecisionsDto } from './decisions.dto.js';
import { pendingCallView, turnResultView, type PendingCallView, type TurnResultView } from './http-views.js';
import { SendMessageDto } from './send-message.dto.js';
import { EVENT_ID, SessionEventsQuery } from './session-events.query.js';
import { authorizeSessionAccess, type SessionAction, type SessionPolicy } from './session-policy.js';
import { toHttpException } from './trellis-http-exception.js';
import { sessionEventStream, turnEventStream } from './turn-event-stream.js';

/** What `GET <prefix>/sessions/:id` returns. */
export interface SessionView {
  readonly id: string;
  /** The conversation so far, ending with a suspended turn's messages (the user's message, the model's call) while it waits. */
  readonly transcript: readonly ChatMessage[];
  /** The calls waiting for a decision, each with its arguments as a JSON object. */
  readonly pending: readonly PendingCallView[];
}

/** What `DELETE <prefix>/sessions/:id/pending` returns (`HostedSession.cancelPendingOutcome`). */
export interface CancelPendingView {
  /** Whether a suspended turn was waiting, and is now cancelled. */
  readonly cancelled: boolean;
  /** With the worker queue: an earlier attempt of the cancel job did the cancel, then its worker died. Otherwise false. */
  readonly recovered: boolean;
}

const strict = new BoundedValidationPipe();

/** Any header an SSE client sends says it wants events: `Accept: text/event-stream`. */
function wantsEvents(accept: string | undefined): boolean {
  return typeof accept === 'string' && accept.toLowerCase().includes('text/event-stream');
}

/** An `Idempotency-Key` header as a turn key: trimmed; an empty one is none. */
function turnKey(header: string | undefined): string | undefined {
  const key = header?.trim();
  if (key && key.length > 200) {
    throw toHttpException(
      new TrellisError(
        'InvalidOptions',
        `The Idempotency-Key header is ${key.length} characters long; at most 200 are taken`,
        { hint: 'Send a UUID or a message id' },
      ),
    );
  }
  return key ? key : undefined;
}

async function http<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw toHttpException(error);
  }
}

/** Who may do what to a session, as the controller asks it. */
export interface SessionGuard {
  readonly principal: (context: HostContext) => string | undefined;
  readonly policy: SessionPolicy;
}

/**
 * Builds the sessions controller of one agent under `prefix` (never the root: a catch-all
 * would shadow the app's own routes). Every handler asks `guard` first, whatever path
 * spelling reached it (case, trailing slash), and hands the kernel the owner it checked
 * against, which checks it again under the session's lease.
 */
export function createSessionsController(prefix: string, agentName: string, guard: SessionGuard): Type<unknown> {
  const notFound = (id: string) =>
    new TrellisError('SessionNotFound', `No session '${id}' with messages exists for agent '${agentName}'`, {
      hint: `Start it with POST ${prefix}/sessions/${id}/messages`,
    });

  @Controller(`${prefix}/sessions`)
  class TrellisSessionsController {
    constructor(
      @Inject(getAgentToken(agentName)) readonly agent: HostedAgent,
      @Inject(TrellisRequestContext) readonly requestContext: TrellisRequestContext,
    ) {}

    /**
     * The caller's access to session `id` for `action`: 401 without a principal, 403 when the
     * policy says no; the principal and the owner it was checked against otherwise.
     */
    async authorize(action: SessionAction, id: string): Promise<SessionAccess> {
      return (await this.check(action, id)).access;
    }

    /** {@link authorize}, also telling whether the session has messages or waiting calls. */
    async check(
      action: SessionAction,
      id: string,
    ): Promise<{ readonly access: SessionAccess; readonly opened: boolean }> {
      const context = this.requestContext.current() ?? {};
      let opened = false;
      const access = await authorizeSessionAccess({
        action,
        sessionId: id,
        principal: guard.principal(context),
        context,
        policy: guard.policy,
        ownerNow: async () => {
          const now = await this.agent.session(id).ownerNow();
          opened = now.opened;
          return now;
        },
        host: `The sessions API of agent '${agentName}'`,
        principalHint:
          "Map the request to host context with TrellisModule's requestContext (e.g. { 'app.user_id': user.id }), or pass principal to TrellisSessionsModule.register",
      });
      return { access, opened };
    }

    /**
     * One turn: the reply as JSON, or the turn's events as SSE when the client accepts
     * `text/event-stream`. With the worker queue, an `Idempotency-Key` header is the turn's
     * key: a retried request runs the turn once and gets its result. A client that goes away
     * before the answer (a disconnect, an aborted fetch, a closed event stream) cancels the
     * turn: the request's abort signal is the turn's (see `HostedSendOptions.signal`).
     */
    @Post(':id/messages')
    @HttpCode(200)
    send(
      @Param('id') id: string,
      @Body(strict) dto: SendMessageDto,
      @Headers('accept') accept: string | undefined,
      @Headers('idempotency-key') key: string | undefined,
      @Res({ passthrough: true }) res: HttpResponseLike & { setHeader?(name: string, value: string): unknown },
    ): Promise<unknown> {
      const turn = turnKey(key);
      return http(async () => {
        const access = await this.authorize('send', id);
        const session = this.agent.session(id);
        const options = { key: turn, access };
        if (!wantsEvents(accept)) {
          const gone = clientAbort(res);
          try {
            return turnResultView(
              await session.send(dto.message, { ...options, signal: gone.signal, stopTurnOnAbort: true }),
            );
          } finally {
            gone.dispose();
          }
        }
        res.setHeader?.('Cache-Control', 'no-cache');
        res.setHeader?.('X-Accel-Buffering', 'no');
        return turnEventStream(session, (signal) =>
          session.send(dto.message, { ...options, signal, stopTurnOnAbort: true }),
        );
      });
    }

    /**
     * The session's events as Server-Sent Events while the client stays, for whom the policy
     * lets `read` it (asked once, when the stream opens; a session's owner never changes). A
     * session without messages is a 404, as `GET :id`: nobody watches a session before its
     * owner opened it. With the worker queue, a client that reconnects with `Last-Event-ID`
     * (EventSource does) or `?after=<id>` first gets the events it missed that the session's
     * stream still keeps, none twice.
     */
    @Get(':id/events')
    events(
      @Param('id') id: string,
      @Headers('last-event-id') lastEventId: string | undefined,
      @Query(strict) query: SessionEventsQuery,
      @Res({ passthrough: true }) res: { setHeader?(name: string, value: string): unknown },
    ): Promise<unknown> {
      return http(async () => {
        // Asked without waiting behind a running turn: its events are what the caller wants.
        const { opened } = await this.check('read', id);
        if (!opened) throw notFound(id);
        const header = lastEventId?.trim();
        if (header && !EVENT_ID.test(header)) {
          throw new TrellisError('InvalidOptions', 'The Last-Event-ID header is not an event id of this API', {
            hint: 'Send the id of the last event received, like 1733140000000-0, or no header',
          });
        }
        res.setHeader?.('Cache-Control', 'no-cache');
        res.setHeader?.('X-Accel-Buffering', 'no');
        return sessionEventStream(this.agent.session(id), header || query.after);
      });
    }

    /** The transcript and the calls waiting for a decision. */
    @Get(':id')
    view(@Param('id') id: string): Promise<SessionView> {
      return http(async () => {
        await this.authorize('read', id);
        const session = this.agent.session(id);
        const pending = await session.pending();
        if (session.transcript.length === 0 && pending.length === 0) throw notFound(id);
        return {
          id,
          transcript: [...session.transcript, ...session.pendingMessages],
          pending: pending.map(pendingCallView),
        };
      });
    }

    /** Decisions on suspended calls (approve / reject / edit); the resumed turn's result. */
    @Post(':id/decisions')
    @HttpCode(200)
    decide(
      @Param('id') id: string,
      @Body(strict) dto: DecisionsDto,
      @Headers('idempotency-key') key: string | undefined,
    ): Promise<TurnResultView> {
      const turn = turnKey(key);
      return http(async () => {
        const access = await this.authorize('decide', id);
        return turnResultView(await this.agent.session(id).resume({ decisions: dto.decisions, key: turn, access }));
      });
    }

    /**
     * Withdraws the suspended turn's waiting calls (`HostedSession.cancelPending`): they never
     * run and the session takes a new message. Idempotent: `{ cancelled: false, recovered: false }`
     * when nothing was waiting; 404 for a session without messages, as `GET :id`.
     */
    @Delete(':id/pending')
    cancelPending(
      @Param('id') id: string,
      @Query(strict) query: CancelPendingQuery,
      @Headers('idempotency-key') key: string | undefined,
    ): Promise<CancelPendingView> {
      const turn = turnKey(key);
      return http(async () => {
        const access = await this.authorize('cancel', id);
        const session = this.agent.session(id);
        const { cancelled, recovered } = await session.cancelPendingOutcome({
          waitForLease: query.waitForLease,
          key: turn,
          access,
        });
        // Nothing was waiting: tell an unknown session (no write happened) from a settled one.
        if (!cancelled && (await session.pending()).length === 0 && session.transcript.length === 0) throw notFound(id);
        return { cancelled, recovered };
      });
    }

    /**
     * Stops the session's running turn (`HostedSession.cancel`), wherever it runs; it ends
     * `cancelled`, keeping its completed steps unless `?keepSteps=false`. `{ cancelled: false }`
     * when no turn was running.
     */
    @Post(':id/cancel')
    @HttpCode(200)
    cancel(@Param('id') id: string, @Query(strict) query: CancelTurnQuery): Promise<{ cancelled: boolean }> {
      return http(async () => {
        // Asked without waiting behind the running turn: that is the turn to stop.
        await this.authorize('cancel', id);
        return { cancelled: await this.agent.session(id).cancel({ keepSteps: query.keepSteps }) };
      });
    }
  }
  Object.defineProperty(TrellisSessionsController, 'name', { value: `TrellisSessionsController(${agentName})` });
  return TrellisSessionsController;
}
