import { readFileSync } from 'node:fs';

/**
 * Nanoseconds the calling thread has so far waited, runnable, for a CPU (Linux
 * `/proc/thread-self/schedstat`, second field): time other processes on the machine took
 * from it. Undefined where the file does not exist. A read costs ~17 µs: read it around a
 * block of turns, not around a turn.
 */
export function runQueueWaitNs(): number | undefined {
  try {
    const fields = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
    const wait = Number(fields[1]);
    return Number.isFinite(wait) ? wait : undefined;
  } catch {
    return undefined;
  }
}
