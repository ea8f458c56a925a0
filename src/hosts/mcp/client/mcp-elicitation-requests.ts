import {
  CancelledNotificationSchema,
  ElicitRequestSchema,
  type Client,
  type ElicitRequest,
  type ElicitResult,
} from '../sdk.js';

/** A server's question to a human, as the MCP client hands it to `onElicitation`. */
export interface McpElicitation {
  readonly server: string;
  readonly message: string;
  /** The form's JSON Schema (flat: strings, numbers, booleans, enums); absent for a URL elicitation. */
  readonly requestedSchema?: Readonly<Record<string, unknown>>;
  /** Aborted when the server gives up on the question. */
  readonly signal: AbortSignal;
  /** Sends the server a progress notification for the question (resetting its timeout, if it asked for that); undefined when it gave no progress token. */
  readonly progress?: (note: string) => Promise<void>;
}

/** What the human said: `accept` with the form's content, `decline`, or `cancel`. */
export interface McpElicitationAnswer {
  readonly action: 'accept' | 'decline' | 'cancel';
  readonly content?: Readonly<Record<string, string | number | boolean | readonly string[]>>;
}

/**
 * Hands every elicitation request of the server to `onElicitation` and sends back its answer.
 * The SDK's own cancel handler skips a request id of 0 (falsy), which is the first question a
 * server asks: questions are cancelled here, by their id, whatever it is.
 */
export function answerElicitations(
  client: Client,
  server: string,
  onElicitation: (request: McpElicitation) => Promise<McpElicitationAnswer> | McpElicitationAnswer,
): void {
  const asked = new Map<string | number, AbortController>();
  client.setNotificationHandler(CancelledNotificationSchema, (notification) => {
    const id = notification.params.requestId;
    if (id !== undefined) asked.get(id)?.abort(notification.params.reason);
  });
  const answer = async (
    request: ElicitRequest,
    extra: { sendNotification(n: never): Promise<void> },
    signal: AbortSignal,
  ): Promise<ElicitResult> => {
    const params = request.params as {
      message: string;
      requestedSchema?: Record<string, unknown>;
      _meta?: { progressToken?: string | number };
    };
    const token = params._meta?.progressToken;
    let step = 0;
    const progress =
      token === undefined
        ? undefined
        : (note: string) =>
            extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: ++step, message: note },
            } as never);
    const answered = await onElicitation({
      server,
      message: String(params.message ?? ''),
      requestedSchema: params.requestedSchema,
      signal,
      ...(progress && { progress }),
    });
    return answered.action === 'accept'
      ? { action: 'accept', content: { ...(answered.content ?? {}) } as ElicitResult['content'] }
      : { action: answered.action };
  };
  client.setRequestHandler(ElicitRequestSchema, async (request, extra): Promise<ElicitResult> => {
    const cancelled = new AbortController();
    const follow = () => cancelled.abort(extra.signal.reason);
    if (extra.signal.aborted) follow();
    else extra.signal.addEventListener('abort', follow, { once: true });
    asked.set(extra.requestId, cancelled);
    try {
      return await answer(request, extra, cancelled.signal);
    } finally {
      asked.delete(extra.requestId);
      extra.signal.removeEventListener('abort', follow);
    }
  });
}
