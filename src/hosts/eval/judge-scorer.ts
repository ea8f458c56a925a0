import type { ModelProvider } from '../../../index.js';
import { isObject } from './eval-case.js';
import { replyJson } from './json-scorer.js';
import { shown, verdict, type Scorer } from './scorer.js';

/** Options of {@link judgeScorer}. */
export interface JudgeOptions {
  /** Any configured model: OpenAI-compatible, Anthropic, or a `ScriptedModel` in tests. */
  readonly model: ModelProvider;
  /** The lowest score that passes. Default 0.7. */
  readonly passAt?: number;
}

const JUDGE_INSTRUCTIONS = [
  'You grade one reply of an AI assistant against a rubric.',
  'Answer with one JSON object and nothing else: {"score": <a number from 0 to 1>, "reason": "<one sentence>"}.',
  '1 means the reply fully meets the rubric, 0 that it does not meet it at all.',
].join(' ');

/**
 * LLM-as-judge: asks `model` to grade the reply against the case's `rubric`, as JSON
 * `{ score, reason }`. A judge whose answer is not that JSON fails the case, saying what it answered.
 */
export function judgeScorer(options: JudgeOptions): Scorer {
  const passAt = options.passAt ?? 0.7;
  return {
    name: 'judge',
    applies: (c) => c.rubric !== undefined,
    score: async ({ case: c, reply, toolCalls }) => {
      const tools = toolCalls.map((t) => t.name).join(', ') || 'none';
      let text: string;
      try {
        const response = await options.model.call({
          messages: [
            { role: 'system', content: JUDGE_INSTRUCTIONS },
            {
              role: 'user',
              content: `Rubric:\n${c.rubric}\n\nThe user asked:\n${c.input}\n\nTools the assistant used: ${tools}\n\nThe assistant replied:\n${reply}`,
            },
          ],
          tools: [],
          inference: { temperature: 0 },
        });
        text = response.text;
      } catch (error) {
        return verdict(
          'judge',
          false,
          `the judge model failed: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      const parsed = replyJson(text);
      const value = parsed.found && isObject(parsed.value) ? parsed.value : undefined;
      const score = typeof value?.score === 'number' ? value.score : undefined;
      if (score === undefined || score < 0 || score > 1)
        return verdict('judge', false, `the judge did not answer {"score": 0..1}: ${shown(text)}`);
      const reason = typeof value?.reason === 'string' ? value.reason : '';
      return {
        scorer: 'judge',
        pass: score >= passAt,
        score,
        detail: `${score.toFixed(2)} (pass at ${passAt})${reason ? `: ${reason}` : ''}`,
      };
    },
  };
}
