/** The signal of a turn sent without one. It never aborts, so nothing needs to listen to it. */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal;
