import { TrellisError } from '../../errors/trellis-error.js';

/**
 * An optional store capability: small secrets a host keeps beside its sessions, such as the
 * OAuth tokens of the MCP servers it reaches (`mcpTokensIn(store)` in `trellis/mcp`), so a
 * restart or another instance does not ask for them again. Kept by owner (`mcp:<server>`) and
 * name; written as given, so protect the store as you protect what is in it. Never in an
 * event, a log line or an error message: a failure names the owner and the name, not the value.
 * All three built-in stores keep them (MemoryStore in memory only).
 */
export interface CredentialStore {
  /** The value kept under `owner` / `name`, or undefined. */
  loadCredential(owner: string, name: string): Promise<string | undefined>;
  /** Keeps `value` under `owner` / `name`, replacing what was there. */
  saveCredential(owner: string, name: string, value: string): Promise<void>;
  /** Forgets `owner` / `name`; nothing happens when it is not kept. */
  deleteCredential(owner: string, name: string): Promise<void>;
}

/** Whether `store` keeps credentials (every built-in store does). */
export function canKeepCredentials<T extends object>(store: T): store is T & CredentialStore {
  const s = store as Partial<CredentialStore>;
  return (
    typeof s.loadCredential === 'function' &&
    typeof s.saveCredential === 'function' &&
    typeof s.deleteCredential === 'function'
  );
}

/** The longest owner or name taken, and the largest value. */
export const CREDENTIAL_LIMITS = { maxKeyLength: 200, maxValueBytes: 64 * 1024 } as const;

/**
 * Refuses an owner or name that is empty or too long, and a value that is not a string or too
 * large, before a store writes anything.
 *
 * @throws TrellisError `InvalidOptions` naming the owner and name (never the value).
 */
export function assertCredential(owner: unknown, name: unknown, value?: unknown): void {
  for (const [what, key] of [
    ['owner', owner],
    ['name', name],
  ] as const) {
    if (typeof key !== 'string' || key.length === 0 || key.length > CREDENTIAL_LIMITS.maxKeyLength) {
      throw new TrellisError(
        'InvalidOptions',
        `A credential's ${what} must be a string of 1 to ${CREDENTIAL_LIMITS.maxKeyLength} characters`,
        { hint: "Key credentials like ('mcp:<server>', 'tokens')" },
      );
    }
  }
  if (arguments.length < 3) return;
  if (typeof value !== 'string' || Buffer.byteLength(value) > CREDENTIAL_LIMITS.maxValueBytes) {
    throw new TrellisError(
      'InvalidOptions',
      `The credential ${String(owner)}/${String(name)} must be a string of at most ${CREDENTIAL_LIMITS.maxValueBytes} bytes`,
      { hint: 'Keep tokens and keys here, not documents' },
    );
  }
}
