/**
 * `trellis/plugins/reflection`: the `reflection` plugin (lessons from tool errors, added to
 * later turns' instructions) with its config class and state key. See docs/plugins/reflection.md.
 */
export { ReflectionPlugin, LESSONS_KEY } from './reflection.plugin.js';
export { ReflectionConfig } from './reflection.config.js';
export type { Lesson } from './lesson.js';
