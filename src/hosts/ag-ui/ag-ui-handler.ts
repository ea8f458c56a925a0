import { EventEncoder } from '@ag-ui/encoder';
import type { BaseEvent } from '@ag-ui/core';
import { TrellisError, type Agent, type SessionAccess } from '../../../index.js';
import { boundedText } from '../ui-turns/bounded-body.js';
import { httpStatusOf, turnGuard, type TurnAccessOptions } from '../ui-turns/turn-access.js';
import { runWatched, streamable, type TurnSession } from '../ui-turns/turn-session.js';
import { AgUiEventWriter } from './ag-ui-event-writer.js';
import { readRunInput, type AgUiRun } from './run-input.js';

/** Options of {@link agUiEvents}. */
export interface AgUiRunOptions {
  readonly signal?: AbortSignal;
  /** Turn-level host context (`app.*` keys) for this run. */
  readonly context?: Readonly<Record<string, unknown>>;
  /** The caller and the owner their access was checked against: the kernel checks it again under the session's lease. */
  readonly access?: SessionAccess;
}

/** Runs the run's turn on the session and yields its AG-UI events, from `RUN_STARTED` to `RUN_FINISHED` or `RUN_ERROR`. */
export async function* agUiEvents(
  session: TurnSession,
  run: AgUiRun,
  options: AgUiRunOptions = {},
): AsyncGenerator<BaseEvent> {
  const queue: BaseEvent[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  const writer = new AgUiEventWriter(session.id, run.threadId, run.runId, (event) => {
    queue.push(event);
    wake?.();
  });
  writer.start();
  const done = runWatched(
    session,
    run.action,
    {
      event: (event) => writer.event(event),
      result: (result) => writer.result(result),
      error: (error) =>
        writer.failure(
          TrellisError.is(error) ? error.code : 'Internal',
          TrellisError.is(error) ? error.message : 'Internal error',
        ),
    },
    options,
  ).finally(() => {
    ended = true;
    wake?.();
  });
  for (;;) {
    while (queue.length > 0) yield queue.shift()!;
    if (ended) break;
    await new Promise<void>((resolve) => (wake = resolve));
    wake = undefined;
  }
  await done;
}

/**
 * Options of {@link createAgUiHandler}. Without `principal`, any caller who knows a thread id
 * reaches its session: give it (who the caller is), and each thread's session is owned by the
 * caller who opened it, checked by `policy` on every run.
 */
export interface AgUiHandlerOptions extends TurnAccessOptions<Request> {
  /** The agent whose sessions the threads are (the thread id is the session id)... */
  readonly agent?: Agent;
  /** ...or the session of a thread (a Nest `HostedSession`, an id scoped to the user). */
  readonly session?: (threadId: string, request: Request) => TurnSession | Promise<TurnSession>;
  readonly context?: (
    request: Request,
  ) => Readonly<Record<string, unknown>> | undefined | Promise<Readonly<Record<string, unknown>> | undefined>;
  /** The largest request body taken. Default 1 MiB. */
  readonly maxBodyBytes?: number;
}

/**
 * A fetch-style handler for AG-UI clients (`HttpAgent` of `@ag-ui/client`, CopilotKit):
 * `POST` a `RunAgentInput`, get the run's events as Server-Sent Events (`@ag-ui/encoder`). A
 * suspended turn finishes the run with the `interrupt` outcome; the next run's `resume`
 * entries carry the decisions. A bad input is a 400 `{ code, message }`.
 *
 * @example
 * const agUi = createAgUiHandler({ agent });
 * new Hono().post('/ag-ui', (c) => agUi(c.req.raw));
 */
export function createAgUiHandler(options: AgUiHandlerOptions): (request: Request) => Promise<Response> {
  if (!options.agent && !options.session)
    throw new TrellisError('InvalidOptions', 'createAgUiHandler needs an agent or a session resolver', {
      hint: 'Pass { agent } or { session: (threadId, request) => … }',
    });
  const guard = turnGuard(options, 'The AG-UI endpoint');
  return async (request) => {
    if (request.method !== 'POST')
      return Response.json(
        { statusCode: 405, code: 'MethodNotAllowed', message: 'POST a RunAgentInput' },
        { status: 405 },
      );
    let run: AgUiRun;
    try {
      const text = await boundedText(
        request,
        options.maxBodyBytes ?? 1024 * 1024,
        'Trellis keeps the thread: send the last user message only',
      );
      run = readRunInput(JSON.parse(text));
    } catch (error) {
      const message = TrellisError.is(error) ? error.message : 'The body is not JSON: POST a RunAgentInput';
      return Response.json({ statusCode: 400, code: 'InvalidOptions', message }, { status: 400 });
    }
    const session = options.session
      ? await options.session(run.threadId, request)
      : streamable(options.agent!.session(run.threadId));
    const context = await options.context?.(request);
    let access: SessionAccess | undefined;
    try {
      access = await guard(session, run.action.kind === 'send' ? 'send' : 'decide', request, context);
    } catch (error) {
      const status = httpStatusOf(error);
      const known = status !== 500 && TrellisError.is(error);
      return Response.json(
        {
          statusCode: status,
          code: known ? error.code : 'Internal',
          message: known ? error.message : 'Internal error',
        },
        { status },
      );
    }
    const encoder = new EventEncoder({ accept: request.headers.get('accept') ?? undefined });
    const events = agUiEvents(session, run, { context, access });
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await events.next();
        if (next.done) return controller.close();
        const encoded = encoder.encode(next.value);
        controller.enqueue(typeof encoded === 'string' ? new TextEncoder().encode(encoded) : encoded);
      },
      async cancel() {
        await events.return(undefined);
      },
    });
    return new Response(body, { headers: { 'content-type': encoder.getContentType(), 'cache-control': 'no-cache' } });
  };
}
