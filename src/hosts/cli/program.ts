import { Command, CommanderError } from 'commander';
import { errorLine, errorLines, exitCodeOf, EXIT_USAGE } from './cli-errors.js';
import type { CliIo } from './cli-io.js';
import { cliCommand, runnableCommands } from './invocation.js';
import { trellisPackage } from './package-root.js';
import { registerChatCommand } from './commands/chat.command.js';
import { registerInitCommand } from './commands/init.command.js';
import { registerMcpCommand } from './commands/mcp.command.js';
import { registerDevCommand } from './commands/dev.command.js';
import { registerPluginsCommand } from './commands/plugins.command.js';
import { registerResumeCommand } from './commands/resume.command.js';
import { registerCancelCommand } from './commands/cancel.command.js';
import { registerRunCommand } from './commands/run.command.js';
import { registerSessionsCommand } from './commands/sessions.command.js';
import { registerWorkerCommand } from './commands/worker.command.js';
import { registerQueueCommand } from './commands/queue.command.js';
import { registerDoctorCommand } from './commands/doctor.command.js';
import { registerAuditCommand } from './commands/audit.command.js';
import { registerContractCommand } from './commands/contract.command.js';
import { registerEvalCommand } from './commands/eval.command.js';

const ABOUT = `
Configuration: trellis.config.ts, .js, .mjs or .json in the working directory (plugins with their
config, agent, context, model, store; providers in .ts/.js). Without one, the SQL report desk example
is used. Models come from OPENAI_API_KEY (OPENAI_BASE_URL, TRELLIS_MODEL) or ANTHROPIC_API_KEY, or a
ModelProvider set as model in a .ts/.js config; running the example without a key, its scripted model
answers offline. Sessions are kept in .trellis/trellis.db unless the config says otherwise.`;

/** Commander's errors that come from how the command line is written: they point to `--help`. */
const USAGE_ERRORS = new Set([
  'commander.unknownOption',
  'commander.unknownCommand',
  'commander.excessArguments',
  'commander.missingArgument',
  'commander.optionMissingArgument',
  'commander.missingMandatoryOptionValue',
  'commander.invalidArgument',
  'commander.conflictingOption',
]);

/**
 * The `trellis` command line. Errors go to `io.err` as one line; nothing here calls
 * `process.exit`. `reported` receives Commander's own error text, which {@link runCli} prints.
 */
export function buildProgram(io: CliIo, reported: (text: string) => void = (text) => io.err(errorLine(text))): Command {
  const program = new Command('trellis')
    .description('Run, inspect and approve Trellis agents')
    .version(trellisPackage().version, '-V, --version')
    .addHelpText('after', ABOUT)
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (text) => io.write(text),
      writeErr: (text) => io.err(text.replace(/\n$/, '')),
      outputError: (text) => reported(text),
    });
  registerRunCommand(program, io);
  registerChatCommand(program, io);
  registerPluginsCommand(program, io);
  registerSessionsCommand(program, io);
  registerResumeCommand(program, io);
  registerCancelCommand(program, io);
  registerInitCommand(program, io);
  registerWorkerCommand(program, io);
  registerQueueCommand(program, io);
  registerDoctorCommand(program, io);
  registerMcpCommand(program, io);
  registerDevCommand(program, io);
  registerAuditCommand(program, io);
  registerContractCommand(program, io);
  registerEvalCommand(program, io);
  return program;
}

/** Parses `argv` and runs the command; resolves to the process exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const command = cliCommand(io);
  let commanderText: string | undefined;
  const program = buildProgram(io, (text) => (commanderText = text));
  try {
    await program.parseAsync([...argv]);
    return io.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has printed the help already, or left its one-line message to print here.
      if (commanderText !== undefined) {
        const help = USAGE_ERRORS.has(error.code)
          ? ` (see ${command} ${[...commandPath(program, argv.slice(2)), '--help'].join(' ')})`
          : '';
        io.err(runnableCommands(`${errorLine(commanderText)}${help}`, command));
      }
      return error.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    for (const line of errorLines(error)) io.err(runnableCommands(line, command));
    return exitCodeOf(error);
  }
}

/** The (sub)commands `args` name, in order: `['sessions', 'show']` for `sessions show x --bad`. */
function commandPath(program: Command, args: readonly string[]): string[] {
  const path: string[] = [];
  let at = program;
  for (const arg of args) {
    if (arg === '--') break;
    if (arg.startsWith('-')) continue;
    const next = at.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (!next) break;
    path.push(next.name());
    at = next;
  }
  return path;
}
