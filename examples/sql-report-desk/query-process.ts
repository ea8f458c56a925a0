import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { TrellisError } from 'trellis';
import { queryChildMain, type QueryReply, type QueryRequest } from './query-child.js';
import type {} from './sql-error-codes.js';

/** The query process's JavaScript heap, in MiB: a runaway query dies there, not in the host. */
const CHILD_HEAP_MB = 256;
/** How long a new query process may take to start and open the database. */
const STARTUP_MS = 30_000;

/**
 * Runs read-only queries in a child process that can be killed. better-sqlite3 is
 * synchronous and exposes neither `sqlite3_interrupt` nor a progress handler, and a
 * worker thread cannot be stopped while SQLite is inside one step (`worker.terminate()`
 * waits for native code to return — forever, for an endless recursive CTE, and the host
 * cannot even exit). A process can: on timeout it gets SIGKILL, and the next query starts
 * a fresh one. Queries run one at a time, in order (a `QueryPool` gives each session's
 * queries a process of their own). The child is unreferenced, so it never keeps the host
 * alive, and leaves when the host does.
 */
export class QueryProcess {
  #child: Promise<ChildProcess> | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #nextId = 1;

  constructor(private readonly databasePath: string) {}

  /** Runs one query; rejects with `SqlTimeout` after `timeoutMs`, or `SqlError` if the process dies. */
  run(request: Omit<QueryRequest, 'id'>, timeoutMs: number): Promise<QueryReply> {
    const next = this.#queue.then(() => this.#runOne({ ...request, id: this.#nextId++ }, timeoutMs));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** Ends the child process, if one runs. A later `run` starts a new one. */
  close(): void {
    const child = this.#child;
    this.#child = undefined;
    void child?.then(
      (c) => c.kill('SIGKILL'),
      () => undefined,
    );
  }

  /** The time limit starts once the process is ready, so a slow start never counts against a query. */
  async #runOne(request: QueryRequest, timeoutMs: number): Promise<QueryReply> {
    this.#child ??= this.#spawn();
    const ready = this.#child;
    const child = await ready.catch((error: unknown) => {
      if (this.#child === ready) this.#child = undefined;
      throw error;
    });
    if (child.exitCode !== null || child.signalCode !== null) {
      // Ended between queries (killed from outside): start another.
      if (this.#child === ready) this.#child = undefined;
      return this.#runOne(request, timeoutMs);
    }
    return new Promise<QueryReply>((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
      };
      const onMessage = (reply: QueryReply) => {
        if (reply.id !== request.id) return;
        settle();
        resolve(reply);
      };
      const onExit = (code: number | null, signal: string | null) => {
        settle();
        if (this.#child === ready) this.#child = undefined;
        reject(
          new TrellisError(
            'SqlError',
            `The query process ended before answering (${signal ?? `exit code ${code}`}): the query likely needed more memory than allowed`,
            {
              hint: 'Select fewer or smaller columns, or aggregate in SQL',
              details: { sql: request.sql },
            },
          ),
        );
      };
      const timer = setTimeout(() => {
        settle();
        this.close();
        reject(
          new TrellisError('SqlTimeout', `The query ran longer than ${timeoutMs} ms and was stopped`, {
            hint: 'Make the query cheaper: add WHERE conditions or a LIMIT, and avoid unbounded recursive CTEs',
            details: { sql: request.sql },
          }),
        );
      }, timeoutMs);
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.send(request);
    });
  }

  #spawn(): Promise<ChildProcess> {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const source = `(${queryChildMain.toString()})(require, ${JSON.stringify(driver)}, ${JSON.stringify(this.databasePath)});`;
    const child = spawn(process.execPath, [`--max-old-space-size=${CHILD_HEAP_MB}`, '-e', source], {
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    child.unref();
    (child.channel as { unref?: () => void } | undefined)?.unref?.();
    return new Promise<ChildProcess>((resolve, reject) => {
      const fail = (why: string) => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(
          new TrellisError('SqlError', `The query process did not start: ${why}`, {
            hint: 'Check that the desk database exists and is readable',
            retryable: true,
          }),
        );
      };
      const timer = setTimeout(() => fail(`no answer within ${STARTUP_MS} ms`), STARTUP_MS);
      child.once('message', () => {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve(child);
      });
      child.once('exit', (code, signal) => fail(signal ?? `exit code ${code}`));
    });
  }
}
