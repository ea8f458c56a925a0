import type { ArgumentCondition, PermissionEffect, PermissionRule, PermissionsConfig } from './permissions.config.js';
import { compilePattern } from './regex-pattern.js';
import { toolGlob } from './tool-glob.js';

/** How strict an effect is: among matching rules the strictest wins (fail safe). */
const SEVERITY: Readonly<Record<PermissionEffect, number>> = { allow: 0, ask: 1, deny: 2 };

/** A rule ready to match: its glob and condition compiled, its label for messages. */
interface CompiledRule {
  readonly label: string;
  readonly rule: PermissionRule;
  readonly tool: RegExp;
  readonly when: { readonly path: readonly string[]; readonly pattern: RegExp } | undefined;
}

/** The outcome for one call: the effect and the rule that decided it (none: the default). */
export interface PermissionDecision {
  readonly effect: PermissionEffect;
  readonly rule?: { readonly label: string; readonly rule: PermissionRule };
}

/**
 * The compiled rule set. `decide` is pure, so a gate can be asked again safely.
 *
 * @example
 * new PermissionPolicy(config).decide('db.search', { sql: 'DELETE FROM t' }) // { effect: 'deny', rule }
 */
export class PermissionPolicy {
  private readonly rules: readonly CompiledRule[];
  private readonly fallback: PermissionEffect;

  constructor(config: PermissionsConfig) {
    this.rules = config.rules.map((rule, index) => compileRule(rule, index));
    this.fallback = config.default;
  }

  /** The strictest effect among the rules matching this call; the first such rule is named. */
  decide(tool: string, args: unknown): PermissionDecision {
    let best: CompiledRule | undefined;
    for (const rule of this.rules) {
      if (!rule.tool.test(tool) || (rule.when && !conditionHolds(rule.when, args))) continue;
      if (!best || SEVERITY[rule.rule.effect] > SEVERITY[best.rule.effect]) best = rule;
    }
    return best ? { effect: best.rule.effect, rule: best } : { effect: this.fallback };
  }

  /**
   * Whether every call of the tool is denied whatever its arguments: an unconditional
   * deny rule matches it, or the default is deny and no allow or ask rule names it.
   */
  deniesOutright(tool: string): boolean {
    const matching = this.rules.filter((r) => r.tool.test(tool));
    if (matching.some((r) => r.rule.effect === 'deny' && !r.when)) return true;
    return this.fallback === 'deny' && !matching.some((r) => r.rule.effect !== 'deny');
  }
}

function compileRule(rule: PermissionRule, index: number): CompiledRule {
  return {
    label: ruleLabel(rule, index),
    rule,
    tool: toolGlob(rule.tool),
    when: rule.when ? compileCondition(rule.when) : undefined,
  };
}

/** How a rule is cited: its name, or its index and what it matches. */
function ruleLabel(rule: PermissionRule, index: number): string {
  if (rule.name) return `'${rule.name}'`;
  const when = rule.when
    ? ` when ${rule.when.arg} matches ${rule.when.matches}${rule.when.flags ? ` (flags ${rule.when.flags})` : ''}`
    : '';
  return `rules[${index}] (${rule.tool}${when})`;
}

function compileCondition(when: ArgumentCondition) {
  return { path: when.arg.split('.'), pattern: compilePattern(when.matches, when.flags) };
}

/**
 * Tests the argument at the condition's path. Arguments the model wrote as unparsable
 * text are tested whole, so a deny rule cannot be dodged by breaking the JSON.
 */
function conditionHolds(when: NonNullable<CompiledRule['when']>, args: unknown): boolean {
  if (typeof args === 'string') return when.pattern.test(args);
  let value: unknown = args;
  for (const part of when.path) {
    if (typeof value !== 'object' || value === null) return false;
    value = (value as Record<string, unknown>)[part];
  }
  if (value === undefined) return false;
  return when.pattern.test(typeof value === 'string' ? value : JSON.stringify(value));
}
