import { MemoryStore, TrellisError, type SessionStore } from '../../../../index.js';
import type { TrellisWorkerOptions, TurnQueueOptions } from '../../../../queue.js';

/** Where Redis is, as `@nestjs/bullmq` users write it; an alternative to a `url`. */
export interface TrellisRedisConnection {
  readonly host: string;
  /** Default 6379. */
  readonly port?: number;
  readonly username?: string;
  readonly password?: string;
  /** The Redis database number. Default 0. */
  readonly db?: number;
  /** Connect with TLS (`rediss://`). */
  readonly tls?: boolean;
}

/**
 * The `queue` option of `TrellisModule`: send the turns of injected agents to the worker
 * queue (`TurnQueue` of `trellis/queue`) instead of running them in the request.
 * Give Redis as `url` or `connection`; the rest are `TurnQueueOptions` (the queue reads
 * landed turns from the module's `store`; `waitMs` bounds each caller's wait).
 *
 * @example
 * queue: { url: process.env.REDIS_URL, queueName: 'support-turns' }
 */
export interface TrellisQueueOptions extends Omit<TurnQueueOptions, 'url' | 'store'> {
  /** `redis://[user:password@]host:6379[/db]`. */
  readonly url?: string;
  /** Redis as host, port, credentials; instead of `url`. */
  readonly connection?: TrellisRedisConnection;
}

/** The `worker` option: `true`, or the `TrellisWorker` settings (concurrency, lease, lock). */
export type TrellisWorkerHostOptions = Omit<TrellisWorkerOptions, 'url' | 'queueName' | 'prefix' | 'store' | 'agent'>;

/** The queue settings of one module, checked and resolved. */
export interface QueueSettings {
  /** What `new TurnQueue(...)` takes. */
  readonly queue: TurnQueueOptions;
  /** What `new TrellisWorker(...)` takes besides the store and the agent resolver, when this app runs one. */
  readonly worker: (TrellisWorkerHostOptions & Pick<TurnQueueOptions, 'url' | 'queueName' | 'prefix'>) | undefined;
  readonly store: SessionStore;
}

function invalid(message: string, hint: string): TrellisError {
  return new TrellisError('InvalidOptions', `TrellisModule: ${message}`, { hint });
}

/**
 * Checks the `queue` and `worker` options at bootstrap, so a bad one fails there with what
 * to fix; `undefined` when turns run in process.
 */
export function queueSettings(options: {
  readonly queue?: TrellisQueueOptions;
  readonly worker?: boolean | TrellisWorkerHostOptions;
  readonly store?: SessionStore;
}): QueueSettings | undefined {
  const { queue, worker } = options;
  if (worker !== undefined && worker !== false && worker !== true && (typeof worker !== 'object' || worker === null)) {
    throw invalid(
      `\`worker\` must be true or the worker's settings, got ${JSON.stringify(worker)}`,
      'Pass worker: true, or worker: { concurrency: 8 }',
    );
  }
  if (queue === undefined) {
    if (worker)
      throw invalid(
        '`worker` needs `queue`: the Redis the worker takes turns from',
        "Add queue: { url: 'redis://127.0.0.1:6379' } beside worker",
      );
    return undefined;
  }
  if (typeof queue !== 'object' || queue === null)
    throw invalid(
      `\`queue\` must be an object, got ${JSON.stringify(queue)}`,
      "Pass queue: { url: 'redis://host:6379' }",
    );
  const url = redisUrl(queue);
  if (!options.store || options.store instanceof MemoryStore) {
    throw invalid(
      `\`queue\` needs a \`store\` that this app and its workers share; ${options.store ? 'a MemoryStore lives in one process' : 'none is given'}`,
      "Pass store: await PostgresStore.open({ url }) (or a SqliteStore file every process on the machine opens), the same in the workers' app",
    );
  }
  const { url: _url, connection: _connection, ...rest } = queue;
  // A caller's wait reads a turn whose job Redis lost from the module's store, which the workers share.
  const resolved = { ...rest, url, store: options.store };
  // The in-app worker meets Redis where the queue does, and gives up on it as soon, unless told otherwise.
  const workerSettings = worker
    ? {
        connectTimeoutMs: queue.connectTimeoutMs,
        ...(worker === true ? {} : worker),
        url,
        queueName: queue.queueName,
        prefix: queue.prefix,
      }
    : undefined;
  return { queue: resolved, worker: workerSettings, store: options.store };
}

function redisUrl(queue: TrellisQueueOptions): string {
  if (queue.url !== undefined && queue.connection !== undefined)
    throw invalid('`queue` takes `url` or `connection`, not both', 'Keep one of them');
  if (queue.url !== undefined) {
    if (typeof queue.url !== 'string' || !/^rediss?:\/\/[^/]/.test(queue.url)) {
      throw invalid(
        `\`queue.url\` must be a Redis URL (redis://host:6379), got ${JSON.stringify(redactedUrl(queue.url))}`,
        'e.g. queue: { url: process.env.REDIS_URL }',
      );
    }
    return queue.url;
  }
  const connection = queue.connection;
  if (typeof connection?.host !== 'string' || connection.host.length === 0) {
    throw invalid(
      '`queue` needs where Redis is: `url`, or `connection: { host, port }`',
      "e.g. queue: { connection: { host: '127.0.0.1', port: 6379 } }",
    );
  }
  if (
    connection.port !== undefined &&
    !(Number.isInteger(connection.port) && connection.port > 0 && connection.port < 65536)
  ) {
    throw invalid(
      `\`queue.connection.port\` must be a TCP port, got ${JSON.stringify(connection.port)}`,
      'Redis listens on 6379 by default',
    );
  }
  if (connection.db !== undefined && !(Number.isInteger(connection.db) && connection.db >= 0)) {
    throw invalid(
      `\`queue.connection.db\` must be a database number, got ${JSON.stringify(connection.db)}`,
      'Leave it out for database 0',
    );
  }
  const auth =
    connection.password !== undefined
      ? `${encodeURIComponent(connection.username ?? '')}:${encodeURIComponent(connection.password)}@`
      : '';
  const host = connection.host.includes(':') ? `[${connection.host}]` : connection.host;
  return `${connection.tls ? 'rediss' : 'redis'}://${auth}${host}:${connection.port ?? 6379}/${connection.db ?? 0}`;
}

/** A URL as a message may show it: without its password. */
function redactedUrl(url: unknown): unknown {
  if (typeof url !== 'string') return url;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
}
