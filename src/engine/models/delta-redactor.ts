import type { ModelDelta } from '../../contract/model-provider.js';
import type { SecretFieldsOf } from './message-redaction.js';
import { redactArguments, redactText, REDACTED } from '../../redaction/redactor.js';

/** Where a piece may be cut: a secret never spans one of these unless a key-value pattern does (see the context). */
const DELIMITER = /[\s"',;{}[\]()<>]/;
/** Raw text already sent, kept to recognise a value by the key before it (`pin: ` … `904172`). */
const CONTEXT_CHARS = 256;
/** A token longer than this is sent anyway, scrubbed by shape alone. */
const MAX_HELD_CHARS = 4096;

interface Stream {
  pending: string;
  context: string;
}

/**
 * Scrubs a model's streamed deltas as a whole rather than piece by piece: a secret split
 * across deltas (`"Authorization: B"`, `"earer 7Fq2…"`) is held until its token ends, then
 * redacted with the text before it as context; the rest goes out at the next delimiter, and
 * what is left at the end of the call with {@link flush}. When context and piece redact in a
 * way that would change text already sent, the piece goes out as `[Redacted]` (fail closed).
 *
 * The arguments of a call to a tool with `@Secret()` fields (`secretFieldsOf`, by the name the
 * call's first delta carries) are held whole until the end of the model call, then sent as one
 * piece with those fields `[Redacted]`: a secret field's value has no shape to recognise it by.
 */
export class DeltaRedactor {
  readonly #streams = new Map<string, Stream>();
  /** Calls to tools with secret fields: their fields and the arguments held so far, by index. */
  readonly #whole = new Map<number, { fields: readonly string[]; text: string }>();

  constructor(
    private readonly emit: (delta: ModelDelta) => void,
    private readonly secretFieldsOf?: SecretFieldsOf,
  ) {}

  push(delta: ModelDelta): void {
    if (delta.type === 'text') {
      const text = this.#take('text', delta.text, false);
      if (text) this.emit({ type: 'text', text });
      return;
    }
    const fields = delta.name !== undefined ? this.secretFieldsOf?.(delta.name) : undefined;
    if (fields !== undefined && fields.length > 0 && !this.#whole.has(delta.index))
      this.#whole.set(delta.index, { fields, text: '' });
    const whole = this.#whole.get(delta.index);
    if (whole) {
      whole.text += delta.argumentsDelta ?? '';
      if (delta.id !== undefined || delta.name !== undefined) this.emit({ ...delta, argumentsDelta: undefined });
      return;
    }
    const args =
      delta.argumentsDelta === undefined ? undefined : this.#take(`tool:${delta.index}`, delta.argumentsDelta, false);
    if (delta.id === undefined && delta.name === undefined && !args) return;
    this.emit({ ...delta, argumentsDelta: args || undefined });
  }

  /** Sends what is still held, at the end of the model call. */
  flush(): void {
    for (const [index, whole] of this.#whole) {
      if (whole.text !== '')
        this.emit({ type: 'tool_call', index, argumentsDelta: redactArguments(whole.text, whole.fields) });
    }
    this.#whole.clear();
    for (const [key, stream] of this.#streams) {
      if (stream.pending === '') continue;
      const out = this.#take(key, '', true);
      if (!out) continue;
      if (key === 'text') this.emit({ type: 'text', text: out });
      else this.emit({ type: 'tool_call', index: Number(key.slice(5)), argumentsDelta: out });
    }
    this.#streams.clear();
  }

  #take(key: string, piece: string, final: boolean): string {
    let stream = this.#streams.get(key);
    if (!stream) this.#streams.set(key, (stream = { pending: '', context: '' }));
    stream.pending += piece;
    let cut = stream.pending.length;
    if (!final && cut <= MAX_HELD_CHARS) {
      cut = 0;
      for (let i = stream.pending.length - 1; i >= 0; i--) {
        if (DELIMITER.test(stream.pending[i]!)) {
          cut = i + 1;
          break;
        }
      }
    }
    const segment = stream.pending.slice(0, cut);
    stream.pending = stream.pending.slice(cut);
    if (segment === '') return '';
    const before = redactText(stream.context);
    const both = redactText(stream.context + segment);
    stream.context = (stream.context + segment).slice(-CONTEXT_CHARS);
    return both.startsWith(before) ? both.slice(before.length) : REDACTED;
  }
}
