/** What a failed tool call taught, as kept in `reflection.lessons`. */
export interface Lesson {
  readonly tool: string;
  readonly code: string;
  /** The line added to the instructions. */
  readonly text: string;
  /** The turn it was learnt in. */
  readonly turn: number;
}

/** What to do differently, by error code. */
const ADVICE: Readonly<Record<string, string>> = {
  ToolInput: 'send arguments that match its input schema',
  ToolOutput: 'the tool itself is faulty; prefer another approach',
  ToolTimeout: 'ask for less at once',
  RateLimited: 'call it less often',
  AuthDenied: 'the user lacks the rights; do not call it again for them',
  Blocked: 'policy forbids this call; do not retry it unchanged',
  Rejected: 'a human rejected this call; do not retry it unchanged',
  MissingContext: 'it needs context the host did not provide; do not retry it',
};
const DEFAULT_ADVICE = 'do not repeat the same call unchanged';

/**
 * Turns a failed call into a one-line lesson.
 *
 * @example
 * lessonFor('db.search', { code: 'ToolInput', message: 'sql must be a string' }, 2, 200).text
 * // 'db.search failed with ToolInput ("sql must be a string"): send arguments that match its input schema.'
 */
export function lessonFor(
  tool: string,
  error: { readonly code: string; readonly message: string },
  turn: number,
  maxMessageChars: number,
): Lesson {
  const flat = error.message.replace(/\s+/g, ' ').trim();
  const message = flat.length > maxMessageChars ? `${flat.slice(0, maxMessageChars - 1)}…` : flat;
  const advice = ADVICE[error.code] ?? DEFAULT_ADVICE;
  return { tool, code: error.code, text: `${tool} failed with ${error.code} ("${message}"): ${advice}.`, turn };
}

/** Adds a lesson, dropping an identical older one, keeping the newest `max`. */
export function addLesson(lessons: readonly Lesson[] | undefined, lesson: Lesson, max: number): Lesson[] {
  const kept = (lessons ?? []).filter((l) => l.text !== lesson.text);
  kept.push(lesson);
  return kept.slice(-max);
}
