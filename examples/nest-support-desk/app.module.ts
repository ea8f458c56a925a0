import { Module, type DynamicModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { MemoryStore, type ModelProvider, type SessionStore } from 'trellis';
import {
  ownerOnlySessionPolicy,
  TrellisModule,
  TrellisSessionsModule,
  type SessionAccessRequest,
  type TrellisQueueOptions,
  type TrellisWorkerHostOptions,
} from 'trellis/nestjs';
import type { AuthenticatedRequest } from './auth/auth.guard.js';
import { AuthGuard } from './auth/auth.guard.js';
import { OrdersModule } from './orders/orders.module.js';
import { RefundsModule } from './refunds/refunds.module.js';
import { supportModel } from './support-model.js';

/** What the desk can be started with; tests pass their own model and store. */
export interface SupportDeskOptions {
  readonly model?: ModelProvider;
  readonly store?: SessionStore;
  /** Send turns to the worker queue (needs a shared store, e.g. PostgreSQL). */
  readonly queue?: TrellisQueueOptions;
  /** Also run a worker for that queue in this app. */
  readonly worker?: boolean | TrellisWorkerHostOptions;
}

/**
 * Who may touch a session: its owner (who opened it) reads it, writes to it and withdraws its
 * waiting calls; a supervisor (`refunds:approve`) reads any session and
 * decides on waiting calls — nobody else decides, the owner included.
 */
export function deskPolicy(request: SessionAccessRequest): boolean {
  const scopes = request.context['app.scopes'];
  const supervisor = Array.isArray(scopes) && scopes.includes('refunds:approve');
  if (request.action === 'decide') return supervisor && request.opened;
  if (request.action === 'read' && supervisor && request.opened) return true;
  return ownerOnlySessionPolicy(request);
}

/**
 * The support desk: Trellis configured once, two teams' feature modules with their plugins
 * (orders, owned by team-orders; refunds, owned by team-payments, behind an approval policy),
 * the sessions API under `/api/support`, and an auth guard whose user becomes the turn's
 * host context.
 */
@Module({})
export class SupportDeskModule {
  static register(options: SupportDeskOptions = {}): DynamicModule {
    return {
      module: SupportDeskModule,
      imports: [
        TrellisModule.forRoot({
          isGlobal: true,
          store: options.store ?? new MemoryStore(),
          models: { default: options.model ?? supportModel() },
          agents: [
            {
              name: 'support',
              model: 'default',
              instructions: 'You help customers of the shop with their orders and refunds.',
            },
          ],
          requestContext: (context) => {
            const user = context.switchToHttp().getRequest<AuthenticatedRequest>().user;
            return user ? { 'app.user_id': user.id, 'app.tenant': user.tenant, 'app.scopes': user.scopes } : {};
          },
          // Who decides a suspended call: the signed-in user. The audit log records them with each decision.
          approver: (context) => {
            const user = context.switchToHttp().getRequest<AuthenticatedRequest>().user;
            return user ? { id: user.id, roles: user.roles } : undefined;
          },
          // The payments team's policy: only refund approvers decide refunds, within a day (then the call is rejected and the model told).
          approvals: {
            policies: [
              {
                name: 'refunds',
                tools: ['refunds.*'],
                roles: ['refund-approver'],
                expiresAfterMs: 24 * 60 * 60 * 1000,
              },
            ],
          },
          queue: options.queue,
          worker: options.worker,
        }),
        OrdersModule,
        RefundsModule,
        TrellisSessionsModule.register({ prefix: 'api/support', agent: 'support', policy: deskPolicy }),
      ],
      providers: [{ provide: APP_GUARD, useClass: AuthGuard }],
    };
  }
}
