import type { Readable } from 'node:stream';
import type { Command } from 'commander';
import { isLoopback } from '../../../net/loopback.js';
import { sameSecret } from '../../../net/secret.js';
import { openAgent, withCliApp } from '../cli-app.js';
import { usageError } from '../cli-errors.js';
import type { CliIo } from '../cli-io.js';

interface McpCommandOptions {
  http?: string;
  host?: string;
  tool?: string[];
  ask?: boolean;
  token?: string;
}

/**
 * `trellis mcp`: serves the configured plugins' tools over MCP — stdio by default (stdout
 * is then the protocol: notes go to stderr), or Streamable HTTP with `--http <port>`:
 * loopback only unless `--host` says otherwise, which needs a bearer token (`--token` or
 * `TRELLIS_MCP_TOKEN`, 16+ characters).
 */
export function registerMcpCommand(program: Command, io: CliIo): void {
  program
    .command('mcp')
    .description(
      "serve the plugins' tools over MCP (stdio, or Streamable HTTP with --http); calls run through gates, permissions and middleware",
    )
    .option('--http <port>', 'serve Streamable HTTP (stateless) on this port instead of stdio')
    .option('--host <host>', 'HTTP: the interface to listen on', '127.0.0.1')
    .option('--tool <glob...>', "expose only these tools (names or globs such as 'orders.*')")
    .option('--ask', 'also expose the agent as one ask_<agent> tool that runs a whole turn (needs a model)')
    .option(
      '--token <secret>',
      'HTTP: require "Authorization: Bearer <secret>" on every request (or set TRELLIS_MCP_TOKEN); needed for a --host beyond loopback',
    )
    .action(async (options: McpCommandOptions) => {
      const token = options.token ?? (io.env.TRELLIS_MCP_TOKEN || undefined);
      const host = options.host ?? '127.0.0.1';
      if (options.http !== undefined) {
        const port = Number(options.http);
        if (!/^\d+$/.test(options.http) || port > 65535)
          throw usageError(
            `--http ${options.http} is not a TCP port`,
            'Use a whole number from 0 to 65535 (0: any free port)',
          );
        if (!isLoopback(host) && token === undefined) {
          throw usageError(
            `--host ${host} opens the MCP endpoint beyond this machine, so it needs a bearer token`,
            'Add --token <secret> (16+ characters) or set TRELLIS_MCP_TOKEN; or leave --host at 127.0.0.1',
          );
        }
      } else if (token !== undefined && options.token !== undefined) {
        throw usageError(
          '--token applies to --http only',
          'stdio has no requests to authenticate: the client that starts the process is the only one',
        );
      }
      if (token !== undefined && token.length < 16)
        throw usageError(
          'The MCP bearer token is shorter than 16 characters',
          'Use a random secret of 16+ characters, e.g. `openssl rand -hex 24`',
        );
      await withCliApp(io, async (cli) => {
        const ask = options.ask ? [openAgent(cli, io)] : undefined;
        const transport =
          options.http === undefined
            ? { kind: 'stdio' as const, stdin: io.stdin as Readable }
            : { kind: 'http' as const, port: Number(options.http), host };
        const authenticate =
          token === undefined
            ? undefined
            : (given: string | undefined) => (given !== undefined && sameSecret(given, token) ? {} : undefined);
        const { serveMcp } = await import('../../../../mcp.js'); // the MCP SDK loads for this command only
        // The config's `context` is what every session gets, MCP sessions included (docs/cli.md).
        // Parked calls belong to the config's agent, so `trellis resume` can decide them.
        const serving = await serveMcp(cli.app, {
          transport,
          tools: options.tool,
          ask,
          authenticate,
          context: cli.context,
          approvals: { agentName: cli.spec.name },
        });
        io.err(serving.url ? `MCP server listening on ${serving.url}` : 'MCP server on stdio');
        const stop = () => void serving.close();
        process.once('SIGINT', stop).once('SIGTERM', stop);
        try {
          await serving.closed;
        } finally {
          process.off('SIGINT', stop).off('SIGTERM', stop);
        }
      });
    });
}
