import type { AgentSpec, Approver, ModelProvider, Provider, SessionStore } from '../../../index.js';
import type { MiddlewareDeclaration } from '../../../plugin.js';
import type { ApprovalSettings } from '../../../governance.js';
import type { TrellisQueueOptions, TrellisWorkerHostOptions } from './queue/queue-options.js';

/** An agent of the module: an `AgentSpec` whose model may also name one of `models`. */
export interface TrellisAgentOptions extends Omit<AgentSpec, 'model'> {
  /** A model, several to fall back through, or the name of a model in `TrellisModuleOptions.models`. */
  readonly model: ModelProvider | readonly ModelProvider[] | string;
}

/** The host's own context for a turn: `app.*` keys (user, tenant, scopes…). */
export type HostContext = Readonly<Record<string, unknown>>;

/**
 * Options of `TrellisModule.forRoot` / `forRootAsync`.
 *
 * @example
 * TrellisModule.forRoot({
 *   store: new SqliteStore({ file: 'sessions.db' }),
 *   models: { default: new OpenAIModel({ model: 'gpt-4o-mini' }) },
 *   agents: [{ name: 'support', model: 'default', instructions: 'Help customers.' }],
 *   requestContext: (ctx) => ({ 'app.scopes': ctx.switchToHttp().getRequest().user.scopes }),
 * })
 */
export interface TrellisModuleOptions {
  /** Where sessions are kept between turns and requests. */
  readonly store?: SessionStore;
  /** Named models the agents refer to by name. */
  readonly models?: Readonly<Record<string, ModelProvider>>;
  /** The agents, injectable with `@InjectAgent(name)`. */
  readonly agents?: readonly TrellisAgentOptions[];
  /** App-wide tool middleware, outermost around every tool of every plugin. */
  readonly middleware?: readonly MiddlewareDeclaration[];
  /** Services Trellis itself builds (app-wide middleware, plugins installed without Nest) may inject. */
  readonly providers?: readonly Provider[];
  /** Run `app.heartbeat` hooks this often once started. */
  readonly heartbeatMs?: number;
  /**
   * Maps the request being handled to host context for every turn sent through an injected
   * agent while it is handled (`TrellisContextInterceptor` calls it after the guards ran).
   */
  readonly requestContext?: (context: import('@nestjs/common').ExecutionContext) => HostContext | Promise<HostContext>;
  /**
   * Who the request is from, for approval policies and the audit log: `resume` (and the
   * sessions API's decisions) decide as them. Default: the request's `user` (set by your auth
   * guard): its `id`, `sub`, `email` or `username`, and its `roles`.
   */
  readonly approver?: (
    context: import('@nestjs/common').ExecutionContext,
  ) => Approver | undefined | Promise<Approver | undefined>;
  /** Approval policies (`Trellis.create({ approvals })`): who may decide which calls. See docs/governance.md. */
  readonly approvals?: ApprovalSettings;
  /** On shutdown, wait this long for running turns to finish before cancelling them. Default 10000. */
  readonly shutdownTimeoutMs?: number;
  /**
   * Send the turns of injected agents (`send` / `resume`, the sessions HTTP API) to the
   * worker queue instead of running them in this process. Needs a `store` the workers share
   * (PostgreSQL, or a SQLite file on one machine). See docs/nestjs.md, "With the worker queue".
   */
  readonly queue?: TrellisQueueOptions;
  /**
   * Run a `TrellisWorker` in this app, taking turns from `queue` and running them with this
   * module's app (its agents and plugins, `forFeature` ones included); closed on shutdown.
   */
  readonly worker?: boolean | TrellisWorkerHostOptions;
}

/** Options of `forRoot` / `forRootAsync` that shape the Nest module itself rather than Trellis. */
export interface TrellisModuleExtras {
  /** Make the module global, so feature modules need not import it. Default false. */
  readonly isGlobal?: boolean;
  /**
   * Names of the agents to register for `@InjectAgent`. `forRoot` takes them from `agents`;
   * `forRootAsync` cannot see its options before bootstrap, so list them here.
   */
  readonly agentNames?: readonly string[];
  /**
   * Register the Trellis app itself for `@InjectTrellis()`. Off by default: a Nest-built
   * plugin could then inject the kernel, which plugins must never do (they are refused at
   * bootstrap if they try). Turn it on only for host code that needs the app itself.
   */
  readonly exposeApp?: boolean;
  /**
   * Install `TrellisExceptionFilter` for the app: a `TrellisError` thrown from any HTTP handler
   * (your own controllers included) is answered with its code and a fitting status
   * (`InvalidDecision` 400, `SessionNotFound` 404, `SessionBusy` 409, …) instead of a bare 500.
   * Default true; set false to map errors yourself (`toHttpException`).
   */
  readonly httpErrors?: boolean;
}
