import type { UIMessageChunk } from 'ai';

interface Running {
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

  /** Starts recording the session's new stream (a newer one replaces it). */
  open(chatId: string): { write(chunk: UIMessageChunk): void; close(): void } {
    const running: Running = { chunks: [], listeners: new Set() };
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
