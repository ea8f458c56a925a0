import {
  inject,
  Hook,
  Plugin,
  StateKey,
  type HookContext,
  PLUGIN_CONFIG,
  KERNEL_KEYS,
  type ToolCallOutcome,
} from 'trellis/plugin';
import { addLesson, lessonFor, type Lesson } from './lesson.js';
import { ReflectionConfig } from './reflection.config.js';

/** The session's lessons, newest last: persisted with the session. */
export const LESSONS_KEY = 'reflection.lessons';

/**
 * Learns from failed tool calls. `tool.error` turns each failure (tool, error code,
 * message) into a one-line lesson kept in the session (`reflection.lessons`, persistent,
 * the newest `maxLessons`); `planning.started` appends the lessons to the instructions
 * of the next turns, so the model does not repeat the mistake.
 *
 * @example
 * await app.install(ReflectionPlugin, { config: { maxLessons: 3 } });
 */
@Plugin({
  name: 'reflection',
  version: '1.0.0',
  description: 'Writes a lesson on each tool error and adds the lessons to the next turns\u2019 instructions',
  config: ReflectionConfig,
})
@StateKey(LESSONS_KEY, { scope: 'session', merge: 'commutative', persistent: true, default: [] })
export class ReflectionPlugin {
  private readonly ignored: ReadonlySet<string>;

  constructor(@inject(PLUGIN_CONFIG) private readonly config: ReflectionConfig) {
    this.ignored = new Set(config.ignoreCodes);
  }

  @Hook('tool.error')
  learn(outcome: ToolCallOutcome, ctx: HookContext): void {
    if (!outcome.error || this.ignored.has(outcome.error.code)) return;
    const turn = ctx.get<number>(KERNEL_KEYS.turnIndex) ?? 0;
    const lesson = lessonFor(outcome.call.tool, outcome.error, turn, this.config.maxMessageChars);
    ctx.update<Lesson[]>(LESSONS_KEY, (lessons) => addLesson(lessons, lesson, this.config.maxLessons));
  }

  @Hook('planning.started')
  remind(instructions: string, ctx: HookContext): string | undefined {
    // A stored list may be longer than a since-lowered maxLessons.
    const lessons = (ctx.get<readonly Lesson[]>(LESSONS_KEY) ?? []).slice(-this.config.maxLessons);
    if (lessons.length === 0) return undefined;
    return `${instructions}\n\n${this.config.heading}\n${lessons.map((l) => `- ${l.text}`).join('\n')}`;
  }
}
