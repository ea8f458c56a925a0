/**
 * Compiles a tool-name glob: `*` is any run of characters (dots included), `?` one
 * character; everything else is literal. Shared by the policy plugins.
 *
 * @example
 * toolGlob('db.*').test('db.search') // true
 */
export function toolGlob(glob: string): RegExp {
  const source = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`);
}

/** What config validation accepts as a glob. */
export const TOOL_GLOB = /^[A-Za-z0-9_.*?-]+$/;
