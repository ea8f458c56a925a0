/** Token of the Trellis app in Nest, registered only when `exposeApp: true` (see `@InjectTrellis`). */
export const TRELLIS_APP_TOKEN = Symbol.for('trellis.nestjs.app');

/** Token of the plugins one `TrellisModule.forFeature([...])` call declares. */
export const TRELLIS_FEATURE_TOKEN = Symbol.for('trellis.nestjs.feature');

/** The Nest injection token of the agent named `name` (`@InjectAgent(name)` uses it). */
export function getAgentToken(name: string): string {
  return `trellis.nestjs.agent:${name}`;
}
