import { preDestroy } from 'inversify';
import { Hook } from '../../../../decorators/hook.decorator.js';
import { Plugin } from '../../../../decorators/plugin.decorator.js';
import { Tool } from '../../../../decorators/tool.decorator.js';
import type { ToolContext } from '../../../../index.js';
import type { PluginClass } from '../../../../index.js';
import { compileJsonSchema } from '../../../engine/validation/json-schema-validator.js';
import type { CallToolResult, McpToolDescription, ReadResourceResult } from '../sdk.js';
import { elicitationGate, elicitationSelect, elicitationTool } from './mcp-elicitation.js';
import { mcpToolValue } from './mcp-tool-result.js';

/** A resource as an MCP server lists it. */
interface McpResourceEntry {
  readonly uri: string;
  readonly name: string;
  readonly description?: string;
  readonly mimeType?: string;
}

/** What a generated plugin class needs from the server it stands for. */
export interface McpPluginSource {
  readonly server: string;
  /** For the plugin's description: `stdio: …` or `http: …`. */
  readonly via: string;
  /** Prefix of the tool names (`<prefix>.<mcp tool>`); the server name unless configured. */
  readonly prefix: string;
  readonly version: string;
  /** Calls the server's tool for the call `ctx` describes (its signal; its session, for a question the server asks meanwhile). */
  callTool(name: string, args: unknown, ctx: ToolContext): Promise<CallToolResult>;
  /** Whether the server offers resources: then the plugin has `list_resources` and `read_resource` tools. */
  readonly hasResources: boolean;
  listResources(signal: AbortSignal): Promise<readonly McpResourceEntry[]>;
  readResource(uri: string, signal: AbortSignal): Promise<ReadResourceResult>;
  /** Called when an instance is destroyed (app.stop, uninstall, or replaced on reload). */
  released(type: PluginClass): Promise<void>;
  /** A tool left out (its schema does not compile). */
  skipped(tool: string, reason: string): void;
  /**
   * Set when the server's questions (elicitation) are put to humans as Trellis approvals:
   * the plugin gets the hidden tool that carries an answer (its name is handed to `named`),
   * the gate that parks its calls, and a `tool.select` hook that keeps it from models.
   */
  readonly elicitation?: { named(tool: string): void };
}

/**
 * Builds a plugin class for the server's current tool list, applying the decorators
 * programmatically: `@Plugin({ name: <server>, tags: ['mcp'] })` and, per tool,
 * `@Tool({ name: '<prefix>.<tool>', inputSchema })` with the server's schema unchanged.
 * A new list builds a new class, swapped in with `app.reload`.
 */
export function buildMcpPluginClass(source: McpPluginSource, tools: readonly McpToolDescription[]): PluginClass {
  const type = class {};
  Object.defineProperty(type, 'name', { value: `McpServer_${source.server.replace(/\W/g, '_')}` });
  const proto = type.prototype as Record<string, unknown>;
  const taken = new Set<string>();
  tools.forEach((tool, index) => {
    const schema = tool.inputSchema as Record<string, unknown>;
    try {
      compileJsonSchema(schema, `MCP tool '${tool.name}' of server '${source.server}'`);
    } catch (error) {
      source.skipped(tool.name, error instanceof Error ? error.message : String(error));
      return;
    }
    const method = `mcpTool${index}`;
    proto[method] = (args: unknown, ctx: ToolContext) =>
      source.callTool(tool.name, args, ctx).then((result) => mcpToolValue(source.server, tool.name, result));
    Tool({
      name: uniqueName(`${source.prefix}.${safeName(tool.name)}`, taken),
      description:
        tool.description?.trim() || tool.title || `The tool '${tool.name}' of the MCP server '${source.server}'`,
      inputSchema: schema,
      tags: ['mcp', `mcp:${source.server}/${tool.name}`],
    })(proto, method, Object.getOwnPropertyDescriptor(proto, method)!);
  });
  if (source.hasResources) addResourceTools(source, proto, taken);
  if (source.elicitation) addElicitationAnswer(source, source.elicitation, proto, taken);
  proto.releaseMcpConnection = function (this: object) {
    return source.released(this.constructor as PluginClass);
  };
  preDestroy()(proto, 'releaseMcpConnection', Object.getOwnPropertyDescriptor(proto, 'releaseMcpConnection')!);
  Plugin({
    name: source.server,
    version: source.version,
    description: `MCP server '${source.server}' (${source.via})`,
    tags: ['mcp'],
  })(type);
  return type;
}

/**
 * The server's resources, for the model: `<prefix>.list_resources` (uri, name, description,
 * type of each) and `<prefix>.read_resource` ({ uri }: the text, or the content blocks).
 * Tagged `mcp-resource`, so permission rules can match them.
 */
function addResourceTools(source: McpPluginSource, proto: Record<string, unknown>, taken: Set<string>): void {
  proto.mcpListResources = async (_args: unknown, ctx: ToolContext) => {
    const list = await source.listResources(ctx.signal);
    return list.map((r) => ({
      uri: r.uri,
      name: r.name,
      ...(r.description ? { description: r.description } : {}),
      ...(r.mimeType ? { mimeType: r.mimeType } : {}),
    }));
  };
  Tool({
    name: uniqueName(`${source.prefix}.list_resources`, taken),
    description: `List the resources (files, records, documents) the MCP server '${source.server}' offers, with their URIs. Use before read_resource when you do not know the URI.`,
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    tags: ['mcp', 'mcp-resource', `mcp:${source.server}/resources/list`],
  })(proto, 'mcpListResources', Object.getOwnPropertyDescriptor(proto, 'mcpListResources')!);
  proto.mcpReadResource = (args: { uri: string }, ctx: ToolContext) =>
    source.readResource(args.uri, ctx.signal).then((result) => {
      const contents = result.contents as readonly { uri: string; text?: string; mimeType?: string }[];
      return contents.every((c) => typeof c.text === 'string') ? contents.map((c) => c.text).join('\n') : contents;
    });
  Tool({
    name: uniqueName(`${source.prefix}.read_resource`, taken),
    description: `Read one resource of the MCP server '${source.server}' by its URI (from list_resources).`,
    inputSchema: {
      type: 'object',
      properties: { uri: { type: 'string', description: 'The resource URI' } },
      required: ['uri'],
      additionalProperties: false,
    },
    tags: ['mcp', 'mcp-resource', `mcp:${source.server}/resources/read`],
  })(proto, 'mcpReadResource', Object.getOwnPropertyDescriptor(proto, 'mcpReadResource')!);
}

/** The hidden tool, gate and tool filter of a server whose questions are Trellis approvals (see `mcp-elicitation.ts`). */
function addElicitationAnswer(
  source: McpPluginSource,
  elicitation: NonNullable<McpPluginSource['elicitation']>,
  proto: Record<string, unknown>,
  taken: Set<string>,
): void {
  const name = uniqueName(`${source.prefix}.answer_elicitation`, taken);
  elicitation.named(name);
  const tool = () => name;
  proto.mcpAnswerElicitation = elicitationTool();
  Tool({
    name,
    description: `Carries a human's answer to a question the MCP server '${source.server}' asked during a call. Never offered to a model outside the question's own session.`,
    inputSchema: { type: 'object' },
    tags: ['mcp', 'mcp-elicitation', 'internal', `mcp:${source.server}/elicitation`],
  })(proto, 'mcpAnswerElicitation', Object.getOwnPropertyDescriptor(proto, 'mcpAnswerElicitation')!);
  proto.mcpElicitationGate = elicitationGate(tool);
  Hook('tool.gate')(proto, 'mcpElicitationGate', Object.getOwnPropertyDescriptor(proto, 'mcpElicitationGate')!);
  proto.mcpElicitationSelect = elicitationSelect(tool);
  Hook('tool.select')(proto, 'mcpElicitationSelect', Object.getOwnPropertyDescriptor(proto, 'mcpElicitationSelect')!);
}

/** MCP allows names Trellis does not (`/`, spaces): anything else becomes `_`. */
function safeName(name: string): string {
  const parts = name
    .split('.')
    .map((part) => part.replace(/[^a-z0-9_-]/gi, '_'))
    .filter((part) => part !== '');
  return parts.length > 0 ? parts.join('.') : 'tool';
}

function uniqueName(name: string, taken: Set<string>): string {
  let unique = name;
  for (let n = 2; taken.has(unique); n++) unique = `${name}_${n}`;
  taken.add(unique);
  return unique;
}
