import { timingSafeEqual } from 'node:crypto';

/** A signed-in user as the auth guard puts it on the request. */
export interface DeskUser {
  readonly id: string;
  readonly tenant: string;
  readonly scopes: readonly string[];
  /** What approval policies check: who may decide which suspended calls. */
  readonly roles: readonly string[];
}

/**
 * The demo's bearer tokens. A real app verifies a JWT or asks its identity provider;
 * the shape it hands on is the same.
 */
export const USERS_BY_TOKEN: Readonly<Record<string, DeskUser>> = {
  'alice-token': { id: 'alice', tenant: 'acme', scopes: ['orders:read', 'refunds:write'], roles: ['support-agent'] },
  'bob-token': { id: 'bob', tenant: 'acme', scopes: ['orders:read'], roles: [] },
  // A team lead who may pass the scope check on decisions but is no refund approver: the payments team's policy refuses her.
  'dana-token': { id: 'dana', tenant: 'acme', scopes: ['orders:read', 'refunds:approve'], roles: ['team-lead'] },
  'sam-token': {
    id: 'sam',
    tenant: 'acme',
    scopes: ['orders:read', 'refunds:write', 'refunds:approve'],
    roles: ['refund-approver'],
  },
};

/** The user a token names: compared whole and in constant time, never by prefix or property lookup. */
export function userByToken(token: string): DeskUser | undefined {
  const given = Buffer.from(token);
  for (const [known, user] of Object.entries(USERS_BY_TOKEN)) {
    const expected = Buffer.from(known);
    if (expected.length === given.length && timingSafeEqual(expected, given)) return user;
  }
  return undefined;
}
