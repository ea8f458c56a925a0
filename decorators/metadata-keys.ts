/** Reflect-metadata keys written by the decorators and read by the plugin explorer at install. */
export const METADATA = {
  plugin: Symbol.for('trellis:plugin'),
  tools: Symbol.for('trellis:tools'),
  hooks: Symbol.for('trellis:hooks'),
  requires: Symbol.for('trellis:requires'),
  middleware: Symbol.for('trellis:middleware'),
  transforms: Symbol.for('trellis:transforms'),
  stateKeys: Symbol.for('trellis:state-keys'),
  effects: Symbol.for('trellis:effects'),
  actions: Symbol.for('trellis:actions'),
  selfTests: Symbol.for('trellis:self-tests'),
  secrets: Symbol.for('trellis:secrets'),
} as const;

/** Appends to a list kept on the class itself (never on a parent class's list). */
export function appendMetadata<T>(key: symbol, target: object, item: T, position: 'end' | 'start' = 'end'): void {
  const list: T[] = [...((Reflect.getOwnMetadata(key, target) as T[] | undefined) ?? [])];
  if (position === 'start') list.unshift(item);
  else list.push(item);
  Reflect.defineMetadata(key, list, target);
}

/** Reads a list kept on the class itself. */
export function readList<T>(key: symbol, target: object): readonly T[] {
  return (Reflect.getOwnMetadata(key, target) as T[] | undefined) ?? [];
}
