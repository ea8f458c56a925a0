import { createInterface, type Interface } from 'node:readline';

/**
 * Reads stdin a line at a time on request, so a chat can ask a question (a message, an
 * approval) and wait for exactly one answer. Works on a terminal and on piped input.
 */
export class LineReader {
  private readonly rl: Interface;
  private readonly buffered: string[] = [];
  private readonly waiting: ((line: string | null) => void)[] = [];
  private closed = false;

  constructor(input: NodeJS.ReadableStream) {
    this.rl = createInterface({ input, terminal: false });
    this.rl.on('line', (line) => {
      const waiter = this.waiting.shift();
      if (waiter) waiter(line);
      else this.buffered.push(line);
    });
    this.rl.on('close', () => {
      this.closed = true;
      for (const waiter of this.waiting.splice(0)) waiter(null);
    });
  }

  /** The next line, or `null` once the input has ended. */
  next(): Promise<string | null> {
    const line = this.buffered.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  close(): void {
    this.rl.close();
  }
}
