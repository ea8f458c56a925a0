import { Inject, Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { from, Observable, switchMap } from 'rxjs';
import type { Approver } from '../../../index.js';
import { TrellisRequestContext } from './request-context.js';
import { TRELLIS_MODULE_OPTIONS } from './trellis-module-definition.js';
import type { TrellisModuleOptions } from './trellis-module-options.js';

/**
 * Runs each handler inside the host context that `options.requestContext` maps the request
 * to, and with the approver `options.approver` maps it to (by default the request's `user`:
 * its `id`, `sub`, `email` or `username`, and its `roles`). Interceptors run after guards, so
 * an auth guard's `request.user` is there to map. `TrellisModule` registers it app-wide;
 * with neither option and no `request.user` it passes through.
 */
@Injectable()
export class TrellisContextInterceptor implements NestInterceptor {
  constructor(
    @Inject(TRELLIS_MODULE_OPTIONS) private readonly options: TrellisModuleOptions,
    private readonly requestContext: TrellisRequestContext,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const map = this.options.requestContext;
    const approverOf = this.options.approver;
    const approver = approverOf ? undefined : approverFromUser(userOf(context));
    if (!map && !approverOf && approver === undefined) return next.handle();
    return from(
      Promise.resolve().then(async () => ({
        host: map ? await map(context) : undefined,
        approver: approverOf ? await approverOf(context) : approver,
      })),
    ).pipe(
      // The handler runs when its observable is subscribed: subscribe inside the store.
      switchMap(
        ({ host, approver: who }) =>
          new Observable((subscriber) => this.requestContext.run(host, () => next.handle().subscribe(subscriber), who)),
      ),
    );
  }
}

function userOf(context: ExecutionContext): unknown {
  if (context.getType() !== 'http') return undefined;
  return context.switchToHttp().getRequest<{ user?: unknown } | undefined>()?.user;
}

/**
 * The approver an authenticated `request.user` stands for: its `id`, `sub`, `email` or
 * `username` (the first that is a string or number), and its `roles` when they are a list of
 * strings. Undefined for no user, or one without any of those.
 */
export function approverFromUser(user: unknown): Approver | undefined {
  if (typeof user !== 'object' || user === null) return undefined;
  const u = user as Record<string, unknown>;
  const raw = [u['id'], u['sub'], u['email'], u['username']].find(
    (v) => (typeof v === 'string' && v.length > 0) || typeof v === 'number',
  );
  if (raw === undefined) return undefined;
  const roles = Array.isArray(u['roles']) ? u['roles'].filter((r): r is string => typeof r === 'string') : undefined;
  return { id: String(raw), ...(roles !== undefined && { roles }) };
}
