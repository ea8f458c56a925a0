import 'reflect-metadata';

/**
 * Trellis as a NestJS module: `import { TrellisModule, InjectAgent } from 'trellis/nestjs'`.
 * A host of the kernel: it uses the public API only. See docs/nestjs.md.
 */
export { TrellisModule, TrellisFeatureModule } from './src/hosts/nestjs/trellis.module.js';
export { TRELLIS_MODULE_OPTIONS } from './src/hosts/nestjs/trellis-module-definition.js';
export type {
  TrellisModuleOptions,
  TrellisModuleExtras,
  TrellisAgentOptions,
  HostContext,
} from './src/hosts/nestjs/trellis-module-options.js';
export type { FeaturePlugin } from './src/hosts/nestjs/feature-plugin.js';
export { InjectTrellis, InjectAgent } from './src/hosts/nestjs/inject.decorators.js';
export { getAgentToken, TRELLIS_APP_TOKEN } from './src/hosts/nestjs/trellis-tokens.js';
export { HostedAgent } from './src/hosts/nestjs/hosted-agent.js';
export { HostedSession } from './src/hosts/nestjs/hosted-session.js';
export type {
  HostedSendOptions,
  HostedResumeOptions,
  HostedCancelOptions,
  CancelPendingOutcome,
} from './src/hosts/nestjs/turn-dispatcher.js';
export type {
  TrellisQueueOptions,
  TrellisRedisConnection,
  TrellisWorkerHostOptions,
} from './src/hosts/nestjs/queue/queue-options.js';
export { TrellisRequestContext } from './src/hosts/nestjs/request-context.js';
export { TrellisContextInterceptor } from './src/hosts/nestjs/trellis-context.interceptor.js';
export { TrellisHost } from './src/hosts/nestjs/trellis-host.js';
export { TrellisSessionsModule, type TrellisSessionsOptions } from './src/hosts/nestjs/http/trellis-sessions.module.js';
export {
  ownerDecidesSessionPolicy,
  ownerOnlySessionPolicy,
  userIdPrincipal,
  type SessionAction,
  type SessionAccessRequest,
  type SessionPolicy,
} from './src/hosts/nestjs/http/session-policy.js';
export type { CancelPendingView, SessionView } from './src/hosts/nestjs/http/sessions-controller.js';
export type { PendingCallView, TurnResultView } from './src/hosts/nestjs/http/http-views.js';
export { CancelPendingQuery, MAX_HTTP_LEASE_WAIT_MS } from './src/hosts/nestjs/http/cancel-pending.query.js';
export { SendMessageDto } from './src/hosts/nestjs/http/send-message.dto.js';
export { DecisionsDto, DecisionDto } from './src/hosts/nestjs/http/decisions.dto.js';
export { toHttpException, type TrellisHttpErrorBody } from './src/hosts/nestjs/http/trellis-http-exception.js';
export { TrellisExceptionFilter } from './src/hosts/nestjs/http/trellis-exception.filter.js';
export { TrellisChatModule, type TrellisChatOptions } from './src/hosts/nestjs/chat/trellis-chat.module.js';
