import { TrellisError } from '../../../../index.js';
import type { CallToolResult } from '../sdk.js';

/**
 * What a Trellis tool returns for an MCP `tools/call` result: the structured content when
 * the server sent some, the text when every block is text, else the content blocks as they are.
 *
 * @throws TrellisError `ToolFailed` when the server flagged the result `isError`, with its text.
 */
export function mcpToolValue(server: string, tool: string, result: CallToolResult): unknown {
  const blocks = Array.isArray(result.content) ? result.content : [];
  const text = blocks.every((b) => b.type === 'text')
    ? blocks.map((b) => (b as { text: string }).text).join('\n')
    : undefined;
  if (result.isError === true) {
    throw new TrellisError(
      'ToolFailed',
      `MCP tool ${server}/${tool} reported an error: ${text ?? JSON.stringify(blocks)}`,
      { details: { server, tool } },
    );
  }
  if (result.structuredContent !== undefined) return result.structuredContent;
  return text ?? blocks;
}
