import 'reflect-metadata';
import { appendMetadata, METADATA } from './metadata-keys.js';

export interface StateKeyOptions {
  /** Which context level holds the value. */
  readonly scope: 'session' | 'turn' | 'execution';
  /** `exclusive`: concurrent writers conflict; `commutative`: updates compose and never conflict. */
  readonly merge: 'exclusive' | 'commutative';
  /** Session keys only: stored with the session and restored in a new process. */
  readonly persistent?: boolean;
  /** Keep the value when the plugin is uninstalled. */
  readonly retainOnUninstall?: boolean;
  /** The value read before anything was written. */
  readonly default?: unknown;
}

export interface StateKeyMetadata extends StateKeyOptions {
  readonly key: string;
}

/** Declares a state key the plugin owns; the key must be `<plugin name>.<field>`. */
export function StateKey(key: string, options: StateKeyOptions): ClassDecorator {
  return (target) => {
    appendMetadata<StateKeyMetadata>(METADATA.stateKeys, target, { key, ...options });
  };
}
