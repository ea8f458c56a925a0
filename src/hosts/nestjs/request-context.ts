import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable } from '@nestjs/common';
import type { Approver } from '../../../index.js';
import type { HostContext } from './trellis-module-options.js';

interface RequestState {
  readonly context: HostContext | undefined;
  readonly approver: Approver | undefined;
}

/**
 * The host context of the request being handled, kept in an `AsyncLocalStorage` so that
 * `agent.session(id).send(text)` deep inside a controller or service picks it up without
 * passing it along. `TrellisContextInterceptor` fills it for HTTP; call `run` yourself for
 * other entry points (a queue consumer, a cron job).
 */
@Injectable()
export class TrellisRequestContext {
  readonly #storage = new AsyncLocalStorage<RequestState>();

  /** The context of the current request, or `undefined` outside one. */
  current(): HostContext | undefined {
    return this.#storage.getStore()?.context;
  }

  /** Who the current request is from, as the module's `approver` option (or `request.user`) says; `resume` decides as them. */
  currentApprover(): Approver | undefined {
    return this.#storage.getStore()?.approver;
  }

  /** Runs `work` with `context` as the current request's context (nested runs replace it), and `approver` as who decides. */
  run<T>(context: HostContext | undefined, work: () => T, approver?: Approver): T {
    return this.#storage.run(
      {
        context: context === undefined ? undefined : Object.freeze({ ...context }),
        approver: approver === undefined ? undefined : Object.freeze({ ...approver }),
      },
      work,
    );
  }
}
