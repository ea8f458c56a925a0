import { Command, CommanderError } from 'commander';
import { errorLine, errorLines, exitCodeOf, EXIT_USAGE } from './cli-errors.js';
import type { CliIo } from './cli-io.js';
import { trellisPackage } from './package-root.js';
import { registerChatCommand } from './commands/chat.command.js';
import { registerInitCommand } from './commands/init.command.js';
import { registerMcpCommand } from './commands/mcp.command.js';
import { registerDevCommand } from './commands/dev.command.js';
import { registerPluginsCommand } from './commands/plugins.command.js';
import { registerResumeCommand } from './commands/resume.command.js';
import { registerRunCommand } from './commands/run.command.js';
import { registerSessionsCommand } from './commands/sessions.command.js';
import { registerWorkerCommand } from './commands/worker.command.js';
import { registerDoctorCommand } from './commands/doctor.command.js';

const ABOUT = `
Configuration: trellis.config.ts, .js, .mjs or .json in the working directory (plugins with their
config, agent, context, model, store; providers in .ts/.js). Without one, the SQL report desk example
is used. Models come from OPENAI_API_KEY (OPENAI_BASE_URL, TRELLIS_MODEL) or ANTHROPIC_API_KEY, or a
ModelProvider set as model in a .ts/.js config; running the example without a key, its scripted model
answers offline. Sessions are kept in .trellis/trellis.db unless the config says otherwise.`;

/** The `trellis` command line. Errors go to `io.err` as one line; nothing here calls `process.exit`. */
export function buildProgram(io: CliIo): Command {
  const program = new Command('trellis')
    .description('Run, inspect and approve Trellis agents')
    .version(trellisPackage().version, '-V, --version')
    .addHelpText('after', ABOUT)
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (text) => io.write(text),
      writeErr: (text) => io.err(text.replace(/\n$/, '')),
      outputError: (text, write) => write(`${errorLine(text)}\n`),
    });
  registerRunCommand(program, io);
  registerChatCommand(program, io);
  registerPluginsCommand(program, io);
  registerSessionsCommand(program, io);
  registerResumeCommand(program, io);
  registerInitCommand(program, io);
  registerWorkerCommand(program, io);
  registerDoctorCommand(program, io);
  registerMcpCommand(program, io);
  registerDevCommand(program, io);
  return program;
}

/** Parses `argv` and runs the command; resolves to the process exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync([...argv]);
    return io.exitCode;
  } catch (error) {
    // Commander has printed its own message (or the help) already.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : EXIT_USAGE;
    for (const line of errorLines(error)) io.err(line);
    return exitCodeOf(error);
  }
}
