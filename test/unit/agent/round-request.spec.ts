import { filterTools, mergeInference, roundMessages, toolDefinition } from '../../../src/agent/turn/round-request.js';
import type { RegisteredTool } from '../../../src/contract/plugin-member.js';
import { KERNEL_KEYS } from '../../../src/contract/kernel-keys.js';

const tool = (name: string) =>
  ({ name, description: `${name} tool`, schema: { type: 'object' } }) as unknown as RegisteredTool;
const tools = ['a', 'b', 'c', 'd'].map(tool);
const names = (list: readonly RegisteredTool[]) => list.map((t) => t.name);

describe('filterTools', () => {
  it('offers every tool when no filter is set', () => {
    expect(filterTools(tools, {})).toBe(tools);
  });

  it('unions turn and round include lists, keeping the candidate order', () => {
    expect(
      names(filterTools(tools, { [KERNEL_KEYS.includeTools]: ['c'], [KERNEL_KEYS.roundIncludeTools]: ['a'] })),
    ).toEqual(['a', 'c']);
  });

  it('applies exclusions (turn and round) after the includes', () => {
    const turn = {
      [KERNEL_KEYS.includeTools]: ['a', 'b', 'c'],
      [KERNEL_KEYS.excludeTools]: ['b'],
      [KERNEL_KEYS.roundExcludeTools]: ['c'],
    };
    expect(names(filterTools(tools, turn))).toEqual(['a']);
  });

  it('excludes without includes leave the rest', () => {
    expect(names(filterTools(tools, { [KERNEL_KEYS.excludeTools]: ['d'] }))).toEqual(['a', 'b', 'c']);
  });
});

describe('mergeInference', () => {
  it('is the agent default when nothing overrides it', () => {
    expect(mergeInference({ temperature: 0.2 }, {})).toEqual({ temperature: 0.2 });
    expect(mergeInference(undefined, {})).toEqual({});
  });

  it('merges field by field: agent, then turn, then round', () => {
    const turn = {
      [KERNEL_KEYS.inferenceTurn]: { temperature: 0.5, topP: 0.5 },
      [KERNEL_KEYS.inferenceRound]: { topP: 0.1 },
    };
    expect(mergeInference({ temperature: 0.2, maxTokens: 10 }, turn)).toEqual({
      temperature: 0.5,
      maxTokens: 10,
      topP: 0.1,
    });
  });
});

describe('roundMessages', () => {
  it('orders system prompt, context messages, recalled memory, transcript, then the turn', () => {
    const m = (content: string) => ({ role: 'user' as const, content });
    const out = roundMessages('sys', [{ role: 'system', content: 'ctx' }], [m('recalled')], [m('old')], [m('new')]);
    expect(out.map((x) => x.content)).toEqual(['sys', 'ctx', 'recalled', 'old', 'new']);
  });
});

describe('toolDefinition', () => {
  it('tells the model the name, description and schema, built once per tool', () => {
    const t = tool('x');
    expect(toolDefinition(t)).toEqual({ name: 'x', description: 'x tool', inputSchema: { type: 'object' } });
    expect(toolDefinition(t)).toBe(toolDefinition(t));
  });
});
