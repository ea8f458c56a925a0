import type { Container } from 'inversify';
import type { PluginDefinition } from './plugin-definition.js';
import type { PluginGrant } from './plugin-host.js';
import type {
  KeyedHandler,
  RegisteredHook,
  RegisteredTool,
  RegisteredTransform,
  StateKeyEntry,
} from '../../contract/plugin-member.js';

/** A plugin bound in the container, with its members ready to call. Immutable: a change builds a new one. */
export interface InstalledPlugin {
  readonly definition: PluginDefinition;
  readonly instance: object;
  readonly container: Container;
  readonly config: object | undefined;
  readonly enabled: boolean;
  /** What the host granted it at install. */
  readonly grants: readonly PluginGrant[];
  /** Install sequence: the tie-breaker for equal priorities. */
  readonly seq: number;
  readonly hooks: readonly RegisteredHook[];
  readonly tools: readonly RegisteredTool[];
  readonly transforms: readonly RegisteredTransform[];
  readonly stateKeys: readonly StateKeyEntry[];
  readonly effects: readonly KeyedHandler[];
  readonly actions: readonly KeyedHandler[];
}
