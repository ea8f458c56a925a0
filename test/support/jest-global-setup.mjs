import { randomUUID } from 'node:crypto';

/**
 * Runs once before jest starts its workers, which inherit the environment: a run id that
 * suites share, e.g. to build dist/ once per run however many suites need it.
 */
export default function setup() {
  process.env.TRELLIS_TEST_RUN ??= randomUUID();
}
