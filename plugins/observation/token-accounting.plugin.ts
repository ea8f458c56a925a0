import {
  inject,
  optional,
  Hook,
  Plugin,
  Requires,
  StateKey,
  type EraseRequest,
  type HookContext,
  type ModelResponse,
  type PluginLifecycle,
  PLUGIN_CONFIG,
  TrellisError,
} from 'trellis/plugin';
import { TokenAccountingConfig } from './token-accounting.config.js';
import { addUsage, EMPTY_TOTALS, type TokenTotals } from './token-usage.js';
import { InMemoryTokenUsageStore, TOKEN_USAGE_STORE, type TokenUsageStore } from './token-usage-store.js';

/** The session-level, persistent state key holding a session's {@link TokenTotals}. */
export const SESSION_TOKENS_KEY = 'tokens.session';

/**
 * Token accounting per session and per user. An `llm.after` hook (priority 10000, after
 * every other) adds each model call's usage to the session's totals, kept in the
 * persistent session key `tokens.session` (checkpointed with the session, restored in
 * another process), and, when the session or turn context has `app.user_id`, to that
 * user's totals in the {@link TOKEN_USAGE_STORE} (in memory unless the host binds one).
 *
 * A turn that fails or is cancelled rolls the session state back (the kernel keeps no
 * half-written state), so its tokens leave the session totals; the per-user store keeps
 * them, being outside the session.
 *
 * @example
 * const tokens = (await app.install(TokenAccountingPlugin)).instance as TokenAccountingPlugin;
 * tokens.sessionUsage(session).totalTokens; await tokens.userUsage('u1');
 */
@Plugin({
  name: 'tokens',
  version: '1.0.0',
  description: 'Token usage per session and per user',
  config: TokenAccountingConfig,
})
@StateKey(SESSION_TOKENS_KEY, { scope: 'session', merge: 'commutative', persistent: true })
export class TokenAccountingPlugin implements PluginLifecycle {
  private readonly store: TokenUsageStore;

  constructor(
    @inject(PLUGIN_CONFIG) private readonly config: TokenAccountingConfig,
    @inject(TOKEN_USAGE_STORE) @optional() store?: TokenUsageStore,
  ) {
    this.store = store ?? new InMemoryTokenUsageStore();
  }

  @Hook('llm.after', { priority: 10_000 })
  @Requires({ key: 'app.user_id', optional: true })
  async count(response: ModelResponse, ctx: HookContext): Promise<void> {
    const { model, usage } = response;
    ctx.update<TokenTotals>(SESSION_TOKENS_KEY, (previous) => addUsage(previous, model, usage, this.config.byModel));
    const userId = ctx.deps['app.user_id'];
    if (this.config.perUser && userId !== undefined && userId !== null)
      await this.store.add(String(userId), model, usage);
  }

  /** A session's totals so far (zero before its first model call). */
  sessionUsage(session: { readonly values: Readonly<Record<string, unknown>> }): TokenTotals {
    return (session.values[SESSION_TOKENS_KEY] as TokenTotals | undefined) ?? EMPTY_TOTALS;
  }

  /**
   * Erasing a user (`app.erase({ userId })`) forgets their totals; erasing a tenant forgets the
   * totals of the users whose sessions went. Erasing one session, or old ones, keeps the user's
   * totals: they are the user's sum over every session, not the session's data (which goes with
   * the session's `tokens.session` state).
   */
  async onErase(request: EraseRequest): Promise<void> {
    const users =
      request.selector.userId !== undefined
        ? [request.selector.userId]
        : request.selector.tenant !== undefined
          ? request.userIds
          : [];
    if (users.length === 0) return;
    if (typeof this.store.delete !== 'function') {
      throw new TrellisError(
        'InvalidConfig',
        `The token usage store bound under TOKEN_USAGE_STORE cannot delete a user's totals, so erasing ${users.length === 1 ? 'this user' : 'these users'} would keep them`,
        {
          hint: 'Give the store a delete(userId) method; the erasure deleted nothing and can be run again',
        },
      );
    }
    for (const user of users) await this.store.delete(user);
  }

  /** A user's totals over all their sessions (zero for an unknown user). */
  async userUsage(userId: string): Promise<TokenTotals> {
    return (await this.store.get(userId)) ?? EMPTY_TOTALS;
  }
}
