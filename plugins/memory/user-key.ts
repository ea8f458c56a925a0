import type { PluginContext } from 'trellis/plugin';

/** The host's context key naming the user whose memory a session reads and writes. */
export const MEMORY_USER_KEY = 'app.user_id';

/** The session's user, from the host's `app.user_id`; `undefined` for an anonymous session. */
export function memoryUser(ctx: PluginContext): string | undefined {
  const user = ctx.get<unknown>(MEMORY_USER_KEY);
  return typeof user === 'string' && user !== '' ? user : undefined;
}
