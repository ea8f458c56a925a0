import type { QueryReply, QueryRequest } from './query-child.js';
import { QueryProcess } from './query-process.js';

/** How many query processes the desk runs at most when no number is given. */
export const DEFAULT_QUERY_PROCESSES = 4;

/**
 * Query processes shared fairly between sessions: each session's queries run one at a time, in
 * order, and each takes a process of its own, started when needed, up to `processes`. So one
 * session's runaway queries hold at most one process (and each at most its timeout) while
 * another session's `SELECT 1` runs on another. When every process is busy, sessions wait in
 * the order they asked, each for at most the longest query's timeout.
 */
export class QueryPool {
  readonly #idle: QueryProcess[] = [];
  readonly #waiting: ((process: QueryProcess) => void)[] = [];
  /** Each session's last query: the next one waits for it. */
  readonly #sessions = new Map<string, Promise<unknown>>();
  #started = 0;
  readonly #all: QueryProcess[] = [];

  constructor(
    private readonly databasePath: string,
    private readonly processes: number = DEFAULT_QUERY_PROCESSES,
  ) {
    if (!Number.isSafeInteger(processes) || processes < 1)
      throw new RangeError(`QueryPool needs at least one process, got ${processes}`);
  }

  /** Runs one query for `session` after its earlier ones, on a process of its own. */
  run(session: string, request: Omit<QueryRequest, 'id'>, timeoutMs: number): Promise<QueryReply> {
    const before = this.#sessions.get(session) ?? Promise.resolve();
    const next = before.then(() => this.#onProcess((process) => process.run(request, timeoutMs)));
    const settled = next.catch(() => undefined);
    this.#sessions.set(session, settled);
    // Forget a session once its last query is done, so the map does not grow with every session ever seen.
    void settled.then(() => this.#sessions.get(session) === settled && this.#sessions.delete(session));
    return next;
  }

  /** Ends every query process; a later `run` starts new ones. */
  close(): void {
    for (const process of this.#all) process.close();
  }

  async #onProcess<T>(work: (process: QueryProcess) => Promise<T>): Promise<T> {
    const process = await this.#take();
    try {
      return await work(process);
    } finally {
      this.#give(process);
    }
  }

  #take(): Promise<QueryProcess> {
    const idle = this.#idle.pop();
    if (idle !== undefined) return Promise.resolve(idle);
    if (this.#started < this.processes) {
      this.#started += 1;
      const process = new QueryProcess(this.databasePath);
      this.#all.push(process);
      return Promise.resolve(process);
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #give(process: QueryProcess): void {
    const next = this.#waiting.shift();
    if (next !== undefined) next(process);
    else this.#idle.push(process);
  }
}
