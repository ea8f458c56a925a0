import type { HandoffMark } from '../../contract/delegation.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';
import { commitKernelWrites, turnValue } from '../../engine/state/kernel-writes.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import { dtoJsonSchema } from '../../engine/validation/dto-json-schema.js';
import { toolInputValidator } from '../../engine/validation/tool-input.js';
import { AgentInput, type HandoffSpec } from './agent-tool-spec.js';
import { pathOf, type DelegationSite } from './delegation-site.js';

/**
 * The tool that hands the conversation to `spec.agent`: it records the handoff, and when
 * the round's calls are done the turn goes on with that agent (see `handingOver` in handoff-continuation.ts).
 */
export function handoffTool(current: () => TurnEnv, site: DelegationSite, spec: HandoffSpec): RegisteredTool {
  const input = spec.input ?? AgentInput;
  const name = spec.name ?? `handoff_to_${spec.agent}`;
  const self = site.spec.name;
  return {
    plugin: 'trellis',
    method: `handoff:${spec.agent}`,
    requires: [],
    declared: new Set(),
    name,
    description:
      spec.description ??
      `Hand the conversation to the ${spec.agent} agent: it answers from now on. Say in 'input' what it needs to know.`,
    input,
    validateInput: toolInputValidator(input, undefined, `handoff '${name}'`),
    schema: dtoJsonSchema(input),
    tags: ['handoff'],
    // A sub-agent's turn journals its own steps and a handoff only marks the turn: run again, either repeats nothing.
    onCrash: 'retry',
    chain: [],
    chainNames: [],
    delegation: (call) => ({
      kind: 'handoff',
      from: self,
      to: spec.agent,
      callId: call.callId,
      input: call.args,
      path: pathOf(current(), self),
    }),
    fn: () => {
      const env = current();
      if (!site.host.agent?.(spec.agent)) {
        throw new TrellisError(
          'UnknownAgent',
          `Agent '${self}' may hand over to '${spec.agent}', but this app has no agent of that name`,
          {
            hint: `Create it with app.agent({ name: '${spec.agent}', … }) in every process that runs '${self}'`,
          },
        );
      }
      const mark: HandoffMark = { agent: spec.agent, from: self };
      commitKernelWrites(env.site.scope, env.registry, [turnValue(KERNEL_KEYS.handoff, mark)]);
      return `The conversation is now with ${spec.agent}.`;
    },
  };
}
