import { ForbiddenException, Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { USERS_BY_TOKEN, type DeskUser } from './users.js';

/** The request as the guard leaves it. */
export interface AuthenticatedRequest {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly method: string;
  readonly path: string;
  user?: DeskUser;
}

/**
 * Signs the caller in from `Authorization: Bearer <token>` and puts the user on the
 * request; `TrellisModule`'s `requestContext` turns it into host context (`app.scopes`…).
 * Deciding on a suspended call needs `refunds:approve`.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const header = request.headers.authorization;
    const token = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header)?.[1] : undefined;
    const user = token ? USERS_BY_TOKEN[token] : undefined;
    if (!user) throw new UnauthorizedException('Send Authorization: Bearer <token>');
    if (request.method === 'POST' && request.path.endsWith('/decisions') && !user.scopes.includes('refunds:approve')) {
      throw new ForbiddenException('Deciding on a suspended call needs the refunds:approve scope');
    }
    request.user = user;
    return true;
  }
}
