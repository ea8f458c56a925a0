import { existsSync, readFileSync } from 'node:fs';
import { basename, delimiter, dirname, join, relative, resolve, sep } from 'node:path';

/**
 * How the user runs the CLI here, as the start of every command it prints (`Decide with: …
 * resume q1 --approve …`), so that each runs as printed:
 *
 * - `npm run trellis --` under that npm script (a clone's `npm run trellis`);
 * - `npx trellis` under npx, or wherever npx finds this command: a project with trellis in
 *   its `node_modules`, or a clone of Trellis itself;
 * - `trellis` for a `trellis` found on the PATH (a global install);
 * - else `node <script>`, the script as this process was started with.
 */
export function invocation(env: NodeJS.ProcessEnv, script: string | undefined, cwd: string): string {
  if (env.npm_lifecycle_event === 'trellis' && (env.npm_command === 'run' || env.npm_command === 'run-script'))
    return 'npm run trellis --';
  if (env.npm_command === 'exec') return 'npx trellis';
  if (
    script &&
    basename(script) === 'trellis' &&
    !script.includes(`${sep}node_modules${sep}`) &&
    onPath(dirname(script), env)
  )
    return 'trellis';
  if (npxFindsTrellis(cwd)) return 'npx trellis';
  if (!script) return 'trellis';
  const shown = relative(cwd, script);
  const path = shown.startsWith('..') || shown === '' ? script : shown;
  return `node ${/^[\w./@+-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`}`;
}

/** The command prefix to print for `io`: what {@link invocation} found, or `trellis` where nothing was (tests). */
export function cliCommand(io: { readonly command?: string }): string {
  return io.command ?? 'trellis';
}

function onPath(dir: string, env: NodeJS.ProcessEnv): boolean {
  return (env.PATH ?? '').split(delimiter).some((entry) => entry !== '' && resolve(entry) === resolve(dir));
}

/**
 * Whether `npx trellis` run in `cwd` runs this CLI rather than asking the registry: the
 * nearest folder with a package.json (npm's project root) has `node_modules/.bin/trellis`,
 * or is the trellis package itself.
 */
function npxFindsTrellis(cwd: string): boolean {
  for (let at = resolve(cwd); ; at = dirname(at)) {
    const manifest = join(at, 'package.json');
    if (existsSync(manifest)) {
      if (existsSync(join(at, 'node_modules', '.bin', 'trellis'))) return true;
      try {
        const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown; bin?: Record<string, unknown> };
        return pkg.name === 'trellis' && typeof pkg.bin?.trellis === 'string';
      } catch {
        return false;
      }
    }
    if (dirname(at) === at) return false;
  }
}

/** Every top-level command of the CLI (`test/unit/cli/invocation.spec.ts` holds it to `buildProgram`'s list). */
export const CLI_COMMANDS: readonly string[] = [
  'init',
  'run',
  'chat',
  'plugins',
  'sessions',
  'resume',
  'cancel',
  'doctor',
  'dev',
  'mcp',
  'worker',
  'queue',
  'audit',
  'contract',
  'eval',
];
const COMMANDS = CLI_COMMANDS.join('|');
const NAMED_COMMAND = new RegExp(`(^|[\\s(\`'"])trellis (?=(?:${COMMANDS})\\b)`, 'g');

/**
 * A line with every `trellis <command>` it names (in a hint, say, written by the kernel or a
 * command) put the way the user runs the CLI, so that it runs as printed.
 */
export function runnableCommands(line: string, command: string): string {
  if (command === 'trellis') return line;
  // What comes before `trellis` in the command (`npx `): an occurrence already written that way stays.
  const before = command.slice(0, command.lastIndexOf('trellis'));
  return line.replace(NAMED_COMMAND, (match: string, lead: string, at: number) =>
    before !== '' && line.slice(0, at + lead.length).endsWith(before) ? match : `${lead}${command} `,
  );
}
