import type { Context } from 'hono';
import { Hono } from 'hono';
import type { Decision, TurnResult } from '../../../../index.js';
import { buildTimeline } from '../timeline/turn-timeline.js';
import type { DevServerOptions } from './dev-host.js';
import { badRequest, errorResponse } from './error-response.js';
import type { SessionReader } from './session-reader.js';

/** Longest message the chat box may send, in characters. */
const MAX_MESSAGE = 100_000;

/**
 * The JSON API under `/api`: sessions, a session, a turn's events and timeline, plugins;
 * `POST …/messages` runs a turn and `POST …/decisions` resumes one, each answering with
 * the `TurnResult` once the turn ends (progress streams over `/api/events` meanwhile).
 */
export function devApi(options: DevServerOptions, reader: SessionReader): Hono {
  const api = new Hono();
  api.get('/sessions', async (c) => c.json({ sessions: await reader.sessions() }));
  api.get('/sessions/:id', async (c) => c.json(await reader.session(c.req.param('id'))));
  api.get('/sessions/:id/turns/:turn/events', async (c) => {
    const turn = Number(c.req.param('turn'));
    if (!Number.isInteger(turn) || turn < 0)
      return refuse(c, badRequest(`Turn "${c.req.param('turn')}" is not a turn index`, 'Use 0 for the first turn'));
    const stored = await reader.turnEvents(c.req.param('id'), turn);
    return c.json({ ...stored, timeline: buildTimeline(stored.events, reader.middlewareOf()) });
  });
  api.get('/plugins', (c) => c.json(options.app.describe()));
  api.post('/sessions/:id/messages', async (c) => {
    const body = await jsonBody(c);
    const message = (body as { message?: unknown } | undefined)?.message;
    if (typeof message !== 'string' || message.trim() === '')
      return refuse(c, badRequest('The request needs a non-empty "message" string', 'Send { "message": "…" }'));
    if (message.length > MAX_MESSAGE)
      return refuse(
        c,
        badRequest(`The message has ${message.length} characters, more than ${MAX_MESSAGE}`, 'Send a shorter message'),
      );
    return runTurn(c, reader, (session) => session.send(message));
  });
  api.post('/sessions/:id/decisions', async (c) => {
    const body = await jsonBody(c);
    const decisions = (body as { decisions?: unknown } | undefined)?.decisions;
    if (!Array.isArray(decisions))
      return refuse(
        c,
        badRequest(
          'The request needs a "decisions" list',
          'Send { "decisions": [{ "callId": "…", "decision": "approve" | "reject" | "edit", "args"?: {…}, "message"?: "…" }] }',
        ),
      );
    // session.resume checks each decision, and edited arguments against the tool's input, before anything runs.
    return runTurn(c, reader, (session) =>
      session.resume({
        decisions: decisions as Decision[],
        ...(options.approver !== undefined && { approver: options.approver }),
      }),
    );
  });
  return api;

  async function runTurn(
    c: Context,
    reader: SessionReader,
    run: (session: ReturnType<DevServerOptions['agent']['session']>) => Promise<TurnResult>,
  ) {
    const id = c.req.param('id')!;
    reader.busy.add(id);
    try {
      const result = await run(options.agent.session(id, { context: options.context }));
      return c.json({ result });
    } catch (error) {
      return refuse(c, error);
    } finally {
      reader.busy.delete(id);
    }
  }
}

async function jsonBody(c: Context): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    return undefined;
  }
}

function refuse(c: Context, error: unknown) {
  const { status, body } = errorResponse(error);
  return c.json(body, status);
}
