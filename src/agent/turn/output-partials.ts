import type { ModelDelta } from '../../contract/model-provider.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import { parsePartialJson } from '../../engine/validation/partial-json.js';

/**
 * The `output.partial` events of one model call of a typed turn: the answer's text as it
 * streams, read leniently as JSON (see `parsePartialJson`), sent each time what it holds
 * changed. The text is read again once it grew by a sixteenth since the last reading (and at
 * the end), so a long answer costs linear time however finely it streams.
 */
export class OutputPartials {
  #text = '';
  #readAt = 0;
  #last = '';

  constructor(
    private readonly env: TurnEnv,
    private readonly output: string,
    private readonly round: number,
  ) {}

  push(delta: ModelDelta): void {
    if (delta.type !== 'text') return;
    this.#text += delta.text;
    if (this.#text.length - this.#readAt >= Math.max(1, this.#readAt >> 4)) this.#read();
  }

  /** The call ended: the text as it finally stands. */
  flush(): void {
    if (this.#readAt < this.#text.length) this.#read();
  }

  #read(): void {
    this.#readAt = this.#text.length;
    const partial = parsePartialJson(this.#text);
    if (typeof partial !== 'object' || partial === null || Array.isArray(partial)) return;
    const json = JSON.stringify(partial);
    if (json === this.#last) return;
    this.#last = json;
    this.env.emit({
      type: 'output.partial',
      sessionId: this.env.sessionId,
      turn: this.env.turnIndex,
      round: this.round,
      output: this.output,
      partial: partial as Readonly<Record<string, unknown>>,
    });
  }
}
