/**
 * What a running turn has spent so far, by plugin, filled in as it runs: the wall time of each
 * plugin's hooks (timed by the hook engine) and transforms (by the turn runner), of its tool
 * calls (as each finishes), and the tokens and wall time of the model calls attributed to it
 * (a round's to the plugins whose tools ran in the round before). One per turn, carried on its
 * hook site and passed on by a handoff; a resumed turn starts from what its suspension record
 * kept. Per-turn budgets read it before each tool call; `usage.byPlugin` takes its hook time.
 */
export class TurnSpend {
  /** Hook and transform time by plugin, in milliseconds. */
  readonly hookMs: Record<string, number> = {};
  /** Tool-call time by plugin (each call's duration), in milliseconds. */
  readonly toolMs: Record<string, number> = {};
  /** Model tokens attributed by plugin. */
  readonly tokens: Record<string, number> = {};
  /** Model-call time attributed by plugin, in milliseconds. */
  readonly modelMs: Record<string, number> = {};

  addHook(plugin: string, ms: number): void {
    this.hookMs[plugin] = (this.hookMs[plugin] ?? 0) + ms;
  }

  addTool(plugin: string, ms: number): void {
    this.toolMs[plugin] = (this.toolMs[plugin] ?? 0) + ms;
  }

  /** One model call's tokens and time, shared evenly by the plugins (one entry per call of theirs) that caused it. */
  addModel(causes: readonly string[], tokens: number, ms: number): void {
    if (causes.length === 0) return;
    const share = 1 / causes.length;
    for (const plugin of causes) {
      this.tokens[plugin] = (this.tokens[plugin] ?? 0) + tokens * share;
      this.modelMs[plugin] = (this.modelMs[plugin] ?? 0) + ms * share;
    }
  }

  /** All of a plugin's time in the turn: its tools, its hooks and transforms, the model calls attributed to it. */
  wallMs(plugin: string): number {
    return (this.toolMs[plugin] ?? 0) + (this.hookMs[plugin] ?? 0) + (this.modelMs[plugin] ?? 0);
  }

  /** The plugins that spent anything so far. */
  plugins(): string[] {
    return [...new Set([...Object.keys(this.hookMs), ...Object.keys(this.toolMs), ...Object.keys(this.tokens)])];
  }

  /**
   * Starts from what a suspended turn had spent: hook time as its record kept it, the rest as
   * its split (`usage.byPlugin`) attributes it.
   */
  restore(
    hookMs: Readonly<Record<string, number>> | undefined,
    byPlugin: Readonly<
      Record<string, { readonly toolMs: number; readonly totalTokens: number; readonly modelMs: number }>
    >,
  ): void {
    for (const [plugin, ms] of Object.entries(hookMs ?? {})) if (Number.isFinite(ms)) this.addHook(plugin, ms);
    for (const [plugin, u] of Object.entries(byPlugin)) {
      if (u.toolMs > 0) this.addTool(plugin, u.toolMs);
      if (u.totalTokens > 0) this.tokens[plugin] = (this.tokens[plugin] ?? 0) + u.totalTokens;
      if (u.modelMs > 0) this.modelMs[plugin] = (this.modelMs[plugin] ?? 0) + u.modelMs;
    }
  }
}
