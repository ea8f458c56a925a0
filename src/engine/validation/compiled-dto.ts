import { defaultMetadataStorage } from 'class-transformer/cjs/storage.js';
import * as classValidator from 'class-validator';
import {
  getMetadataStorage,
  ValidationTypes,
  type ValidationArguments,
  type ValidatorConstraintInterface,
} from 'class-validator';

/**
 * class-validator's own validators by name (its exported `IS_STRING = 'isString'`, …
 * constants). Only these are run on the fast path: they are pure, so running one again on
 * the full path after a failure changes nothing. A user's validator may have effects, so
 * a DTO using one always takes the full path, where each validator runs once.
 */
const BUILT_IN = new Set(
  Object.entries(classValidator)
    .filter(([key, value]) => /^[A-Z][A-Z0-9_]*$/.test(key) && typeof value === 'string')
    .map(([, value]) => value as string),
);

interface PropertyCheck {
  readonly constraint: ValidatorConstraintInterface;
  /**
   * The arguments the validator is handed, made once per check: a built-in validator is
   * pure and synchronous, so `value` and `object` are set for the call and cleared after it
   * (no object per validated property, and nothing validated is kept alive).
   */
  readonly args: ValidationArguments;
}

interface PropertyPlan {
  readonly name: string;
  readonly checks: readonly PropertyCheck[];
  /** `@IsOptional`/`@ValidateIf` conditions: when one is false the property is not validated. */
  readonly conditions: readonly ((object: object, value: unknown) => boolean)[];
  readonly defined: boolean;
}

/** How to check a flat DTO without class-transformer and class-validator's per-call metadata walks. */
interface DtoPlan {
  readonly properties: readonly PropertyPlan[];
  readonly known: ReadonlySet<string>;
  /** The class has own fields without validation decorators, which stripping would delete. */
  readonly undecorated: boolean;
}

const NO_OBJECT: object = Object.freeze({});

const plans = new WeakMap<Function, DtoPlan | null>();

/**
 * The fast path of `validateDto` for the common DTO: every property decorated with
 * class-validator's own synchronous, non-`each` validators (`@IsString`, `@IsNumber`,
 * `@IsOptional`, …), no
 * class-transformer decorators, no groups, no nesting. It builds the instance as
 * `plainToInstance` would (`new type()`, own primitive values copied over the defaults)
 * and runs the constraints directly. It only ever answers "valid": `undefined` means
 * "not sure", and the caller takes the full path, which also writes the error messages.
 */
export function validateFlat<T extends object>(
  type: new () => T,
  input: Readonly<Record<string, unknown>>,
  stripUnknown: boolean,
): T | undefined {
  let plan = plans.get(type);
  if (plan === undefined) {
    plan = compile(type);
    plans.set(type, plan);
  }
  if (plan === null || (stripUnknown && plan.undecorated)) return undefined;
  const value = new type() as Record<string, unknown>;
  for (const key in input) {
    if (!Object.prototype.hasOwnProperty.call(input, key)) continue;
    const v = input[key];
    if (!plan.known.has(key)) {
      if (stripUnknown) continue;
      return undefined;
    }
    if (v === undefined || (v !== null && typeof v === 'object')) return undefined;
    value[key] = v;
  }
  for (const property of plan.properties) {
    const v = value[property.name];
    let skip = false;
    for (const condition of property.conditions) if (!condition(value, v)) skip = true;
    if (skip) continue;
    if (property.defined && (v === undefined || v === null)) return undefined;
    for (const check of property.checks) {
      const args = check.args;
      args.value = v;
      args.object = value;
      const valid = check.constraint.validate(v, args);
      args.value = undefined;
      args.object = NO_OBJECT;
      if (valid !== true) return undefined;
    }
  }
  return value as T;
}

function compile(type: Function): DtoPlan | null {
  const transformer = defaultMetadataStorage;
  if (
    transformer.getStrategy(type) !== 'none' ||
    transformer.getExposedMetadatas(type).length > 0 ||
    transformer.getExcludedMetadatas(type).length > 0
  )
    return null;
  const storage = getMetadataStorage();
  const metadatas = storage.getTargetValidationMetadatas(type, '', true, false);
  const byName = new Map<
    string,
    { checks: PropertyCheck[]; conditions: ((object: object, value: unknown) => boolean)[]; defined: boolean }
  >();
  for (const metadata of metadatas) {
    if (
      (metadata.groups && metadata.groups.length > 0) ||
      metadata.each ||
      metadata.always !== undefined ||
      metadata.validateIf
    )
      return null;
    if (
      transformer.findTypeMetadata(type, metadata.propertyName) ||
      transformer.findTransformMetadatas(type, metadata.propertyName, 0).length > 0
    )
      return null;
    let entry = byName.get(metadata.propertyName);
    if (!entry) {
      entry = { checks: [], conditions: [], defined: false };
      byName.set(metadata.propertyName, entry);
    }
    if (metadata.type === ValidationTypes.CUSTOM_VALIDATION) {
      if (metadata.name === undefined || !BUILT_IN.has(metadata.name)) return null;
      const constraints = storage.getTargetValidatorConstraints(metadata.constraintCls);
      if (constraints.length !== 1 || constraints[0]!.async) return null;
      entry.checks.push({
        constraint: constraints[0]!.instance,
        args: {
          value: undefined,
          constraints: metadata.constraints,
          targetName: type.name,
          object: NO_OBJECT,
          property: metadata.propertyName,
        },
      });
    } else if (metadata.type === ValidationTypes.CONDITIONAL_VALIDATION) {
      entry.conditions.push(metadata.constraints[0] as (object: object, value: unknown) => boolean);
    } else if (metadata.type === ValidationTypes.IS_DEFINED) {
      entry.defined = true;
    } else if (metadata.type !== ValidationTypes.WHITELIST) {
      return null;
    }
  }
  let probe: object;
  try {
    probe = new (type as new () => object)();
  } catch {
    return null;
  }
  const known = new Set(byName.keys());
  return {
    properties: [...byName].map(([name, entry]) => ({ name, ...entry })),
    known,
    undecorated: Object.keys(probe).some((key) => !known.has(key)),
  };
}
