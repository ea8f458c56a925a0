import { Inject } from '@nestjs/common';
import { getAgentToken, TRELLIS_APP_TOKEN } from './trellis-tokens.js';

/**
 * Injects the Trellis app. Only available when the module was registered with
 * `exposeApp: true`; plugins may never inject it.
 */
export function InjectTrellis(): ParameterDecorator & PropertyDecorator {
  return Inject(TRELLIS_APP_TOKEN);
}

/**
 * Injects the agent named `name` as a `HostedAgent`, whose sessions carry the current
 * request's context.
 *
 * @example
 * constructor(@InjectAgent('support') private readonly support: HostedAgent) {}
 */
export function InjectAgent(name: string): ParameterDecorator & PropertyDecorator {
  return Inject(getAgentToken(name));
}
