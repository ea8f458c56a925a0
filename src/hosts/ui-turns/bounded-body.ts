import { TrellisError } from '../../../index.js';

/**
 * A fetch `Request`'s body as text, refused as soon as it passes `limit` bytes (declared or
 * streamed), so a large or endless body is never held in memory whole.
 *
 * @throws TrellisError `InvalidOptions` naming the limit.
 */
export async function boundedText(request: Request, limit: number, hint: string): Promise<string> {
  const tooLarge = () =>
    new TrellisError('InvalidOptions', `The request body is over ${limit} bytes, the most taken`, { hint });
  if (Number(request.headers.get('content-length') ?? 0) > limit) throw tooLarge();
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
