import type { KeyedHandler, StateKeyEntry } from './plugin-member.js';

/** What the state engine needs to know of the installed plugins; the registry snapshot provides it. */
export interface StateSchema {
  stateKey(key: string): StateKeyEntry | undefined;
  effectHandlers(effect: string): readonly KeyedHandler[] | undefined;
  actionHandler(action: string): KeyedHandler | undefined;
}
