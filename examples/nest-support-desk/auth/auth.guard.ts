import { Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { userByToken, type DeskUser } from './users.js';

/** The request as the guard leaves it. */
export interface AuthenticatedRequest {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  user?: DeskUser;
}

/** `Authorization: Bearer <token>`, exactly: one space, an RFC 6750 token, nothing before or after. */
const BEARER = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/;

/**
 * Signs the caller in from `Authorization: Bearer <token>` and puts the user on the
 * request; `TrellisModule`'s `requestContext` turns it into host context (`app.user_id`,
 * `app.scopes`…). Who may touch which session is not decided here, by path, but by the
 * sessions API's policy in `app.module.ts`, in each handler.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const header = request.headers.authorization;
    const token = typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined;
    const user = token === undefined ? undefined : userByToken(token);
    if (!user) throw new UnauthorizedException('Send Authorization: Bearer <token>');
    request.user = user;
    return true;
  }
}
