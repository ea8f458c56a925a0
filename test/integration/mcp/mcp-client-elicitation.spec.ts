import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScriptedModel, SqliteStore, Trellis, type Decision } from 'trellis';
import { McpServerClient, type McpElicitationOptions, type McpServerSpec, type ParkedElicitation } from 'trellis/mcp';
import { startHttpTripServer, TRIP_SERVER } from '../../support/mcp-peers.js';

const stdio = { command: process.execPath, args: [TRIP_SERVER] };

/**
 * Two apps on one SQLite store, as two processes would be: `caller` runs the agent whose MCP
 * call the server asks a question during; `decider` is where a human decides (what
 * `trellis resume` does in another process), with the same server connected.
 */
describe("MCP client: a server's question (elicitation) is a Trellis approval, decided where any approval is", () => {
  let dir: string;
  let caller: Trellis;
  let decider: Trellis;
  let parked: ParkedElicitation[];
  let waiters: ((p: ParkedElicitation) => void)[];

  async function boot(elicitation: McpElicitationOptions = {}, spec: McpServerSpec = stdio): Promise<void> {
    caller = Trellis.create({ store: SqliteStore.open(join(dir, 'trellis.db')) });
    await McpServerClient.connect(caller, 'trips', spec, {
      elicitation: {
        agentName: 'desk',
        pollMs: 50,
        onParked: (p) => (parked.push(p), waiters.shift()?.(p)),
        ...elicitation,
      },
    });
    decider = Trellis.create({ store: SqliteStore.open(join(dir, 'trellis.db')) });
    await McpServerClient.connect(decider, 'trips', spec);
  }

  /** The next question the server parks. */
  const nextParked = () => new Promise<ParkedElicitation>((resolve) => waiters.push(resolve));

  /** A human's decision, made in the decider app through the parked session's agent. */
  const decide = (at: ParkedElicitation, decision: Omit<Decision, 'callId'>) =>
    decider
      .agent({ name: 'desk', model: new ScriptedModel(['(the closing line)']), instructions: '' })
      .session(at.sessionId)
      .resume({ decisions: [{ callId: at.callId, ...decision }] });

  /** The caller's agent: it calls `tool` once, then answers with what it got. */
  function callOnce(tool: string, args: Record<string, unknown>, offered?: string[][]) {
    const model = new ScriptedModel((request) => {
      offered?.push(request.tools.map((t) => t.name));
      return request.messages.at(-1)?.role === 'user'
        ? { toolCalls: [{ id: `c_${Math.random().toString(36).slice(2)}`, name: tool, args }] }
        : `done: ${request.messages.at(-1)!.content}`;
    });
    return caller.agent({ name: 'desk', model, instructions: '' }).session(`s-${Math.random().toString(36).slice(2)}`);
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'trellis-elicit-'));
    parked = [];
    waiters = [];
  });
  afterEach(async () => {
    await caller?.stop();
    await decider?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('parks the question in a session of its own; an approval elsewhere answers the waiting server, and the call completes', async () => {
    await boot();
    const offered: string[][] = [];
    const session = callOnce('trips.book', { city: 'Oslo' }, offered);
    const turn = session.send('Book Oslo', { access: { principal: 'alice', owner: null } });
    const question = await nextParked();
    expect(question).toMatchObject({
      server: 'trips',
      message: 'Book Oslo?',
      proposal: { confirm: true },
      allowedDecisions: ['approve', 'edit', 'reject'],
      callerSessionId: session.id,
    });
    expect(question.sessionId.startsWith(`${session.id}:elicitation-`)).toBe(true);
    // What a human sees where approvals are listed: the server's question and its form.
    const waiting = decider
      .agent({ name: 'desk', model: new ScriptedModel([]), instructions: '' })
      .session(question.sessionId);
    const [pending] = await waiting.pending();
    expect(pending).toMatchObject({ tool: 'trips.answer_elicitation', arguments: '{"confirm":true}' });
    expect(pending!.ticket.message).toMatch(
      /^MCP server 'trips' asks: Book Oslo\?\nFields:\n {2}confirm \(boolean, required\) Confirm\nApprove to answer/,
    );
    // The question is the caller's: its owner is the one who made the call.
    expect(waiting.owner).toBe('alice');

    const answered = await decide(question, { decision: 'approve' });
    expect(answered).toMatchObject({ status: 'completed', reply: '{"answer":"accept","content":{"confirm":true}}' });
    const result = await turn;
    expect(result.toolCalls[0]).toMatchObject({ tool: 'trips.book', ok: true, value: 'booked Oslo' });
    expect(result.reply).toBe('done: booked Oslo');
    // The carrier of answers is no model's tool.
    expect(offered.flat()).not.toContain('trips.answer_elicitation');
    expect(offered[0]).toContain('trips.book');
  });

  it("the same over Streamable HTTP (a stateful server: its question comes on the call's stream)", async () => {
    const http = await startHttpTripServer();
    try {
      await boot({}, { url: http.url });
      const turn = callOnce('trips.book', { city: 'Tromsø' }).send('Book Tromsø');
      await decide(await nextParked(), { decision: 'approve' });
      expect((await turn).toolCalls[0]).toMatchObject({ ok: true, value: 'booked Tromsø' });
    } finally {
      await caller.stop();
      await decider.stop();
      await http.stop();
    }
  });

  it('a rejection declines; the server is told and books nothing', async () => {
    await boot();
    const turn = callOnce('trips.book', { city: 'Rome' }).send('Book Rome');
    await decide(await nextParked(), { decision: 'reject', message: 'Not Rome' });
    expect((await turn).toolCalls[0]).toMatchObject({ ok: true, value: 'not booked (decline)' });
  });

  it('a form only an edit can fill: approve is refused, an answer that does not fit is asked again, a fitting one is sent', async () => {
    await boot();
    const turn = callOnce('trips.reserve', { place: 'Maaemo' }).send('Reserve Maaemo');
    const first = await nextParked();
    expect(first).toMatchObject({ proposal: undefined, allowedDecisions: ['edit', 'reject'] });
    await expect(decide(first, { decision: 'approve' })).rejects.toMatchObject({ code: 'InvalidDecision' });
    const again = nextParked();
    await decide(first, { decision: 'edit', args: { guests: 0, name: 'Ada' } });
    const second = await again;
    const [pending] = await decider
      .agent({ name: 'desk', model: new ScriptedModel([]), instructions: '' })
      .session(second.sessionId)
      .pending();
    expect(pending!.ticket.message).toContain('(asked again: guests: must be >= 1)');
    await decide(second, { decision: 'edit', args: { guests: 2, name: 'Ada' } });
    expect((await turn).toolCalls[0]).toMatchObject({ ok: true, value: 'reserved Maaemo for 2 (Ada)' });
  });

  it('a server that gives up withdraws the question: nobody can decide it afterwards', async () => {
    await boot();
    const result = await callOnce('trips.impatient', { ms: 400 }).send('Quick');
    expect(result.toolCalls[0]!.value).toMatch(/^gave up: .*timed out/i);
    const [question] = parked;
    // The server's cancel reaches the client as its call ends: the withdrawal lands right after.
    const waiting = decider
      .agent({ name: 'desk', model: new ScriptedModel([]), instructions: '' })
      .session(question!.sessionId);
    for (let i = 0; i < 100 && (await waiting.pending()).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await waiting.pending()).toEqual([]);
    await expect(decide(question!, { decision: 'approve' })).rejects.toMatchObject({ code: 'InvalidDecision' });
  });

  it('past waitMs the server is answered cancel and the question withdrawn', async () => {
    await boot({ waitMs: 300 });
    const result = await callOnce('trips.book', { city: 'Bergen' }).send('Book Bergen');
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: 'not booked (cancel)' });
    await expect(decide(parked[0]!, { decision: 'approve' })).rejects.toMatchObject({ code: 'InvalidDecision' });
  });

  it('with elicitation: false the client announces no elicitation, and the server cannot ask', async () => {
    caller = Trellis.create();
    await McpServerClient.connect(caller, 'trips', stdio, { elicitation: false });
    const mcp = caller.describe().plugins.find((p) => p.name === 'trips')!;
    expect(mcp.tools.map((t) => t.name)).not.toContain('trips.answer_elicitation');
    const result = await caller
      .agent({
        name: 'a',
        model: new ScriptedModel([{ toolCalls: [{ name: 'trips.book', args: { city: 'Oslo' } }] }, 'ok']),
        instructions: '',
      })
      .session()
      .send('Book');
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolFailed' } });
    await expect(
      McpServerClient.connect(Trellis.create(), 'trips', stdio, { elicitation: { waitMs: -1 } }),
    ).rejects.toMatchObject({ code: 'InvalidOptions' });
  });
});
