import type { TrellisEvent } from '../../../index.js';

/**
 * What a queued turn's event carries besides the kernel's event: the run it belongs to and
 * its place in the run, and the id of its entry in the session's Redis Stream.
 */
export interface QueuedEventMeta {
  /** The job id of the turn that emitted it (`send.<session>.<key>`): one run, whichever attempt. */
  readonly run: string;
  /** 1, 2, 3 … within one attempt of the run: a retried job (its worker died) counts again from 1. */
  readonly seq: number;
  /**
   * The entry id in the session's stream (`<ms>-<n>`), increasing across runs: pass the last
   * one seen as `after` (or an SSE client's `Last-Event-ID`) to get what came after it.
   */
  readonly id: string;
}

/** A session event as {@link TurnQueue.events$} delivers it. */
export type QueuedEvent = TrellisEvent & QueuedEventMeta;

/** Whether stream id `a` comes after `b` (`<ms>-<n>`, compared as numbers). */
export function streamIdAfter(a: string, b: string): boolean {
  const [am, an] = splitId(a);
  const [bm, bn] = splitId(b);
  return am > bm || (am === bm && an > bn);
}

/** A stream id as given by a caller: `<ms>-<n>` or `<ms>`; anything else is not one. */
export function isStreamId(text: unknown): text is string {
  return typeof text === 'string' && /^\d{1,20}(-\d{1,20})?$/.test(text);
}

function splitId(id: string): [bigint, bigint] {
  const [ms, n] = id.split('-');
  return [BigInt(ms ?? 0), BigInt(n ?? 0)];
}
