import { Inject, Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { from, Observable, switchMap } from 'rxjs';
import { TrellisRequestContext } from './request-context.js';
import { TRELLIS_MODULE_OPTIONS } from './trellis-module-definition.js';
import type { TrellisModuleOptions } from './trellis-module-options.js';

/**
 * Runs each handler inside the host context that `options.requestContext` maps the request
 * to. Interceptors run after guards, so an auth guard's `request.user` is there to map.
 * `TrellisModule` registers it app-wide; without `requestContext` it passes through.
 */
@Injectable()
export class TrellisContextInterceptor implements NestInterceptor {
  constructor(
    @Inject(TRELLIS_MODULE_OPTIONS) private readonly options: TrellisModuleOptions,
    private readonly requestContext: TrellisRequestContext,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const map = this.options.requestContext;
    if (!map) return next.handle();
    return from(Promise.resolve().then(() => map(context))).pipe(
      // The handler runs when its observable is subscribed: subscribe inside the store.
      switchMap((host) => new Observable((subscriber) => this.requestContext.run(host, () => next.handle().subscribe(subscriber)))),
    );
  }
}
