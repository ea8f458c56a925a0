import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { PostgresStore, SqliteStore, TrellisError, type SessionStore } from '../../../../index.js';
import { canAudit, type AuditLog, type AuditRecord } from '../../../../stores.js';
import { verifyAuditChain } from '../../../../governance.js';
import { cliStoreTarget } from '../cli-app.js';
import { usageError } from '../cli-errors.js';
import type { CliIo } from '../cli-io.js';

/** `trellis audit export` writes the approval audit log as JSON Lines; `trellis audit verify` checks its hash chain. */
export function registerAuditCommand(program: Command, io: CliIo): void {
  const audit = program
    .command('audit')
    .description('export or verify the approval audit log (who decided which call, hash-chained)');
  audit
    .command('export')
    .description('write the audit log as JSON Lines (one record a line, oldest first) to stdout or a file')
    .option('-o, --out <file>', 'write to this file instead of stdout')
    .option('--after <seq>', 'only records after this sequence number', parseSeq)
    .action(async (options: { out?: string; after?: number }) => {
      await withAuditLog(io, async (log, where) => {
        const records = await log.readAudit({ after: options.after ?? 0 });
        const lines = records.map((r) => `${JSON.stringify(r)}\n`);
        if (options.out) {
          const file = resolve(io.cwd, options.out);
          await new Promise<void>((done, fail) => {
            const out = createWriteStream(file, { flags: 'wx' }).on('error', fail);
            for (const line of lines) out.write(line);
            out.end(done);
          }).catch((error: NodeJS.ErrnoException) => {
            throw new TrellisError(
              'ExportExists',
              `Cannot write ${file}: ${error.code === 'EEXIST' ? 'it exists already' : error.message}`,
              { hint: 'Name a new file; an export never overwrites one' },
            );
          });
        } else for (const line of lines) io.write(line);
        const head = records.at(-1)?.hash;
        io.err(
          `exported ${records.length} record${records.length === 1 ? '' : 's'} from ${where}${head ? `; head ${head} (keep it elsewhere: trellis audit verify --head ${head} detects records cut off the end)` : ''}`,
        );
      });
    });
  audit
    .command('verify')
    .description("check the audit log's hash chain (of the store, or of an exported file); exits 1 when it is broken")
    .option('-f, --file <jsonl>', 'verify an exported file instead of the store')
    .option('--head <hash>', 'a head hash kept from an earlier export or verify: it must still be in the log')
    .action(async (options: { file?: string; head?: string }) => {
      if (options.head !== undefined && !/^[0-9a-f]{64}$/.test(options.head))
        throw usageError(`--head takes a SHA-256 hash (64 hex digits), got '${options.head}'`);
      const check = (records: readonly AuditRecord[], where: string) => {
        const result = verifyAuditChain(records, options.head);
        if (!result.ok) {
          throw new TrellisError(
            'AuditBroken',
            `The audit log in ${where} is broken at record ${result.broken!.seq} of ${result.count}: ${result.broken!.problem}`,
            {
              hint: 'Records from there on cannot be trusted; compare with an earlier export, and find who had write access to the store',
              kind: 'system',
              details: { ...result.broken },
            },
          );
        }
        io.out(
          `ok: ${result.count} record${result.count === 1 ? '' : 's'} in ${where}, chain intact; head ${result.head}`,
        );
      };
      if (options.file) {
        const file = resolve(io.cwd, options.file);
        check(readExport(file), file);
        return;
      }
      await withAuditLog(io, async (log, where) => check(await log.readAudit(), where));
    });
}

/** Opens the config's store (SQLite or PostgreSQL) by itself, without the app, for its audit log. */
async function withAuditLog(io: CliIo, work: (log: AuditLog, where: string) => Promise<void>): Promise<void> {
  const target = await cliStoreTarget(io);
  if (target.kind === 'sqlite' && !existsSync(target.path))
    throw new TrellisError('SessionNotFound', `No audit log: ${target.path} does not exist`, {
      hint: 'Decisions are logged once a session has been resumed with this store',
    });
  const store: SessionStore =
    target.kind === 'sqlite'
      ? new SqliteStore({ path: target.path, readonly: true, upgrade: true })
      : await PostgresStore.open({ url: target.url, schema: target.schema });
  try {
    if (!canAudit(store))
      throw new TrellisError('InvalidConfig', `The store at ${target.where} keeps no audit log`, {
        hint: 'Use a SqliteStore or PostgresStore',
      });
    await work(store, target.where);
  } finally {
    await store.close();
  }
}

function readExport(file: string): AuditRecord[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new TrellisError('Unreadable', `Cannot read ${file}: ${(error as Error).message}`, {
      hint: 'Give the file trellis audit export --out wrote',
    });
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      try {
        return JSON.parse(line) as AuditRecord;
      } catch {
        throw new TrellisError('AuditBroken', `${file} line ${i + 1} is not JSON: the export was cut or changed`, {
          hint: 'Export again with trellis audit export --out <file>',
        });
      }
    });
}

function parseSeq(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0)
    throw usageError(`--after takes a sequence number (0 or more), got '${value}'`);
  return n;
}
