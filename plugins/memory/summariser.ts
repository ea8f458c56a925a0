import type { ModelProvider } from 'trellis/plugin';

/** One exchange to fold into the summary. */
export interface SummaryExchange {
  readonly input: string;
  readonly reply: string | undefined;
}

/** What a summariser is asked: fold `exchanges` into `previous`, within `maxTokens`. */
export interface SummaryRequest {
  /** The summary so far; absent the first time. */
  readonly previous: string | undefined;
  /** The exchanges leaving the window, oldest first. */
  readonly exchanges: readonly SummaryExchange[];
  /** The budget of the new summary, in estimated tokens. */
  readonly maxTokens: number;
  readonly signal?: AbortSignal;
}

/** Folds old exchanges into a running summary. */
export interface Summariser {
  summarise(request: SummaryRequest): Promise<string>;
}

/** A summariser given as a plain function. */
export type SummariserFn = (request: SummaryRequest) => string | Promise<string>;

/**
 * DI token of the summariser {@link SummarisingMemory} uses: a {@link Summariser} or a
 * {@link SummariserFn}. To summarise with the agent's model, bind a {@link ModelSummariser}
 * over the same `ModelProvider` the agent uses.
 *
 * @example
 * Trellis.create({ providers: [{ provide: SUMMARISER, useValue: new ModelSummariser(model) }] });
 */
export const SUMMARISER = Symbol.for('trellis.memory.summariser');

const INSTRUCTIONS =
  'You maintain a running summary of a conversation between a user and an assistant. Merge the earlier summary with the new exchanges into one concise summary that keeps names, numbers, decisions, open questions and user preferences. Write only the summary.';

/** A {@link Summariser} that asks a model (typically the agent's own) to write the summary. */
export class ModelSummariser implements Summariser {
  constructor(
    private readonly model: ModelProvider,
    private readonly instructions = INSTRUCTIONS,
  ) {}

  async summarise(request: SummaryRequest): Promise<string> {
    const lines = request.exchanges.map((e) => `User: ${e.input}\nAssistant: ${e.reply ?? '(no reply)'}`);
    const content = `${request.previous ? `Earlier summary:\n${request.previous}\n\n` : ''}New exchanges:\n${lines.join('\n\n')}\n\nWrite the updated summary, under ${request.maxTokens} tokens.`;
    const response = await this.model.call({
      messages: [
        { role: 'system', content: this.instructions },
        { role: 'user', content },
      ],
      tools: [],
      inference: { maxTokens: request.maxTokens },
      signal: request.signal,
    });
    return response.text.trim();
  }
}

/** Accepts either form bound under {@link SUMMARISER}. */
export function asSummariser(value: Summariser | SummariserFn): Summariser {
  return typeof value === 'function' ? { summarise: async (request) => value(request) } : value;
}
