import { Container } from 'inversify';
import { TrellisError } from '../../errors/trellis-error.js';
import { MIDDLEWARE_OPTIONS, type MiddlewareDeclaration, type ToolMiddleware } from '../../contract/tool-middleware.js';
import { formatFieldErrors, validateDto } from '../validation/validate-dto.js';
import type { ContextKeySpec } from '../../contract/context-key.js';

/** A middleware instance built for one place of declaration, with the keys it reads. */
export interface BuiltMiddleware {
  readonly instance: ToolMiddleware;
  readonly name: string;
  readonly requires: readonly ContextKeySpec[];
}

/** Checks a declaration's options against the middleware's `optionsType`; lists every bad field. */
export function validateMiddlewareOptions(declaration: MiddlewareDeclaration, where: string): unknown {
  const { type, options } = declaration;
  if (typeof type !== 'function' || typeof type.prototype?.intercept !== 'function') {
    throw new TrellisError(
      'InvalidOptions',
      `${where}: ${String((type as { name?: string })?.name ?? type)} is not a middleware class`,
      {
        hint: 'Pass a class with an intercept(call, next) method',
      },
    );
  }
  if (!type.optionsType) return options;
  const result = validateDto(type.optionsType, options ?? {});
  if (!result.ok) {
    throw new TrellisError(
      'InvalidOptions',
      `${where}: options of ${type.name} are invalid:\n${formatFieldErrors(result.errors)}`,
      {
        hint: `Fix the options passed with ${type.name}`,
        details: { middleware: type.name, errors: result.errors },
      },
    );
  }
  return result.value;
}

/** Builds one middleware instance in a child container where `MIDDLEWARE_OPTIONS` is its validated options. */
export function buildMiddleware(
  declaration: MiddlewareDeclaration,
  options: unknown,
  parent: Container,
): BuiltMiddleware {
  const container = new Container({ parent });
  container.bind(MIDDLEWARE_OPTIONS).toConstantValue(options ?? {});
  container.bind(declaration.type).toSelf().inSingletonScope();
  const instance = container.get(declaration.type);
  return { instance, name: declaration.type.name, requires: declaration.type.requires?.(options) ?? [] };
}
