import 'reflect-metadata';

/**
 * Trellis as a NestJS module: `import { TrellisModule, InjectAgent } from 'trellis/nestjs'`.
 * A host of the kernel: it uses the public API only. See docs/nestjs.md.
 */
export { TrellisModule, TrellisFeatureModule } from './src/nestjs/trellis.module.js';
export { TRELLIS_MODULE_OPTIONS } from './src/nestjs/trellis-module-definition.js';
export type { TrellisModuleOptions, TrellisModuleExtras, TrellisAgentOptions, HostContext } from './src/nestjs/trellis-module-options.js';
export type { FeaturePlugin } from './src/nestjs/feature-plugin.js';
export { InjectTrellis, InjectAgent } from './src/nestjs/inject.decorators.js';
export { getAgentToken, TRELLIS_APP_TOKEN } from './src/nestjs/trellis-tokens.js';
export { HostedAgent } from './src/nestjs/hosted-agent.js';
export { HostedSession } from './src/nestjs/hosted-session.js';
export type { HostedSendOptions, HostedResumeOptions, HostedCancelOptions, CancelPendingOutcome } from './src/nestjs/turn-dispatcher.js';
export type { TrellisQueueOptions, TrellisRedisConnection, TrellisWorkerHostOptions } from './src/nestjs/queue/queue-options.js';
export { TrellisRequestContext } from './src/nestjs/request-context.js';
export { TrellisContextInterceptor } from './src/nestjs/trellis-context.interceptor.js';
export { TrellisHost } from './src/nestjs/trellis-host.js';
export { TrellisSessionsModule, type TrellisSessionsOptions } from './src/nestjs/http/trellis-sessions.module.js';
export { ownerDecidesSessionPolicy, ownerOnlySessionPolicy, userIdPrincipal, type SessionAction, type SessionAccessRequest, type SessionPolicy } from './src/nestjs/http/session-policy.js';
export type { CancelPendingView, SessionView } from './src/nestjs/http/sessions-controller.js';
export type { PendingCallView, TurnResultView } from './src/nestjs/http/http-views.js';
export { CancelPendingQuery, MAX_HTTP_LEASE_WAIT_MS } from './src/nestjs/http/cancel-pending.query.js';
export { SendMessageDto } from './src/nestjs/http/send-message.dto.js';
export { DecisionsDto, DecisionDto } from './src/nestjs/http/decisions.dto.js';
export { toHttpException, type TrellisHttpErrorBody } from './src/nestjs/http/trellis-http-exception.js';
export { TrellisExceptionFilter } from './src/nestjs/http/trellis-exception.filter.js';
export { TrellisChatModule, type TrellisChatOptions } from './src/nestjs/chat/trellis-chat.module.js';
