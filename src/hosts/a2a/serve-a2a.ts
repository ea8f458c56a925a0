import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AGENT_CARD_PATH, type AgentCard } from '@a2a-js/sdk';
import {
  DefaultRequestHandler,
  InMemoryTaskStore,
  type RequestContext,
  type TaskStore,
  type User,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';
import type { Agent, SessionPolicy, Trellis } from '../../../index.js';
import { turnGuard } from '../ui-turns/turn-access.js';
import { streamable, type TurnSession } from '../ui-turns/turn-session.js';
import { agentCardOf, type AgentCardOptions } from './agent-card.js';
import { TrellisAgentExecutor } from './trellis-agent-executor.js';

/** Options of {@link a2aRequestHandler}. */
export interface A2aHandlerOptions extends Omit<AgentCardOptions, 'url'> {
  /** The JSON-RPC endpoint the card announces. */
  readonly url: string;
  /** Where tasks are kept (the SDK's `TaskStore`). Default: in memory. */
  readonly taskStore?: TaskStore;
  /**
   * The session of an A2A context. Default: `agent.session('a2a:' + contextId)`. Without
   * `principal`, any caller who knows a context id reaches its session.
   */
  readonly session?: (contextId: string) => TurnSession;
  /**
   * Who the caller of a message is, from the SDK's request context — usually the user your
   * transport's `UserBuilder` authenticated: `(r) => r.context.user?.isAuthenticated ? r.context.user.userName : undefined`.
   * Given, each context's session is owned by the caller who opened it and every message is
   * checked by `policy`: a caller without a principal gets the task state `auth-required`, a
   * refused one `rejected`, and nothing runs.
   */
  readonly principal?: (request: RequestContext) => string | undefined | Promise<string | undefined>;
  /** Who may send to and decide on a context's session. Default `ownerDecidesSessionPolicy`: its opener does both. */
  readonly policy?: SessionPolicy;
}

/**
 * The A2A SDK's `DefaultRequestHandler` for a Trellis agent — its agent card
 * ({@link agentCardOf}) and a {@link TrellisAgentExecutor} — for hosts that mount the SDK's
 * transports themselves (`jsonRpcHandler`, `restHandler`, `agentCardHandler` into an Express
 * or Nest app).
 */
export function a2aRequestHandler(app: Trellis, agent: Agent, options: A2aHandlerOptions): DefaultRequestHandler {
  const card: AgentCard = agentCardOf(app, agent, options);
  const sessionOf = options.session ?? ((contextId: string) => streamable(agent.session(`a2a:${contextId}`)));
  const guard =
    options.principal || options.policy
      ? turnGuard(
          { principal: options.principal, policy: options.policy },
          `The A2A endpoint of agent '${agent.spec.name}'`,
        )
      : undefined;
  return new DefaultRequestHandler(
    card,
    options.taskStore ?? new InMemoryTaskStore(),
    new TrellisAgentExecutor((contextId) => sessionOf(contextId), guard),
  );
}

/** Options of {@link serveA2a}. */
export interface ServeA2aOptions extends Omit<A2aHandlerOptions, 'url' | 'principal'> {
  /**
   * Who the caller of a request is (a user id from your auth, e.g. of its bearer token), or
   * undefined for nobody. Given, it is the SDK's authenticated user, each context's session is
   * owned by the caller who opened it, and every message is checked by `policy` (see
   * {@link A2aHandlerOptions.principal}). Without it, anyone who reaches the server and knows a
   * context id reaches its session.
   */
  readonly principal?: (request: IncomingMessage) => string | undefined | Promise<string | undefined>;
  /** Default 0 (any free port). */
  readonly port?: number;
  /** Default `127.0.0.1`. */
  readonly host?: string;
  /** The URL the card announces, when clients reach the server by another name (a proxy). Default: where it listens. */
  readonly publicUrl?: string;
  /** Checks a request before the SDK sees it; return false to answer 401. Default: every request passes. */
  readonly authenticate?: (request: IncomingMessage) => boolean | Promise<boolean>;
}

/** A running A2A server. */
export interface A2aServing {
  /** The JSON-RPC endpoint. */
  readonly url: string;
  /** The agent card, at `/.well-known/agent-card.json`. */
  readonly cardUrl: string;
  close(): Promise<void>;
}

/**
 * Serves a Trellis agent as an A2A agent with the SDK's Express transports: the agent card
 * at `/.well-known/agent-card.json`, JSON-RPC (`SendMessage`, `SendStreamingMessage` over
 * SSE, `GetTask`, `CancelTask`) at `/`.
 *
 * @example
 * const serving = await serveA2a(app, supportAgent, { port: 41241 });
 * // another team: new ClientFactory().createFromUrl(serving.url)
 */
export async function serveA2a(app: Trellis, agent: Agent, options: ServeA2aOptions = {}): Promise<A2aServing> {
  const host = options.host ?? '127.0.0.1';
  const web = express();
  if (options.authenticate) {
    const check = options.authenticate;
    web.use((req, res, next) => {
      void Promise.resolve(check(req)).then(
        (ok) => (ok ? next() : res.status(401).json({ code: 'AuthDenied', message: 'A valid credential is required' })),
        next,
      );
    });
  }
  const server = await new Promise<import('node:http').Server>((resolve, reject) => {
    const listening = web.listen(options.port ?? 0, host, (error?: Error) =>
      error ? reject(error) : resolve(listening),
    );
  });
  const address = server.address() as AddressInfo;
  const url =
    options.publicUrl ??
    `http://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}/`;
  const principalOf = options.principal;
  const requestHandler = a2aRequestHandler(app, agent, {
    ...options,
    url,
    principal: principalOf
      ? (request) => (request.context.user?.isAuthenticated ? request.context.user.userName : undefined)
      : undefined,
  });
  web.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  const userBuilder: UserBuilder = principalOf
    ? async (req) => caller(await principalOf(req))
    : UserBuilder.noAuthentication;
  web.use(jsonRpcHandler({ requestHandler, userBuilder }));
  return {
    url,
    cardUrl: new URL(AGENT_CARD_PATH, url).href,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The SDK's user for a principal: authenticated with that name, or not at all. */
function caller(principal: string | undefined): User {
  const name = typeof principal === 'string' && principal.length > 0 ? principal : undefined;
  return {
    get isAuthenticated() {
      return name !== undefined;
    },
    get userName() {
      return name ?? '';
    },
  };
}
