import { registerDecorator, type ValidationOptions } from 'class-validator';

/** A regular expression literal as written in config: `/delete/i`. */
const LITERAL = /^\/(.+)\/([a-z]*)$/s;
const FLAGS = /^[dgimsuvy]*$/;

/**
 * Compiles a pattern written in config: either a literal (`'/delete/i'`) or a plain
 * source (`'delete'`) with separate `flags`. Flags given in both places are combined.
 * `g` and `y` are dropped: they make `test()` stateful, which a policy check must not be.
 *
 * @example
 * compilePattern('/drop\\s+table/i').test('DROP TABLE users') // true
 */
export function compilePattern(pattern: string, flags = ''): RegExp {
  const literal = LITERAL.exec(pattern);
  const source = literal && FLAGS.test(literal[2]!) ? literal[1]! : pattern;
  const all = literal && FLAGS.test(literal[2]!) ? literal[2]! + flags : flags;
  return new RegExp(source, [...new Set(all.replace(/[gy]/g, ''))].join(''));
}

/** Whether {@link compilePattern} accepts the pattern; the reason when it does not. */
export function patternProblem(pattern: unknown, flags: unknown = ''): string | undefined {
  if (typeof pattern !== 'string' || pattern.length === 0) return 'must be a non-empty string';
  if (typeof flags !== 'string' || !FLAGS.test(flags)) return `flags '${String(flags)}' must be letters of dgimsuvy`;
  try {
    compilePattern(pattern, flags);
    return undefined;
  } catch (error) {
    return `is not a valid regular expression: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/**
 * class-validator check: the field (a string, or each string with `{ each: true }`) is a
 * pattern {@link compilePattern} accepts. `flagsField` names a sibling field whose flags
 * are checked together with it.
 */
export function IsPattern(flagsField?: string, options?: ValidationOptions): PropertyDecorator {
  return (target, property) => {
    registerDecorator({
      name: 'isPattern',
      target: target.constructor,
      propertyName: String(property),
      options,
      validator: {
        validate: (value: unknown, args) =>
          patternProblem(value, flagsField ? ((args?.object as Record<string, unknown>)[flagsField] ?? '') : '') ===
          undefined,
        defaultMessage: (args) => {
          const flags = flagsField ? ((args?.object as Record<string, unknown>)[flagsField] ?? '') : '';
          if (!Array.isArray(args?.value))
            return `${args?.property} ${patternProblem(args?.value, flags) ?? 'is not a valid pattern'}`;
          const bad = (args.value as unknown[]).flatMap((v, i) => {
            const problem = patternProblem(v, flags);
            return problem ? [`${args.property}[${i}] ${problem}`] : [];
          });
          return bad.join('; ') || `${args.property} holds an invalid pattern`;
        },
      },
    });
  };
}
