/** The `reflection` plugin: lessons from tool errors, added to later turns' instructions. */
export { ReflectionPlugin, LESSONS_KEY } from './reflection.plugin.js';
export { ReflectionConfig } from './reflection.config.js';
export { lessonFor, addLesson, type Lesson } from './lesson.js';
