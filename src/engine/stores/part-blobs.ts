import { createHash } from 'node:crypto';
import { TrellisError } from '../../errors/trellis-error.js';
import { base64Bytes, isToolContent, toolContentParts, type ContentPart } from '../../contract/content-part.js';
import type { ChatMessage } from '../../contract/model-provider.js';

/**
 * Image and file parts whose bytes are over this size (decoded) are stored by reference:
 * the transcript row keeps `{ type, mediaType, name?, blob, bytes }` and the bytes go to
 * the store's `part_blobs` table, keyed by session and SHA-256, written in the same
 * transaction. Smaller parts stay inline in the transcript's JSON.
 */
export const PART_INLINE_BYTES = 64 * 1024;

/** Bytes kept apart from the transcript: `id` is `sha256-<hex>` of the base64 text. */
export interface PartBlob {
  readonly id: string;
  readonly data: string;
}

/** A stored part whose bytes are in a blob. */
interface PartRef {
  readonly type: 'image' | 'file';
  readonly mediaType: string;
  readonly name?: string;
  readonly blob: string;
  readonly bytes: number;
}

/** The messages with large part bytes swapped for references, and the bytes to store. */
export function offloadParts(
  messages: readonly ChatMessage[],
  limit = PART_INLINE_BYTES,
): { messages: readonly ChatMessage[]; blobs: PartBlob[] } {
  const blobs = new Map<string, PartBlob>();
  let changed = false;
  const out = messages.map((message) => {
    const own = message.parts ? swapParts(message.parts, limit, blobs) : undefined;
    if (own) {
      changed = true;
      return { ...message, parts: own as unknown as ContentPart[] };
    }
    if (message.role === 'tool') {
      const toolParts = toolContentParts(message.content);
      const swapped = toolParts && swapParts(toolParts, limit, blobs);
      if (swapped) {
        changed = true;
        return { ...message, content: JSON.stringify({ type: 'trellis.content', parts: swapped }) };
      }
    }
    return message;
  });
  return { messages: changed ? out : messages, blobs: [...blobs.values()] };
}

/** The blob ids a stored transcript refers to. */
export function referencedBlobs(messages: readonly ChatMessage[]): string[] {
  const ids = new Set<string>();
  for (const message of messages) {
    for (const part of storedParts(message) ?? []) if (isRef(part)) ids.add(part.blob);
  }
  return [...ids];
}

/**
 * The transcript with references swapped back for the bytes.
 *
 * @throws TrellisError `StoreCorrupt` when a referenced blob is missing.
 */
export function restoreParts(
  messages: readonly ChatMessage[],
  blobs: ReadonlyMap<string, string>,
  sessionId: string,
): ChatMessage[] {
  return messages.map((message) => {
    const parts = storedParts(message);
    if (!parts?.some(isRef)) return message;
    const restored = parts.map((part) => (isRef(part) ? fromRef(part, blobs, sessionId) : part));
    if (message.parts) return { ...message, parts: restored };
    return { ...message, content: JSON.stringify({ type: 'trellis.content', parts: restored }) };
  });
}

function swapParts(
  parts: readonly ContentPart[],
  limit: number,
  blobs: Map<string, PartBlob>,
): (ContentPart | PartRef)[] | undefined {
  let swapped = false;
  const out = parts.map((part): ContentPart | PartRef => {
    if (part.type === 'text' || part.data === undefined) return part;
    const bytes = base64Bytes(part.data);
    if (bytes <= limit) return part;
    swapped = true;
    const id = `sha256-${createHash('sha256').update(part.data).digest('hex')}`;
    blobs.set(id, { id, data: part.data });
    return part.type === 'file'
      ? { type: 'file', mediaType: part.mediaType, name: part.name, blob: id, bytes }
      : { type: 'image', mediaType: part.mediaType, blob: id, bytes };
  });
  return swapped ? out : undefined;
}

function storedParts(message: ChatMessage): readonly (ContentPart | PartRef)[] | undefined {
  if (message.parts) return message.parts;
  if (message.role !== 'tool') return undefined;
  try {
    const value: unknown = message.content.startsWith('{"type":"trellis.content"')
      ? JSON.parse(message.content)
      : undefined;
    return isToolContent(value) ? value.parts : undefined;
  } catch {
    return undefined;
  }
}

function isRef(part: ContentPart | PartRef): part is PartRef {
  return typeof (part as PartRef).blob === 'string';
}

function fromRef(ref: PartRef, blobs: ReadonlyMap<string, string>, sessionId: string): ContentPart {
  const data = blobs.get(ref.blob);
  if (data === undefined) {
    throw new TrellisError(
      'StoreCorrupt',
      `Session "${sessionId}" refers to a stored ${ref.type} (${ref.blob}) whose bytes are missing from part_blobs`,
      {
        hint: 'Restore the store from a backup; the part_blobs rows must not be deleted by hand',
        kind: 'system',
        details: { sessionId, blob: ref.blob },
      },
    );
  }
  return ref.type === 'file'
    ? { type: 'file', data, mediaType: ref.mediaType, name: ref.name ?? 'file' }
    : { type: 'image', data, mediaType: ref.mediaType };
}
