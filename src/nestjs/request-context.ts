import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable } from '@nestjs/common';
import type { HostContext } from './trellis-module-options.js';

/**
 * The host context of the request being handled, kept in an `AsyncLocalStorage` so that
 * `agent.session(id).send(text)` deep inside a controller or service picks it up without
 * passing it along. `TrellisContextInterceptor` fills it for HTTP; call `run` yourself for
 * other entry points (a queue consumer, a cron job).
 */
@Injectable()
export class TrellisRequestContext {
  readonly #storage = new AsyncLocalStorage<HostContext>();

  /** The context of the current request, or `undefined` outside one. */
  current(): HostContext | undefined {
    return this.#storage.getStore();
  }

  /** Runs `work` with `context` as the current request's context (nested runs replace it). */
  run<T>(context: HostContext, work: () => T): T {
    return this.#storage.run(Object.freeze({ ...context }), work);
  }
}
