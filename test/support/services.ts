import { existsSync } from 'node:fs';
import { connect } from 'node:net';

/**
 * Real servers and browsers that some tests need. Where one is missing a test skips with
 * one printed line, so `npm test` passes on any machine; with `TRELLIS_REQUIRE_SERVICES=1`
 * (set by `.ci/run`) a missing one fails the suite instead.
 */
export type ServiceName = 'postgres' | 'redis' | 'chromium';

export const POSTGRES_URL = process.env.TRELLIS_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TRELLIS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const CHROMIUM_PATH = process.env.TRELLIS_TEST_CHROMIUM ?? '/usr/bin/chromium';

const required = () => process.env.TRELLIS_REQUIRE_SERVICES === '1';

function tcpOpen(url: string, defaultPort: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname || '127.0.0.1', port: Number(port || defaultPort) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

const probes: Record<ServiceName, () => Promise<boolean>> = {
  postgres: () => tcpOpen(POSTGRES_URL, 5432),
  redis: () => tcpOpen(REDIS_URL, 6379),
  chromium: async () => existsSync(CHROMIUM_PATH),
};

/**
 * Whether `name` is there. Prints one line when it is not; throws when the environment
 * requires every service (CI), so the skip becomes a failure.
 *
 * @example
 * const pg = await haveService('postgres', 'PostgresStore conformance');
 * (pg ? describe : describe.skip)('PostgresStore', () => { ... });
 */
export async function haveService(name: ServiceName, what: string): Promise<boolean> {
  if (await probes[name]()) return true;
  const where = name === 'chromium' ? CHROMIUM_PATH : name === 'postgres' ? POSTGRES_URL : REDIS_URL;
  if (required())
    throw new Error(
      `${what} needs ${name} (${where}), which is not reachable, and TRELLIS_REQUIRE_SERVICES=1 forbids skipping`,
    );
  // One line, on purpose: the skip must be visible but not noisy.
  process.stdout.write(`skipped: ${what} (no ${name} at ${where})\n`);
  return false;
}
