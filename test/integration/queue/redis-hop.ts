import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP hop in front of the real Redis: what goes through it is one client's traffic only,
 * so a test can count that client's connections (`open`, `connections`) on a Redis other
 * runs share, and `cut()` them as a Redis host dying would.
 */
export class RedisHop {
  readonly sockets = new Set<Socket>();
  readonly #clients = new Set<Socket>();
  /** Connections accepted since `listen`. */
  connections = 0;
  private server: Server | undefined;
  constructor(private readonly target: URL) {}

  /** Client connections open now. */
  get open(): number {
    return this.#clients.size;
  }

  async listen(port = 0): Promise<number> {
    this.server = createServer((client) => {
      this.connections++;
      this.#clients.add(client);
      client.on('close', () => this.#clients.delete(client));
      const upstream = createConnection(Number(this.target.port || 6379), this.target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      // One side closing closes the other: the count is of clients still connected.
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    return (this.server.address() as { port: number }).port;
  }

  /** Stops listening and drops every connection. */
  async cut(): Promise<void> {
    const closed = new Promise((resolve) => this.server?.close(resolve));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}
