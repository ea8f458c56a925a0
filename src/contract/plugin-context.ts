/**
 * What a plugin member (hook, tool, transform, action or effect handler) sees of the
 * context pool. Access is cropped: it reads its plugin's own keys, the keys it declared
 * with `@Requires`, and `trellis.*`; it writes only its plugin's own keys. Writes are
 * collected into one state command that the engine commits when the member returns.
 */
export interface PluginContext {
  /** The plugin this member belongs to. */
  readonly plugin: string;
  readonly sessionId: string;
  /** Reads a key, nearest level first (execution, turn, session). */
  get<T = unknown>(key: string): T | undefined;
  /** Writes one of the plugin's own declared state keys, at the key's scope. */
  set(key: string, value: unknown): void;
  /** Writes through a function of the committed value; the safe way to change commutative keys. */
  update<T = unknown>(key: string, fn: (previous: T | undefined) => T): void;
  /** Emits an effect, dispatched to `@OnEffect` handlers after the commit. */
  emit(effect: string, payload?: unknown): void;
  /** Schedules an action (e.g. `AddContextMessage`), run in this point's EXECUTE phase. */
  schedule(action: string, payload?: unknown): void;
}

/** What a tool method gets as its second argument. */
export interface ToolContext extends PluginContext {
  readonly callId: string;
  readonly tool: string;
  readonly turnIndex: number;
  /** Aborted when the turn is cancelled or the call times out. */
  readonly signal: AbortSignal;
  /** The values of the tool's `@Requires` keys, resolved before the call. */
  readonly deps: Readonly<Record<string, unknown>>;
  /** Copies an execution-level value to the turn, so it outlives the call. */
  promote(key: string): void;
  /**
   * Stable for this step of this turn of this session, across retries, resumes, crashes and
   * processes: `<session>:<turn>:<round>:<position>` (the round that asked for the call and
   * the call's place in that round's response — never the model's call id, which changes
   * when a model is asked again). A tool with side effects passes it to the system it
   * changes (a unique constraint, an HTTP `Idempotency-Key` header) so that a call run
   * twice (after a crash, on `retry`) takes effect once.
   */
  readonly idempotencyKey: string;
}

/** What a hook handler gets as its second argument. */
export interface HookContext extends PluginContext {
  readonly point: string;
  /** The values of the hook's `@Requires` keys. */
  readonly deps: Readonly<Record<string, unknown>>;
  /** The turn's cancellation signal, where the point runs inside a turn. */
  readonly signal?: AbortSignal;
}
