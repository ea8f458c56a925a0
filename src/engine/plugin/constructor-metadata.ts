import { TrellisError } from '../../errors/trellis-error.js';

/**
 * The error for a plugin whose constructor parameters name no token: no `@inject(…)`, and
 * no decorator metadata to take the type from (the file was compiled by a transform that
 * writes none, such as esbuild). Says which parameters, and the two ways out. `undefined`
 * when `error` is something else.
 */
export function missingInjectionError(
  error: unknown,
  plugin: string,
  type: abstract new (...args: never[]) => unknown,
): TrellisError | undefined {
  const message = error instanceof Error ? error.message : '';
  if (!message.includes('Found unexpected missing metadata on type')) return undefined;
  const counts = /requires at least (\d+) arguments, found (\d+) instead/.exec(message);
  const indexes = counts
    ? Array.from({ length: Number(counts[1]) - Number(counts[2]) }, (_, i) => Number(counts[2]) + i)
    : /at constructor indexes "([\d", ]+)"/
        .exec(message)?.[1]
        ?.split(/"\s*,\s*"/)
        .map(Number);
  const names = parameterNames(type);
  const which = (indexes ?? names.map((_, i) => i)).map((i) => (names[i] ? `'${names[i]}' (#${i + 1})` : `#${i + 1}`));
  const example = names[indexes?.[0] ?? 0] ?? 'service';
  return new TrellisError(
    'InvalidPlugin',
    `Plugin '${plugin}' could not be constructed: nothing says what to inject for constructor parameter ${which.join(', ')} of ${type.name} — it has no @inject(…), and its file was compiled without decorator metadata`,
    {
      hint:
        `Name the token: constructor(@inject(TheType) private readonly ${example}: TheType) — import { inject } from 'trellis'. ` +
        'Or compile with "emitDecoratorMetadata": true: tsc and ts-jest do; the trellis CLI does when typescript is installed in the project (npm install -D typescript)',
      cause: error,
    },
  );
}

/** Parameter names of a class's own constructor, read from its source (`[]` when it cannot tell). */
function parameterNames(type: abstract new (...args: never[]) => unknown): string[] {
  const source = Function.prototype.toString.call(type);
  const list = /constructor\s*\(([^)]*)\)/.exec(source)?.[1];
  if (!list) return [];
  return list
    .split(',')
    .map(
      (p) =>
        p
          .trim()
          .replace(/^\.\.\./, '')
          .split(/[\s=:]/)[0] ?? '',
    )
    .map((p) => (/^[\w$]+$/.test(p) ? p : ''));
}
