import type { ToolContent } from '../../contract/content-part.js';
/** Tool results longer than this many characters are cut before the model reads them. */
export const DEFAULT_MAX_TOOL_RESULT_CHARS = 100_000;

/**
 * What the model reads of one tool result: the text itself when it fits in `limit`
 * characters, otherwise its first `limit` characters and a note saying how much was
 * left out, so the model asks for less instead of paying for (or choking on) a huge
 * result. The turn's record keeps the full value; only the model's copy is cut.
 *
 * @example
 * capToolResult('x'.repeat(10), 4) // "xxxx\n[Trellis: result truncated: 10 characters, the first 4 shown. …]"
 */
export function capToolResult(content: string, limit: number = DEFAULT_MAX_TOOL_RESULT_CHARS): string {
  if (content.length <= limit) return content;
  return `${content.slice(0, limit)}\n[Trellis: result truncated: ${content.length} characters, the first ${limit} shown. Ask for less: a narrower query, fewer rows or fields]`;
}

/**
 * A tool's parts (see `toolContent`) as the JSON text its tool message keeps, each text part
 * capped as {@link capToolResult} caps a result; images and files are kept whole.
 */
export function capToolContent(value: ToolContent, limit: number = DEFAULT_MAX_TOOL_RESULT_CHARS): string {
  const parts = value.parts.map((part) =>
    part.type === 'text' ? { type: 'text' as const, text: capToolResult(part.text, limit) } : part,
  );
  return JSON.stringify({ type: 'trellis.content', parts });
}
