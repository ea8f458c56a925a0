import { HOSTILE_TEXT, NotesPlugin, startDevFixture, type DevFixture } from '../../support/dev-fixture.js';

const json = { 'content-type': 'application/json' };

describe('trellis dev over HTTP', () => {
  let f: DevFixture;
  beforeEach(async () => {
    f = await startDevFixture();
  });
  afterEach(() => f.close());

  const post = (path: string, body: unknown, headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' }) =>
    fetch(`${f.base}${path}`, { method: 'POST', headers: { ...json, ...headers }, body: JSON.stringify(body) });

  it('lists sessions with their status, agent and last activity', async () => {
    await f.agent.session('done').send('hello');
    await f.agent.session('waiting').send('delete 4');

    const { sessions } = (await (await fetch(`${f.base}/api/sessions`)).json()) as {
      sessions: { id: string; status: string; agent: string; updatedAt: string }[];
    };

    expect(sessions.map((s) => [s.id, s.status, s.agent])).toEqual([
      ['waiting', 'suspended', 'notes-agent'],
      ['done', 'completed', 'notes-agent'],
    ]);
    const page = await (await fetch(`${f.base}/`)).text();
    expect(page).toMatch(/<a href="\/sessions\/waiting">waiting<\/a>.*s-suspended/s);
  });

  it("keeps a turn's events in the store and draws its timeline: rounds, model calls with tokens, hooks, tools with middleware, commits", async () => {
    await f.agent.session('s1').send('search cats');
    await f.dev.recorder.flushed();

    const body = (await (await fetch(`${f.base}/api/sessions/s1/turns/0/events`)).json()) as {
      events: { event: { type: string } }[];
      timeline: { rows: { kind: string; label: string; detail: string; duration: number }[]; status: string };
    };

    expect(body.events[0]!.event.type).toBe('turn.started');
    expect(body.events.at(-1)!.event.type).toBe('turn.finished');
    const rows = body.timeline.rows;
    expect(body.timeline.status).toBe('completed');
    expect(rows.filter((r) => r.kind === 'round').map((r) => r.label)).toEqual(['round 1', 'round 2']);
    expect(rows.filter((r) => r.kind === 'model')).toEqual([
      expect.objectContaining({ label: 'scripted:notes', detail: '30 in / 8 out tokens' }),
      expect.objectContaining({ label: 'scripted:notes', detail: '40 in / 12 out tokens' }),
    ]);
    expect(rows).toContainEqual(
      expect.objectContaining({ kind: 'tool', label: 'notes.search', detail: 'ok · middleware: AuditMiddleware' }),
    );
    expect(rows).toContainEqual(expect.objectContaining({ kind: 'hook', label: 'tool.gate · notes' }));
    expect(rows).toContainEqual(
      expect.objectContaining({ kind: 'commit', detail: expect.stringContaining('notes.searches') }),
    );
  });

  it('shows model and tool text escaped, never as markup', async () => {
    await f.agent.session('s1').send('search <b>cats</b>');
    await f.dev.recorder.flushed();

    const page = await (await fetch(`${f.base}/sessions/s1`)).text();

    expect(page).not.toContain('<script>window.__pwned');
    expect(page).not.toContain('<img src=x');
    expect(page).not.toContain('<b>cats</b>');
    expect(page).toContain('&lt;script&gt;window.__pwned = 1&lt;/script&gt;');
    expect(page).toContain('search &lt;b&gt;cats&lt;/b&gt;');
    expect(HOSTILE_TEXT).toContain('<script>');
  });

  it('shows a suspended call with its arguments and message, and runs it once on approval', async () => {
    await f.agent.session('s1').send('delete 7');
    const page = await (await fetch(`${f.base}/sessions/s1`)).text();
    expect(page).toContain('Waiting for approval');
    expect(page).toContain('Deleting note {&quot;id&quot;:7} needs a human &lt;b&gt;yes&lt;/b&gt;');
    const { pending } = (await (await fetch(`${f.base}/api/sessions/s1`)).json()) as { pending: { callId: string }[] };

    const response = await post('/api/sessions/s1/decisions', {
      decisions: [{ callId: pending[0]!.callId, decision: 'approve' }],
    });

    expect(response.status).toBe(200);
    expect(((await response.json()) as { result: { status: string; reply: string } }).result).toMatchObject({
      status: 'completed',
      reply: 'Tool said: deleted note 7',
    });
    expect(NotesPlugin.deleted).toEqual([7]);
  });

  it('refuses edited arguments that fail the tool input, before anything runs, with a message the page can show', async () => {
    await f.agent.session('s1').send('delete 7');
    const { pending } = (await (await fetch(`${f.base}/api/sessions/s1`)).json()) as { pending: { callId: string }[] };

    const response = await post('/api/sessions/s1/decisions', {
      decisions: [{ callId: pending[0]!.callId, decision: 'edit', args: { id: 'seven' } }],
    });

    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('InvalidDecision');
    expect(error.message).toMatch(/id/);
    expect(NotesPlugin.deleted).toEqual([]);
    expect(((await (await fetch(`${f.base}/api/sessions/s1`)).json()) as { status: string }).status).toBe('suspended');
  });

  it('runs a turn from a posted message and refuses a message that is not text', async () => {
    const response = await post('/api/sessions/fresh/messages', { message: 'hello there' });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { result: { reply: string } }).result.reply).toBe('You said: hello there');

    const bad = await post('/api/sessions/fresh/messages', { message: 42 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/non-empty "message"/);
  });

  it("streams a session's events over Server-Sent Events while a turn runs", async () => {
    const controller = new AbortController();
    const response = await fetch(`${f.base}/api/events?session=s1`, { signal: controller.signal });
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    await reader.read(); // the ": connected" comment: the subscription is in place

    const turn = f.agent.session('s1').send('search dogs');
    while (!text.includes('"turn.finished"')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    await turn;
    controller.abort();

    const types = [...text.matchAll(/^data: (.*)$/gm)].map((m) => (JSON.parse(m[1]!) as { type: string }).type);
    expect(types[0]).toBe('turn.started');
    expect(types).toEqual(
      expect.arrayContaining(['round.started', 'tool.started', 'tool.finished', 'model.delta', 'turn.finished']),
    );
  });

  it('lists plugins as `trellis plugins` does: tools with schemas and middleware, hooks, context keys', async () => {
    const catalog = (await (await fetch(`${f.base}/api/plugins`)).json()) as {
      plugins: { name: string; tools: { name: string; middleware: string[] }[]; hooks: { point: string }[] }[];
    };
    expect(catalog.plugins[0]).toMatchObject({ name: 'notes', hooks: [{ point: 'tool.gate' }] });
    expect(catalog.plugins[0]!.tools.map((t) => [t.name, t.middleware])).toEqual([
      ['notes.search', ['AuditMiddleware']],
      ['notes.delete', ['AuditMiddleware']],
    ]);
    const page = await (await fetch(`${f.base}/plugins`)).text();
    expect(page).toContain('{ id: integer }');
    expect(page).toContain('tool.gate');
  });
});

describe('trellis dev refusals', () => {
  let f: DevFixture;
  afterEach(() => f.close());

  it('refuses a state-changing request from another origin, or with no origin at all', async () => {
    f = await startDevFixture();
    const send = (headers: Record<string, string>) =>
      fetch(`${f.base}/api/sessions/x/messages`, {
        method: 'POST',
        headers: { ...json, ...headers },
        body: JSON.stringify({ message: 'hi' }),
      });

    const crossSite = await send({ 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' });
    const foreignOrigin = await send({ origin: 'https://evil.example' });
    const bare = await send({});

    for (const response of [crossSite, foreignOrigin, bare]) {
      expect(response.status).toBe(403);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('CrossOrigin');
    }
    expect((await send({ origin: f.base })).status).toBe(200);
    expect(await f.store.list()).toHaveLength(1);
  });

  it('refuses a Host that is not loopback (DNS rebinding)', async () => {
    f = await startDevFixture();
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${f.base}/api/sessions`, { headers: { host: 'attacker.example:80' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });

  it('with a token: refuses requests without it, accepts the header, and turns ?token= into a cookie', async () => {
    const token = 'a-long-enough-secret-123';
    f = await startDevFixture({ token });

    expect((await fetch(`${f.base}/api/sessions`)).status).toBe(401);
    expect(
      (await fetch(`${f.base}/api/sessions`, { headers: { 'x-trellis-token': 'wrong-token-wrong-token' } })).status,
    ).toBe(401);
    expect((await fetch(`${f.base}/api/sessions`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);

    const link = await fetch(f.dev.url, { redirect: 'manual' });
    expect(link.status).toBe(303);
    expect(link.headers.get('location')).toBe('/');
    const cookie = link.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect((await fetch(`${f.base}/`, { headers: { cookie: cookie.split(';')[0]! } })).status).toBe(200);

    // The cookie alone does not let another site post: that needs the header token or the same origin.
    const viaCookie = await fetch(`${f.base}/api/sessions/x/messages`, {
      method: 'POST',
      headers: { ...json, cookie: cookie.split(';')[0]!, origin: 'https://evil.example' },
      body: '{"message":"hi"}',
    });
    expect(viaCookie.status).toBe(403);
    const viaHeader = await fetch(`${f.base}/api/sessions/x/messages`, {
      method: 'POST',
      headers: { ...json, 'x-trellis-token': token },
      body: '{"message":"hi"}',
    });
    expect(viaHeader.status).toBe(200);
  });
});
