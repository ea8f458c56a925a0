import { ContextLevel } from '../../../src/engine/context/context-level.js';
import { KERNEL_KEYS, STEERING_KEYS } from '../../../src/contract/kernel-keys.js';

/**
 * `ContextLevel.steered` lets the turn loop skip reading the steering keys (tool filters,
 * inference overrides, context messages, a handoff) in a turn that never set one; it must
 * never be false while one is set.
 */
describe("a context level's steered mark", () => {
  it('is false for a level built without a steering key, and for an empty one', () => {
    expect(new ContextLevel().steered).toBe(false);
    expect(new ContextLevel({ [KERNEL_KEYS.turnInput]: 'hi', [KERNEL_KEYS.turnIndex]: 0, 'app.x': 1 }).steered).toBe(
      false,
    );
  });

  it.each(STEERING_KEYS)('is set by a level built with %s, and by an assignment that brings it', (key) => {
    expect(new ContextLevel({ [key]: ['x'] }).steered).toBe(true);
    const level = new ContextLevel({ 'app.x': 1 });
    level.values = { ...level.values, 'app.y': 2 };
    expect(level.steered).toBe(false);
    level.values = { ...level.values, [key]: ['x'] };
    expect(level.steered).toBe(true);
  });

  it('counts a key set to undefined as not set', () => {
    expect(new ContextLevel({ [KERNEL_KEYS.roundIncludeTools]: undefined }).steered).toBe(false);
  });

  it('stays set once set, so clearing a round key never hides a turn key', () => {
    const level = new ContextLevel({ [KERNEL_KEYS.roundExcludeTools]: ['a'], [KERNEL_KEYS.includeTools]: ['b'] });
    level.values = { ...level.values, [KERNEL_KEYS.roundExcludeTools]: undefined };
    expect(level.steered).toBe(true);
    expect(level.values[KERNEL_KEYS.includeTools]).toEqual(['b']);
  });

  it('assignUnsteered replaces the values without changing the mark', () => {
    const level = new ContextLevel({ 'app.x': 1 });
    const next = { ...level.values, 'bench.add.result': 3, [KERNEL_KEYS.lastToolResults]: [] };
    level.assignUnsteered(next);
    expect(level.values).toBe(next);
    expect(level.steered).toBe(false);
  });
});
