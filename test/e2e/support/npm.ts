import { execFile } from 'node:child_process';

/** What an npm command printed, and how it ended. */
export interface NpmRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * npm as a user runs it: the same npm that started the tests (`npm_execpath`) when there is
 * one, else `npm` from the PATH. The outer `npm test`'s own variables (its package, its
 * lifecycle event) are left out, so they never leak into the project npm works on.
 */
export function npm(
  args: readonly string[],
  cwd: string,
  timeoutMs: number,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<NpmRun> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^npm_|^INIT_CWD$|^(OPENAI|ANTHROPIC)_|^TRELLIS_MODEL$/i.test(key) || key === 'npm_config_cache')
      env[key] = value;
  }
  Object.assign(
    env,
    { npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' },
    extraEnv,
  );
  const cli = process.env.npm_execpath;
  const [file, argv] = cli && /\.c?js$/.test(cli) ? [process.execPath, [cli, ...args]] : ['npm', [...args]];
  return new Promise((resolve) => {
    execFile(file, argv, { cwd, env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr: error && code === 1 && !stderr ? String(error.message) : stderr });
    });
  });
}

/** Whether npm can run here at all: the one thing that lets the install test skip. */
export async function npmAvailable(): Promise<boolean> {
  return (await npm(['--version'], process.cwd(), 30_000)).code === 0;
}
