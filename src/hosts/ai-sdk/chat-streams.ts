import type { UIMessageChunk } from 'ai';
import type { TurnSession } from '../ui-turns/turn-session.js';

interface Running {
  /** The caller whose request started the stream, when the host knows callers. */
  readonly starter: string | undefined;
  readonly chunks: UIMessageChunk[];
  readonly listeners: Set<(chunk: UIMessageChunk | undefined) => void>;
}

/**
 * The chat streams running in this process, kept until their turn ends so a client that lost
 * its connection (`useChat({ resume: true })`, `resumeStream()`) gets the chunks it missed,
 * then the live ones. At most `maxChunks` are kept per stream; past that a reconnect is
 * refused rather than given a stream with a hole in it.
 */
export class ChatStreams {
  readonly #running = new Map<string, Running>();

  constructor(private readonly maxChunks = 10_000) {}

  /** Starts recording the session's new stream (a newer one replaces it), started by `starter` when the host knows callers. */
  open(chatId: string, starter?: string): { write(chunk: UIMessageChunk): void; close(): void } {
    const running: Running = { starter, chunks: [], listeners: new Set() };
    this.#running.set(chatId, running);
    return {
      write: (chunk) => {
        if (running.chunks.length <= this.maxChunks) running.chunks.push(chunk);
        for (const listener of running.listeners) listener(chunk);
      },
      close: () => {
        if (this.#running.get(chatId) === running) this.#running.delete(chatId);
        for (const listener of running.listeners) listener(undefined);
        running.listeners.clear();
      },
    };
  }

  /**
   * Who started the chat's running stream, or undefined. A session's first turn has no owner in
   * the store until it lands; until then, this is who is opening it.
   */
  starter(chatId: string): string | undefined {
    return this.#running.get(chatId)?.starter;
  }

  /**
   * The session's owner as an access check needs it: the store's (or the running turn's), else
   * whoever started the stream running here — a first turn's caller, before it lands.
   */
  async ownerNow(session: TurnSession): Promise<{ readonly owner: string | undefined; readonly opened: boolean }> {
    const now = await session.ownerNow();
    const starter = this.starter(session.id);
    return now.owner === undefined && starter !== undefined ? { owner: starter, opened: true } : now;
  }

  /** The chat's running stream from its first chunk, then live; `undefined` when none runs here. */
  replay(chatId: string): ReadableStream<UIMessageChunk> | undefined {
    const running = this.#running.get(chatId);
    if (!running || running.chunks.length > this.maxChunks) return undefined;
    let listener: ((chunk: UIMessageChunk | undefined) => void) | undefined;
    return new ReadableStream<UIMessageChunk>({
      start(controller) {
        for (const chunk of running.chunks) controller.enqueue(chunk);
        listener = (chunk) => (chunk === undefined ? controller.close() : controller.enqueue(chunk));
        running.listeners.add(listener);
      },
      cancel() {
        if (listener) running.listeners.delete(listener);
      },
    });
  }
}
