import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The SDK-built test server (test/fixtures/mcp/trip-server.mjs). */
export const TRIP_SERVER = fileURLToPath(new URL('../fixtures/mcp/trip-server.mjs', import.meta.url));

/** Whether a process with this id still runs. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls until `check` holds or `ms` passed. */
export async function waitFor(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The trip server over Streamable HTTP on `port` (0: any); resolves once it listens. */
export async function startHttpTripServer(
  port = 0,
): Promise<{ child: ChildProcess; port: number; url: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [TRIP_SERVER, '--http', String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const bound = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`trip server exited with ${code}`)));
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  return { child, port: bound, url: `http://127.0.0.1:${bound}/mcp`, stop };
}
