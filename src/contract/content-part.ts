import { TrellisError } from '../errors/trellis-error.js';

/** Plain text inside a message made of parts. */
export interface TextPart {
  readonly type: 'text';
  readonly text: string;
}

/**
 * An image: a URL the provider fetches itself, or the bytes (base64 in `data`) with their
 * media type. Bytes may be given as a `Uint8Array` to `session.send`; they are kept as base64.
 */
export type ImagePart =
  | { readonly type: 'image'; readonly url: string; readonly mediaType?: string; readonly data?: undefined }
  | { readonly type: 'image'; readonly data: string; readonly mediaType: string; readonly url?: undefined };

/** A document (a PDF, plain text): its bytes as base64, its media type and a file name. */
export interface FilePart {
  readonly type: 'file';
  readonly data: string;
  readonly mediaType: string;
  readonly name: string;
}

/** One part of a message: text, an image or a file. */
export type ContentPart = TextPart | ImagePart | FilePart;

/** A part as a caller may give it: bytes as a `Uint8Array` (or Node `Buffer`) instead of base64. */
export type ContentPartInput =
  | TextPart
  | { readonly type: 'image'; readonly url: string; readonly mediaType?: string }
  | { readonly type: 'image'; readonly data: string | Uint8Array; readonly mediaType: string }
  | { readonly type: 'file'; readonly data: string | Uint8Array; readonly mediaType: string; readonly name: string };

/** Media types an image part may have: the ones both OpenAI and Anthropic accept. */
export const IMAGE_MEDIA_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
/** Media types a file part may have (PDF natively on both; plain text natively on Anthropic, inlined as text on OpenAI). */
export const FILE_MEDIA_TYPES: readonly string[] = ['application/pdf', 'text/plain'];
/** The largest image, in bytes: Anthropic's per-image limit (OpenAI's is larger). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
/** The largest file, in bytes: Anthropic's request limit for a PDF. */
export const MAX_FILE_BYTES = 32 * 1024 * 1024;
/** The most parts one message may carry. */
export const MAX_PARTS = 100;

/**
 * What a tool returns to hand the model parts (an image it fetched, a PDF it produced).
 * Build it with {@link toolContent}; the turn records it as JSON text, and each provider
 * adapter maps it to what that provider accepts in a tool result.
 */
export interface ToolContent {
  readonly type: 'trellis.content';
  readonly parts: readonly ContentPart[];
}

/**
 * A tool result made of parts.
 *
 * @example
 * return toolContent({ type: 'text', text: 'The scan:' }, { type: 'image', data: bytes, mediaType: 'image/png' });
 */
export function toolContent(...parts: readonly ContentPartInput[]): ToolContent {
  return { type: 'trellis.content', parts: normalizeParts(parts, 'toolContent()') };
}

/** Whether a tool's value is a {@link ToolContent}. */
export function isToolContent(value: unknown): value is ToolContent {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as ToolContent).type === 'trellis.content' &&
    Array.isArray((value as ToolContent).parts)
  );
}

const TOOL_CONTENT_PREFIX = '{"type":"trellis.content"';

/** The parts of a recorded tool message whose content is a {@link ToolContent}'s JSON; undefined otherwise. */
export function toolContentParts(content: string): readonly ContentPart[] | undefined {
  if (!content.startsWith(TOOL_CONTENT_PREFIX)) return undefined;
  try {
    const value: unknown = JSON.parse(content);
    return isToolContent(value) ? value.parts : undefined;
  } catch {
    return undefined;
  }
}

/** The parts of a message: its own, a tool result's, or one text part of its content. */
export function messageParts(message: {
  readonly role: string;
  readonly content: string;
  readonly parts?: readonly ContentPart[];
}): readonly ContentPart[] {
  if (message.parts !== undefined) return message.parts;
  if (message.role === 'tool') {
    const parts = toolContentParts(message.content);
    if (parts !== undefined) return parts;
  }
  return message.content ? [{ type: 'text', text: message.content }] : [];
}

/** Whether a message carries anything but text. */
export function hasMediaParts(message: {
  readonly role: string;
  readonly content: string;
  readonly parts?: readonly ContentPart[];
}): boolean {
  if (message.parts === undefined && !(message.role === 'tool' && message.content.startsWith(TOOL_CONTENT_PREFIX)))
    return false;
  return messageParts(message).some((part) => part.type !== 'text');
}

/** The text parts joined: what a text-only reader (a hook, memory, a log) sees of the message. */
export function partsText(parts: readonly ContentPart[]): string {
  let text = '';
  for (const part of parts) if (part.type === 'text') text += (text ? '\n' : '') + part.text;
  return text;
}

/** How many bytes a base64 string decodes to. */
export function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.floor((data.length * 3) / 4) - padding;
}

/**
 * A one-line stand-in for a part, for views and logs that do not show media:
 * `[image image/png, 12.3 KB]`, `[file invoice.pdf application/pdf, 80 KB]`.
 */
export function describePart(part: ContentPart): string {
  if (part.type === 'text') return part.text;
  if (part.type === 'image')
    return part.url !== undefined
      ? `[image ${part.url}]`
      : `[image ${part.mediaType}, ${formatBytes(base64Bytes(part.data))}]`;
  return `[file ${part.name} ${part.mediaType}, ${formatBytes(base64Bytes(part.data))}]`;
}

/** A message's parts as text with a placeholder per image or file. */
export function describeParts(parts: readonly ContentPart[]): string {
  return parts.map(describePart).join('\n');
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/**
 * Checks and normalizes parts given by a caller: bytes become base64, media types are
 * lower-cased and checked, sizes are checked against {@link MAX_IMAGE_BYTES} and
 * {@link MAX_FILE_BYTES}.
 *
 * @throws TrellisError `InvalidContent` for a malformed part, `UnsupportedMediaType` for a
 *   media type no provider adapter maps, `ContentTooLarge` for a part over its limit.
 */
export function normalizeParts(parts: readonly ContentPartInput[], where: string): ContentPart[] {
  if (!Array.isArray(parts)) throw invalid(where, 'parts must be an array of { type: "text" | "image" | "file", … }');
  if (parts.length > MAX_PARTS)
    throw invalid(where, `${parts.length} parts is more than the ${MAX_PARTS} one message may carry`);
  return parts.map((part, index) => normalizePart(part, `${where} part ${index}`));
}

function normalizePart(part: ContentPartInput, where: string): ContentPart {
  if (typeof part !== 'object' || part === null) throw invalid(where, 'is not an object');
  switch (part.type) {
    case 'text':
      if (typeof part.text !== 'string') throw invalid(where, 'a text part needs a string `text`');
      return { type: 'text', text: part.text };
    case 'image': {
      if ('url' in part && part.url !== undefined) {
        if (typeof part.url !== 'string' || !/^(https?:\/\/|data:image\/)/i.test(part.url))
          throw invalid(where, 'an image `url` must be an http(s) or data: URL');
        const mediaType =
          part.mediaType === undefined ? undefined : checkMediaType(part.mediaType, IMAGE_MEDIA_TYPES, where, 'image');
        return mediaType === undefined ? { type: 'image', url: part.url } : { type: 'image', url: part.url, mediaType };
      }
      const data = 'data' in part ? toBase64(part.data, where) : undefined;
      if (data === undefined)
        throw invalid(where, 'an image part needs a `url`, or `data` (bytes or base64) with a `mediaType`');
      const mediaType = checkMediaType((part as { mediaType?: unknown }).mediaType, IMAGE_MEDIA_TYPES, where, 'image');
      checkSize(data, MAX_IMAGE_BYTES, where, 'image');
      return { type: 'image', data, mediaType };
    }
    case 'file': {
      const data = toBase64(part.data, where);
      if (data === undefined)
        throw invalid(where, 'a file part needs `data` (bytes or base64), a `mediaType` and a `name`');
      if (typeof part.name !== 'string' || part.name === '')
        throw invalid(where, 'a file part needs a `name`, e.g. "invoice.pdf"');
      const mediaType = checkMediaType(part.mediaType, FILE_MEDIA_TYPES, where, 'file');
      checkSize(data, MAX_FILE_BYTES, where, 'file');
      return { type: 'file', data, mediaType, name: part.name };
    }
    default:
      throw invalid(
        where,
        `has type ${JSON.stringify((part as { type?: unknown }).type)}; use "text", "image" or "file"`,
      );
  }
}

function toBase64(data: unknown, where: string): string | undefined {
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
  if (typeof data !== 'string') return undefined;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data))
    throw invalid(where, '`data` is not base64; pass the bytes as a Uint8Array, or base64 text without a data: prefix');
  return data;
}

function checkMediaType(value: unknown, allowed: readonly string[], where: string, kind: string): string {
  if (typeof value !== 'string' || value === '')
    throw invalid(where, `an ${kind} given as bytes needs a \`mediaType\`, one of ${allowed.join(', ')}`);
  const mediaType = value.toLowerCase();
  if (!allowed.includes(mediaType)) {
    throw new TrellisError(
      'UnsupportedMediaType',
      `${where}: media type ${value} is not supported for ${kind === 'image' ? 'an image' : 'a file'}`,
      {
        hint: `Use one of ${allowed.join(', ')}${kind === 'file' ? '; convert other documents to PDF or extract their text' : '; convert the image to PNG or JPEG'}`,
        details: { mediaType: value, allowed },
      },
    );
  }
  return mediaType;
}

function checkSize(data: string, limit: number, where: string, kind: string): void {
  const bytes = base64Bytes(data);
  if (bytes <= limit) return;
  throw new TrellisError('ContentTooLarge', `${where}: the ${kind} is ${bytes} bytes, over the ${limit}-byte limit`, {
    hint:
      kind === 'image'
        ? 'Scale the image down or re-encode it as JPEG'
        : 'Split the document, or send only the pages that matter',
    details: { bytes, limit, kind },
  });
}

function invalid(where: string, problem: string): TrellisError {
  return new TrellisError('InvalidContent', `${where} ${problem}`, {
    hint: 'See "Images and files" in the README for the part shapes',
    details: { where },
  });
}
