import 'reflect-metadata';

/** Reflect-metadata key under which `@Describe` keeps a DTO property's description. */
export const DESCRIBE_METADATA = Symbol.for('trellis:describe');

/**
 * Gives a DTO property the `description` the model sees in the tool's JSON Schema. Writes
 * metadata only; it validates nothing, so pair it with class-validator decorators.
 *
 * @example
 * class SearchInput {
 *   @Describe('A read-only SELECT statement') @IsString() sql!: string;
 * }
 */
export function Describe(text: string): PropertyDecorator {
  return (target, property) => {
    Reflect.defineMetadata(DESCRIBE_METADATA, text, target, property);
  };
}

/** The description set by `@Describe` on a property of `type` or of a class it extends. */
export function describedAs(type: Function, property: string): string | undefined {
  return Reflect.getMetadata(DESCRIBE_METADATA, type.prototype as object, property) as string | undefined;
}
