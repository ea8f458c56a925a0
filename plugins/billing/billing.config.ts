import { Type } from 'class-transformer';
import {
  ArrayNotEmpty,
  IsArray,
  IsNotEmpty,
  IsNumber,
  IsOptional,
  IsString,
  Min,
  registerDecorator,
  ValidateNested,
  type ValidationArguments,
} from 'class-validator';

const AMOUNT = { allowNaN: false, allowInfinity: false } as const;

/** A billing plan: the credits a user starts with, the model, the price. */
export class BillingPlan {
  /** Referred to by `app.plan`, `defaultPlan` and `users[].plan`. */
  @IsString()
  @IsNotEmpty()
  name!: string;

  /** Credits a user of this plan starts each session with. */
  @IsNumber(AMOUNT)
  @Min(0)
  credits!: number;

  /** The model this plan's requests use (`request.inference.model`); unset keeps the agent's. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  model?: string;

  /** Credits charged per 1,000 tokens (input and output); default the config's `pricePer1kTokens`. */
  @IsOptional()
  @IsNumber(AMOUNT)
  @Min(0)
  pricePer1kTokens?: number;

  /** Credits per 1,000 input tokens read from the provider's prompt cache; default the config's, else this plan's `pricePer1kTokens`. */
  @IsOptional()
  @IsNumber(AMOUNT)
  @Min(0)
  pricePer1kCachedInputTokens?: number;

  /** Credits per 1,000 input tokens written to the provider's prompt cache; default the config's, else this plan's `pricePer1kTokens`. */
  @IsOptional()
  @IsNumber(AMOUNT)
  @Min(0)
  pricePer1kCacheWriteTokens?: number;
}

/** Credits (and optionally a plan) for one named user, overriding their plan's. */
export class UserAccount {
  /** The user, as the host passes it in `app.user_id`. */
  @IsString()
  @IsNotEmpty()
  user!: string;

  /** Credits this user starts each session with. */
  @IsOptional()
  @IsNumber(AMOUNT)
  @Min(0)
  credits?: number;

  /** The user's plan when the context sets no `app.plan`. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  plan?: string;
}

/**
 * Configuration of the `billing` plugin.
 *
 * @example
 * app.install(BillingPlugin, { config: {
 *   plans: [{ name: 'free', credits: 10, model: 'gpt-4o-mini' }, { name: 'pro', credits: 1000, model: 'gpt-4o' }],
 *   defaultPlan: 'free',
 *   pricePer1kTokens: 1,
 *   users: [{ user: 'vip', credits: 5000, plan: 'pro' }],
 * } });
 */
export class BillingConfig {
  /** The plans; names must be unique. */
  @IsArray()
  @ArrayNotEmpty()
  @ValidateNested({ each: true })
  @Type(() => BillingPlan)
  @UniquePlanNames()
  plans!: BillingPlan[];

  /** The plan of a user with no `app.plan` and no plan in `users`; default the first plan. */
  @IsOptional()
  @IsString()
  @NamesAPlan()
  defaultPlan?: string;

  /** Credits charged per 1,000 tokens where a plan sets no price. Default 1. */
  @IsNumber(AMOUNT)
  @Min(0)
  pricePer1kTokens = 1;

  /**
   * Credits per 1,000 input tokens read from a prompt cache (`usage.cachedInputTokens`),
   * where a plan sets none; default `pricePer1kTokens` (cached tokens cost like others).
   */
  @IsOptional()
  @IsNumber(AMOUNT)
  @Min(0)
  pricePer1kCachedInputTokens?: number;

  /** Credits per 1,000 input tokens written to a prompt cache (`usage.cacheWriteInputTokens`); default `pricePer1kTokens`. */
  @IsOptional()
  @IsNumber(AMOUNT)
  @Min(0)
  pricePer1kCacheWriteTokens?: number;

  /** Per-user credits and plans. */
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => UserAccount)
  @UserPlansExist()
  users: UserAccount[] = [];
}

function planNames(config: object): string[] {
  const plans = (config as Partial<BillingConfig>).plans;
  const names = Array.isArray(plans) ? plans.map((p) => p?.name).filter((n): n is string => typeof n === 'string') : [];
  return [...new Set(names)];
}

function check(
  name: string,
  validate: (value: unknown, args: ValidationArguments) => boolean,
  message: (args: ValidationArguments) => string,
): PropertyDecorator {
  return (target, property) =>
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: String(property),
      validator: { validate, defaultMessage: (args) => message(args!) },
    });
}

function UniquePlanNames(): PropertyDecorator {
  const duplicates = (value: unknown) => {
    const names = Array.isArray(value) ? value.map((p: { name?: unknown }) => p?.name) : [];
    return [...new Set(names.filter((n, i) => typeof n === 'string' && names.indexOf(n) !== i))];
  };
  return check(
    'uniquePlanNames',
    (value) => duplicates(value).length === 0,
    (args) => `plans must have unique names; repeated: ${duplicates(args.value).join(', ')}`,
  );
}

function NamesAPlan(): PropertyDecorator {
  return check(
    'namesAPlan',
    (value, args) => typeof value !== 'string' || planNames(args.object).includes(value),
    (args) =>
      `${args.property} '${String(args.value)}' is not one of the plans (${planNames(args.object).join(', ') || 'none'})`,
  );
}

function UserPlansExist(): PropertyDecorator {
  const unknown = (value: unknown, object: object) =>
    (Array.isArray(value) ? value : [])
      .map((u: { plan?: unknown }, i) => ({ i, plan: u?.plan }))
      .filter(({ plan }) => typeof plan === 'string' && !planNames(object).includes(plan));
  return check(
    'userPlansExist',
    (value, args) => unknown(value, args.object).length === 0,
    (args) =>
      unknown(args.value, args.object)
        .map(
          ({ i, plan }) =>
            `users[${i}].plan '${String(plan)}' is not one of the plans (${planNames(args.object).join(', ')})`,
        )
        .join('; '),
  );
}
