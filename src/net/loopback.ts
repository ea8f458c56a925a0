/**
 * Loopback checks shared by the local servers (`trellis dev`, `trellis mcp --http`): pure
 * functions over host names, no state.
 */
const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Whether `host` (a bind address or a Host header's name) is this machine only. */
export function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || /^127(\.\d{1,3}){3}$/.test(host);
}

/** The name part of a Host header (`localhost:3000` → `localhost`, `[::1]:80` → `[::1]`). */
export function hostName(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  return host.split(':')[0] ?? '';
}
