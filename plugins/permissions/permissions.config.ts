import { Type } from 'class-transformer';
import {
  ArrayNotEmpty,
  IsArray,
  IsIn,
  IsNotEmpty,
  IsOptional,
  IsString,
  Matches,
  ValidateNested,
} from 'class-validator';
import { IsPattern } from './regex-pattern.js';
import { TOOL_GLOB } from './tool-glob.js';

/** What a matching rule decides: run the call, refuse it, or ask a human first. */
export type PermissionEffect = 'allow' | 'deny' | 'ask';
export const PERMISSION_EFFECTS: readonly PermissionEffect[] = ['allow', 'deny', 'ask'];

const FLAGS = /^[dgimsuvy]*$/;

/** An argument condition: the rule applies only when the argument matches the pattern. */
export class ArgumentCondition {
  /** The argument's name; a dotted path reaches into objects (`filter.table`). */
  @IsString()
  @IsNotEmpty()
  arg!: string;

  /** A regular expression: a literal such as `'/delete/i'`, or a plain source with `flags`. */
  @IsString()
  @IsPattern('flags')
  matches!: string;

  /** Flags for a plain-source `matches` (e.g. `'i'`). */
  @IsOptional()
  @IsString()
  @Matches(FLAGS, { message: 'flags must be letters of dgimsuvy' })
  flags?: string;
}

/** One permission rule. */
export class PermissionRule {
  /** A name to cite in block and approval messages; default `rules[<index>]`. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  name?: string;

  /** A tool-name glob: `*` matches any run of characters (dots included), `?` one character. */
  @IsString()
  @Matches(TOOL_GLOB, { message: 'tool must be a tool-name glob of letters, digits, . _ - and the wildcards * ?' })
  tool!: string;

  /** Apply only when an argument matches; without it the rule applies to every call of the tool. */
  @IsOptional()
  @ValidateNested()
  @Type(() => ArgumentCondition)
  when?: ArgumentCondition;

  /** `allow`, `deny` or `ask`. */
  @IsIn(PERMISSION_EFFECTS, { message: 'effect must be one of allow, deny, ask' })
  effect!: PermissionEffect;

  /** Why: shown to the model when the rule denies, and to the human when it asks. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  reason?: string;

  /** With `ask`: the decisions the approver may give. Default approve and reject (no edit, which would skip these rules). */
  @IsOptional()
  @IsArray()
  @ArrayNotEmpty()
  @IsIn(['approve', 'reject', 'edit'], { each: true, message: 'allowedDecisions must hold approve, reject or edit' })
  allowedDecisions?: ('approve' | 'reject' | 'edit')[];
}

/**
 * Configuration of the `permissions` plugin.
 *
 * @example
 * app.install(PermissionsPlugin, { config: {
 *   rules: [
 *     { tool: 'db.search', when: { arg: 'sql', matches: '/\\b(delete|drop)\\b/i' }, effect: 'deny', reason: 'read-only' },
 *     { tool: 'payments.*', effect: 'ask' },
 *   ],
 *   default: 'allow',
 * } });
 */
export class PermissionsConfig {
  /** The rules; among the rules matching a call, deny wins over ask and ask over allow. */
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => PermissionRule)
  rules: PermissionRule[] = [];

  /** What applies when no rule matches. Default `allow`. */
  @IsIn(PERMISSION_EFFECTS, { message: 'default must be one of allow, deny, ask' })
  default: PermissionEffect = 'allow';
}
