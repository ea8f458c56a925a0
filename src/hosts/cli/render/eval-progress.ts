import type { EvalCaseResult } from '../../../../eval.js';

/**
 * The progress of an eval run on a terminal: one line redrawn in place — a bar, cases done
 * of all, passed and failed so far, elapsed time. Without a terminal (a pipe, a file, CI)
 * it writes nothing: the table at the end says it all.
 */
export class EvalProgress {
  #passed = 0;
  #failed = 0;
  readonly #started = performance.now();

  constructor(
    private readonly terminal: { write(text: string): void; readonly columns?: number } | undefined,
    private readonly total: number,
  ) {
    this.#draw(0);
  }

  /** One case ended. */
  case(result: EvalCaseResult, done: number): void {
    if (result.pass) this.#passed++;
    else this.#failed++;
    this.#draw(done);
  }

  /** Clears the line, before the table is printed. */
  end(): void {
    this.terminal?.write('\r\u001b[2K');
  }

  #draw(done: number): void {
    if (!this.terminal) return;
    const counts = ` ${done}/${this.total}  ✓ ${this.#passed}  ✗ ${this.#failed}  ${((performance.now() - this.#started) / 1000).toFixed(1)}s`;
    const width = Math.max(10, Math.min(40, (this.terminal.columns ?? 80) - counts.length - 3));
    const filled = this.total === 0 ? width : Math.round((done / this.total) * width);
    this.terminal.write(`\r\u001b[2K[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]${counts}`);
  }
}
