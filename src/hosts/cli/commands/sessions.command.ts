import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { usageError } from '../cli-errors.js';
import { PostgresStore, SqliteStore, TrellisError } from '../../../../index.js';
import { cliStoreTarget, withCliApp, type CliStoreTarget } from '../cli-app.js';
import { openCliQueue } from '../queued-turn.js';
import type { CliIo } from '../cli-io.js';
import { cliCommand } from '../invocation.js';
import { escapeControl } from '../render/terminal-text.js';
import { MESSAGE_DISPLAY_LIMIT, transcriptLines } from '../render/transcript.js';
import { counted } from '../render/turn-summary.js';

/**
 * `trellis sessions` lists stored sessions; `show <id>` prints one transcript; `delete <id>`
 * removes one; `erase` erases a user's (or old) sessions everywhere the app keeps them;
 * `prune --older-than <days>` deletes a PostgreSQL store's old sessions in one statement.
 */
export function registerSessionsCommand(program: Command, io: CliIo): void {
  const sessions = program
    .command('sessions')
    .description("list stored sessions, show one transcript, delete one, erase a user's, or prune old ones");
  sessions
    .command('list', { isDefault: true })
    .description('list stored sessions, most recent first')
    // `sessions <word>` lands here as the default command: answered below, not as a `list` error.
    .allowExcessArguments(true)
    .action(async (_options: unknown, command: Command) => {
      const [word] = command.args;
      if (word !== undefined) {
        throw usageError(
          `'${escapeControl(word)}' is not a sessions command: sessions takes list, show <id>, delete <id>, erase --user <id> or prune --older-than <days>`,
          `To see that session: ${cliCommand(io)} sessions show ${escapeControl(word)}`,
        );
      }
      const target = await cliStoreTarget(io);
      if (target.kind === 'sqlite' && !existsSync(target.path)) {
        io.out(`No sessions yet (${target.path} does not exist).`);
        return;
      }
      const store = await openStore(target, 'read');
      try {
        const list = await store.list();
        if (list.length === 0) io.out(`No sessions yet in ${target.where}.`);
        for (const s of list)
          io.out(
            `${s.id}  ${s.agent}  ${counted(s.turns, 'turn')}  ${s.updatedAt}${s.suspended ? '  waiting for approval' : ''}`,
          );
      } finally {
        await store.close();
      }
    });
  sessions
    .command('show')
    .description("print a session's transcript")
    .argument('<id>', 'the session id')
    .option(
      '--full',
      `print long messages whole (by default, a message over ${MESSAGE_DISPLAY_LIMIT} characters is cut, with a note)`,
    )
    .action(async (id: string, options: { full?: boolean }) => {
      const target = await cliStoreTarget(io);
      const store = target.kind === 'postgres' || existsSync(target.path) ? await openStore(target, 'read') : undefined;
      try {
        const session = await store?.load(id);
        if (!session)
          throw new TrellisError('SessionNotFound', `No session '${id}' in ${target.where}`, {
            hint: 'List sessions with: trellis sessions',
          });
        for (const line of transcriptLines(session, options.full === true, cliCommand(io))) io.out(line);
      } finally {
        await store?.close();
      }
    });
  sessions
    .command('erase')
    .description(
      "erase a user's (or a tenant's, one session's, old) sessions everywhere the app keeps them: the store, turn events, plugins' own data (onErase), the config's turn queue in Redis; compacts a SQLite file",
    )
    .option('--user <id>', "the user's sessions (app.user_id in their session context)")
    .option('--tenant <id>', "the tenant's sessions (app.tenant)")
    .option('--session <id>', 'one session')
    .option('--older-than <age>', 'sessions not updated for this long: 30d, 12h, 90m', parseAge)
    .action(async (options: { user?: string; tenant?: string; session?: string; olderThan?: Date }) => {
      const selector = {
        ...(options.user !== undefined && { userId: options.user }),
        ...(options.tenant !== undefined && { tenant: options.tenant }),
        ...(options.session !== undefined && { sessionId: options.session }),
        ...(options.olderThan !== undefined && { olderThan: options.olderThan }),
      };
      if (Object.keys(selector).length === 0)
        throw usageError(
          'sessions erase needs --user, --tenant, --session or --older-than',
          'e.g. trellis sessions erase --user u-42',
        );
      await withCliApp(io, async (cli) => {
        // With a queue in the config, the sessions' jobs in Redis go too.
        const queue = cli.config?.config.queue !== undefined ? (await openCliQueue(cli)).queue : undefined;
        try {
          const report = await cli.app.erase(selector, { also: queue ? [queue] : [] });
          const elsewhere = [
            ...(report.plugins.length > 0 ? [`plugins' own data erased by ${report.plugins.join(', ')}`] : []),
            ...(queue ? ["queued jobs erased from the turn queue's Redis"] : []),
          ].join('; ');
          io.out(
            report.sessions.length === 0
              ? `Nothing to erase: no stored session matches${elsewhere ? ` (${elsewhere})` : ''}.`
              : `Erased ${counted(report.sessions.length, 'session')}: ${report.sessions.map(escapeControl).join(', ')}${elsewhere ? `; ${elsewhere}` : ''}.`,
          );
        } finally {
          await queue?.close();
        }
      });
    });
  sessions
    .command('prune')
    .description(
      "storage retention: delete the PostgreSQL store's sessions (trellis.config `store`) not written for some days, in one statement; unlike erase, plugins' own data and recorded turn events are left alone",
    )
    .requiredOption(
      '--older-than <days>',
      'sessions not written for this many days go (a running turn keeps its session)',
    )
    .action(async (options: { olderThan: string }) => {
      const days = Number(options.olderThan);
      if (!Number.isSafeInteger(days) || days < 1)
        throw usageError(
          `--older-than must be a whole number of days, at least 1; got ${escapeControl(options.olderThan)}`,
          `e.g. ${cliCommand(io)} sessions prune --older-than 30`,
        );
      await withCliApp(io, async (cli) => {
        const store = cli.store;
        if (!(store instanceof PostgresStore)) {
          throw new TrellisError(
            'InvalidConfig',
            `Pruning is for the PostgreSQL store; this app's sessions are in ${cli.storePath}`,
            { hint: `Delete one SQLite session with: ${cliCommand(io)} sessions delete <id>` },
          );
        }
        const pruned = await store.prune(days);
        io.out(`Pruned ${counted(pruned, 'session')} not written for ${counted(days, 'day')} from ${cli.storePath}.`);
      });
    });
  sessions
    .command('delete')
    .description(
      'delete a stored session with its transcript and turns (also one that can no longer be read), and clear its lease',
    )
    .argument('<id>', 'the session id')
    .action(async (id: string) => {
      const target = await cliStoreTarget(io);
      if (target.kind === 'sqlite' && !existsSync(target.path))
        throw new TrellisError('SessionNotFound', `No session '${id}': ${target.path} does not exist`, {
          hint: 'List sessions with: trellis sessions',
        });
      const store = await openStore(target, 'write');
      try {
        // The lease goes too, whoever holds it: a turn still running there cannot save (LeaseLost).
        // Cleared first to say whose it was; the delete clears one taken meanwhile.
        const lease = await store.clearLease(id);
        const deleted = await store.delete(id);
        if (!deleted && !lease)
          throw new TrellisError('SessionNotFound', `No session '${id}' in ${target.where}`, {
            hint: 'List sessions with: trellis sessions',
          });
        if (deleted) io.out(`Deleted session ${escapeControl(id)}.`);
        if (lease)
          io.out(
            `Cleared its lease (held by ${escapeControl(lease.holder)}${lease.state === 'live' ? `, until ${lease.expiresAt}: a turn still running there cannot save` : `, ${lease.state}`}).`,
          );
      } finally {
        await store.close();
      }
    });
}

/**
 * The config's store, for a command that reads (a SQLite file opened read-only, migrated first
 * if older) or writes it. A PostgreSQL store opens as every instance does (its migrations run).
 */
async function openStore(target: CliStoreTarget, mode: 'read' | 'write'): Promise<SqliteStore | PostgresStore> {
  if (target.kind === 'postgres')
    return PostgresStore.open({ url: target.url, ...(target.schema !== undefined && { schema: target.schema }) });
  return mode === 'read'
    ? new SqliteStore({ path: target.path, readonly: true, upgrade: true })
    : new SqliteStore({ path: target.path });
}

/** `30d`, `12h`, `90m`, `45s` → the time that long ago. */
function parseAge(value: string): Date {
  const match = /^(\d+)(d|h|m|s)$/.exec(value.trim());
  if (!match) throw usageError(`--older-than takes an age such as 30d, 12h, 90m or 45s, got '${value}'`);
  const unit = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 }[match[2] as 'd' | 'h' | 'm' | 's'];
  return new Date(Date.now() - Number(match[1]) * unit);
}
