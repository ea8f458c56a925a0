import type { InstalledPlugin } from '../../../src/engine/plugin/installed-plugin.js';
import { RegistrySnapshot } from '../../../src/engine/plugin/registry-snapshot.js';

/**
 * An install builds the next snapshot from the current one (`new RegistrySnapshot(plugins,
 * base)`): its maps must be exactly what a build from scratch gives — same keys, same order,
 * same values, effect handlers in install order — and the base snapshot, which running turns
 * still read, must not change.
 */
describe('RegistrySnapshot extending a base', () => {
  /** The parts of an installed plugin a snapshot reads; the rest is not needed here. */
  function plugin(
    name: string,
    parts: { keys?: string[]; effects?: string[]; actions?: string[]; tools?: string[] } = {},
  ): InstalledPlugin {
    return {
      definition: { name },
      enabled: true,
      hooks: [],
      transforms: [],
      stateKeys: (parts.keys ?? []).map((key) => ({
        key,
        owner: name,
        scope: 'turn',
        merge: 'commutative',
        persistent: false,
        retainOnUninstall: false,
      })),
      effects: (parts.effects ?? []).map((key) => ({ key, plugin: name })),
      actions: (parts.actions ?? []).map((key) => ({ key, plugin: name })),
      tools: (parts.tools ?? []).map((tool) => ({ name: tool, plugin: name })),
    } as unknown as InstalledPlugin;
  }

  function contents(snapshot: RegistrySnapshot) {
    return {
      byName: [...snapshot.byName],
      stateKeys: [...snapshot.stateKeys],
      effects: [...snapshot.effects].map(([key, list]) => [key, [...list]]),
      actions: [...snapshot.actions],
      tools: [...snapshot.tools],
    };
  }

  const a = plugin('a', {
    keys: ['a.count', 'a.lookup.result'],
    effects: ['shared.changed'],
    actions: ['a.reset'],
    tools: ['a.lookup'],
  });
  const b = plugin('b', { effects: ['shared.changed', 'b.only'] });
  const c = plugin('c', { keys: ['c.flag'], effects: ['shared.changed'], tools: ['c.run'] });
  // Reuses a key and an action name: a build from scratch keeps the first position and the last value.
  const d = plugin('d', { keys: ['a.count'], actions: ['a.reset'] });

  it('gives the maps a build from scratch gives, install after install', () => {
    let current = new RegistrySnapshot([]);
    for (const next of [a, b, c, d]) {
      const extended = new RegistrySnapshot([...current.plugins, next], current);
      expect(contents(extended)).toEqual(contents(new RegistrySnapshot([...current.plugins, next])));
      current = extended;
    }
    expect(current.effectHandlers('shared.changed')!.map((h) => h.plugin)).toEqual(['a', 'b', 'c']);
    expect(current.stateKey('a.count')!.owner).toBe('d');
    expect(current.actionHandler('a.reset')!.plugin).toBe('d');
    expect([...current.stateKeys.keys()].indexOf('a.count')).toBe(
      [...new RegistrySnapshot([a, b, c, d]).stateKeys.keys()].indexOf('a.count'),
    );
  });

  it('leaves the base snapshot as it was', () => {
    const base = new RegistrySnapshot([a, b]);
    const before = contents(base);
    const baseList = base.effectHandlers('shared.changed');
    const extended = new RegistrySnapshot([a, b, c, d], base);
    expect(contents(base)).toEqual(before);
    expect(base.effectHandlers('shared.changed')).toBe(baseList);
    expect(baseList!.map((h) => h.plugin)).toEqual(['a', 'b']);
    expect(extended.effectHandlers('shared.changed')!.map((h) => h.plugin)).toEqual(['a', 'b', 'c']);
    expect(base.tools.has('c.run')).toBe(false);
    expect(base.byName.has('d')).toBe(false);
  });

  it('builds from scratch when the plugins do not extend the base (uninstall, reload)', () => {
    const base = new RegistrySnapshot([a, b, c]);
    const without = new RegistrySnapshot([a, c], base);
    expect(contents(without)).toEqual(contents(new RegistrySnapshot([a, c])));
    expect(without.effectHandlers('b.only')).toBeUndefined();
    const replaced = new RegistrySnapshot([a, d, c], base);
    expect(contents(replaced)).toEqual(contents(new RegistrySnapshot([a, d, c])));
  });
});
