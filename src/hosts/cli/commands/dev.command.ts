import type { Command } from 'commander';
import { DEFAULT_DEV_PORT } from '../../dev/dev-defaults.js';
import { isLoopback } from '../../../net/loopback.js';
import { openAgent, withCliApp } from '../cli-app.js';
import { describeError, usageError } from '../cli-errors.js';
import type { CliIo } from '../cli-io.js';

interface DevOptions {
  readonly port: string;
  readonly host: string;
  readonly token?: string;
}

/**
 * `trellis dev`: a local web page over the configured app and store — sessions, each
 * turn's timeline, approvals, plugins, a chat box — until Ctrl-C. Loopback only unless
 * `--host` says otherwise, which needs `--token` (or `TRELLIS_DEV_TOKEN`).
 */
export function registerDevCommand(program: Command, io: CliIo, stopped: () => Promise<string> = untilSignalled): void {
  program
    .command('dev')
    .description('serve a local web page to watch turns, read their timelines and approve suspended calls')
    .option('-p, --port <port>', 'port to listen on (0: any free port)', String(DEFAULT_DEV_PORT))
    .option('--host <address>', 'address to bind; anything but loopback needs --token', '127.0.0.1')
    .option('--token <secret>', 'require this token on every request (or set TRELLIS_DEV_TOKEN)')
    .action(async (options: DevOptions) => {
      const port = Number(options.port);
      if (!/^\d+$/.test(options.port) || port > 65535)
        throw usageError(`--port ${options.port} is not a TCP port`, 'Use a whole number from 0 to 65535');
      const token = options.token ?? (io.env.TRELLIS_DEV_TOKEN || undefined);
      if (!isLoopback(options.host) && !token) {
        throw usageError(
          `--host ${options.host} opens the page beyond this machine, so it needs --token`,
          'Add --token <secret> (16+ characters) or set TRELLIS_DEV_TOKEN; or leave --host at 127.0.0.1',
        );
      }
      // The server (hono and the page's assets) loads only for this command, not for every `trellis` run.
      const { startDevServer } = await import('../../dev/dev-server.js');
      await withCliApp(io, async (cli) => {
        const dev = await startDevServer({
          app: cli.app,
          agent: openAgent(cli, io),
          store: cli.store,
          context: cli.context,
          host: options.host,
          port,
          token,
          approver: cli.approver,
          recorder: cli.recorder,
          onError: (error) => io.err(`note: ${describeError(error)}`),
        });
        io.out(`trellis dev: ${dev.url}`);
        io.err(`sessions from ${cli.storePath} · Ctrl-C to stop`);
        const signal = await stopped();
        io.err(`trellis dev: stopping (${signal})`);
        await dev.close();
      });
    });
}

/** Resolves on the first SIGINT or SIGTERM. */
function untilSignalled(): Promise<string> {
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
