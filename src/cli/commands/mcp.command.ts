import type { Readable } from 'node:stream';
import type { Command } from 'commander';
import { serveMcp } from '../../mcp/server/serve-mcp.js';
import { openAgent, withCliApp } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';

interface McpCommandOptions {
  http?: string;
  host?: string;
  tool?: string[];
  ask?: boolean;
}

/**
 * `trellis mcp`: serves the configured plugins' tools over MCP — stdio by default (stdout
 * is then the protocol: notes go to stderr), or Streamable HTTP with `--http <port>`.
 */
export function registerMcpCommand(program: Command, io: CliIo): void {
  program
    .command('mcp')
    .description("serve the plugins' tools over MCP (stdio, or Streamable HTTP with --http); calls run through gates, permissions and middleware")
    .option('--http <port>', 'serve Streamable HTTP (stateless) on this port instead of stdio')
    .option('--host <host>', 'HTTP: the interface to listen on', '127.0.0.1')
    .option('--tool <glob...>', "expose only these tools (names or globs such as 'orders.*')")
    .option('--ask', 'also expose the agent as one ask_<agent> tool that runs a whole turn (needs a model)')
    .action(async (options: McpCommandOptions) => {
      await withCliApp(io, async (cli) => {
        const ask = options.ask ? [openAgent(cli, io)] : undefined;
        const transport = options.http === undefined ? { kind: 'stdio' as const, stdin: io.stdin as Readable } : { kind: 'http' as const, port: Number(options.http), host: options.host };
        const serving = await serveMcp(cli.app, { transport, tools: options.tool, ask });
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
