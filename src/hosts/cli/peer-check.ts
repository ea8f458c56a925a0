import { createRequire } from 'node:module';

/** The peer dependencies Trellis and its users' plugins import: one copy each, next to trellis. */
export const PEER_PACKAGES = ['reflect-metadata', 'class-validator'] as const;

/** Which of `names` cannot be resolved from Trellis's own folder. */
export function missingPackages(names: readonly string[], from: string = import.meta.url): string[] {
  const require = createRequire(from);
  return names.filter((name) => {
    try {
      require.resolve(name);
      return false;
    } catch {
      return true;
    }
  });
}

/** The line to print when peers are missing, or `undefined` when all are there. */
export function missingPeersMessage(names: readonly string[] = PEER_PACKAGES): string | undefined {
  const missing = missingPackages(names);
  if (missing.length === 0) return undefined;
  return `trellis: missing peer ${missing.length === 1 ? 'dependency' : 'dependencies'} ${missing.join(', ')}; install ${missing.length === 1 ? 'it' : 'them'} in your project: npm install ${missing.join(' ')}`;
}
