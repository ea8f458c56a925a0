/** The A2A host's error code, added to the closed code union: `A2aUnavailable` (a remote agent's card could not be read; retryable). */
declare module '../../errors/trellis-error.js' {
  interface TrellisErrorCodes {
    A2aUnavailable: true;
  }
}

export {};
