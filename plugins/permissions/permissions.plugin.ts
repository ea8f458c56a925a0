import {
  inject,
  Hook,
  Plugin,
  block,
  suspend,
  type HookResult,
  PLUGIN_CONFIG,
  type ToolCallInfo,
} from 'trellis/plugin';
import { PermissionPolicy } from './permission-policy.js';
import { PermissionsConfig } from './permissions.config.js';

const DEFAULT_DECISIONS = ['approve', 'reject'] as const;

/**
 * Allow / deny / ask rules over tool calls, by tool-name glob and argument match.
 * Among the rules matching a call, deny wins over ask and ask over allow (fail safe);
 * with no match, `default` applies.
 *
 * - `tool.gate`: deny blocks the call (the turn ends `blocked`, the rule named); ask
 *   suspends it for a human (`session.resume`); allow lets it run.
 * - `tool.select` (priority 1000, so it has the last word): tools denied outright are
 *   not offered to the model at all.
 *
 * @example
 * await app.install(PermissionsPlugin, { config: {
 *   rules: [{ tool: 'db.*', when: { arg: 'sql', matches: '/delete/i' }, effect: 'deny' }],
 *   default: 'allow',
 * } });
 */
@Plugin({
  name: 'permissions',
  version: '1.0.0',
  description: 'Allow, deny or ask rules over tool calls by tool-name glob and argument match',
  priority: 10,
  tags: ['policy'],
  config: PermissionsConfig,
})
export class PermissionsPlugin {
  private readonly policy: PermissionPolicy;

  constructor(@inject(PLUGIN_CONFIG) config: PermissionsConfig) {
    this.policy = new PermissionPolicy(config);
  }

  @Hook('tool.gate')
  gate(call: ToolCallInfo): HookResult | undefined {
    const { effect, rule } = this.policy.decide(call.tool, call.args);
    if (effect === 'allow') return undefined;
    const by = rule ? `rule ${rule.label}` : `the default rule (${effect})`;
    const reason = rule?.rule.reason ? `: ${rule.rule.reason}` : '';
    if (effect === 'deny') return block(`${by} denies ${call.tool}${reason}`);
    return suspend({
      message: `${by} asks for approval before ${call.tool} runs${reason}`,
      allowedDecisions: rule?.rule.allowedDecisions ?? DEFAULT_DECISIONS,
      data: { rule: rule?.label ?? 'default', tool: call.tool },
    });
  }

  @Hook('tool.select', { priority: 1000 })
  select<T extends { readonly name: string }>(tools: readonly T[]): readonly T[] {
    const offered = tools.filter((tool) => !this.policy.deniesOutright(tool.name));
    return offered.length === tools.length ? tools : offered;
  }
}
