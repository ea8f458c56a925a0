import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { usageError } from '../cli-errors.js';
import { SqliteStore, TrellisError } from '../../../index.js';
import { cliStorePath } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';
import { cliCommand } from '../invocation.js';
import { escapeControl } from '../render/terminal-text.js';
import { MESSAGE_DISPLAY_LIMIT, transcriptLines } from '../render/transcript.js';
import { counted } from '../render/turn-summary.js';

/** `trellis sessions` lists stored sessions; `show <id>` prints one transcript; `delete <id>` removes one. */
export function registerSessionsCommand(program: Command, io: CliIo): void {
  const sessions = program.command('sessions').description('list stored sessions, show one transcript, or delete one');
  sessions
    .command('list', { isDefault: true })
    .description('list stored sessions, most recent first')
    // `sessions <word>` lands here as the default command: answered below, not as a `list` error.
    .allowExcessArguments(true)
    .action(async (_options: unknown, command: Command) => {
      const [word] = command.args;
      if (word !== undefined) {
        throw usageError(`'${escapeControl(word)}' is not a sessions command: sessions takes list, show <id> or delete <id>`, `To see that session: ${cliCommand(io)} sessions show ${escapeControl(word)}`);
      }
      const path = await cliStorePath(io);
      if (!existsSync(path)) {
        io.out(`No sessions yet (${path} does not exist).`);
        return;
      }
      const store = new SqliteStore({ path, readonly: true, upgrade: true });
      try {
        const list = await store.list();
        if (list.length === 0) io.out(`No sessions yet in ${path}.`);
        for (const s of list) io.out(`${s.id}  ${s.agent}  ${counted(s.turns, 'turn')}  ${s.updatedAt}${s.suspended ? '  waiting for approval' : ''}`);
      } finally {
        await store.close();
      }
    });
  sessions
    .command('show')
    .description("print a session's transcript")
    .argument('<id>', 'the session id')
    .option('--full', `print long messages whole (by default, a message over ${MESSAGE_DISPLAY_LIMIT} characters is cut, with a note)`)
    .action(async (id: string, options: { full?: boolean }) => {
      const path = await cliStorePath(io);
      const store = existsSync(path) ? new SqliteStore({ path, readonly: true, upgrade: true }) : undefined;
      try {
        const session = await store?.load(id);
        if (!session) throw new TrellisError('SessionNotFound', `No session '${id}' in ${path}`, { hint: 'List sessions with: trellis sessions' });
        for (const line of transcriptLines(session, options.full === true, cliCommand(io))) io.out(line);
      } finally {
        await store?.close();
      }
    });
  sessions
    .command('delete')
    .description('delete a stored session with its transcript and turns (also one that can no longer be read)')
    .argument('<id>', 'the session id')
    .action(async (id: string) => {
      const path = await cliStorePath(io);
      if (!existsSync(path)) throw new TrellisError('SessionNotFound', `No session '${id}': ${path} does not exist`, { hint: 'List sessions with: trellis sessions' });
      const store = new SqliteStore({ path });
      try {
        if (!(await store.delete(id))) throw new TrellisError('SessionNotFound', `No session '${id}' in ${path}`, { hint: 'List sessions with: trellis sessions' });
        io.out(`Deleted session ${escapeControl(id)}.`);
      } finally {
        await store.close();
      }
    });
}
