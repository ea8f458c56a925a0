import 'reflect-metadata';

/**
 * Helpers for plugin authors' tests: `import { ScriptedModel, MemoryStore } from 'trellis/testing'`.
 * A scripted model answers from a list of replies (text or tool calls) or a function of the
 * request and records every request it got in `model.calls`.
 */
export {
  ScriptedModel,
  type ScriptedReply,
  type ScriptedToolCall,
  type ScriptedReplyFn,
  type ScriptedModelOptions,
} from './src/engine/models/scripted-model.js';
export { MemoryStore } from './src/engine/stores/memory-store.js';
export { describeEval, failureText, type DescribeEvalOptions, type EvalTestApi } from './src/hosts/eval/jest-eval.js';
