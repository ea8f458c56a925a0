import { NotesPlugin, startDevFixture, type DevFixture } from '../../support/dev-fixture.js';

const TOKEN = 'a-dev-token-of-16+chars';
const headers = { 'content-type': 'application/json', 'x-trellis-token': TOKEN };

describe('trellis dev decides as the identity its token stands for', () => {
  let f: DevFixture;
  afterEach(() => f.close());

  async function decide(session: string) {
    await f.agent.session(session).send('delete 3');
    const { pending } = (await (await fetch(`${f.base}/api/sessions/${session}`, { headers })).json()) as {
      pending: { callId: string }[];
    };
    return fetch(`${f.base}/api/sessions/${session}/decisions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ decisions: [{ callId: pending[0]!.callId, decision: 'approve' }] }),
    });
  }

  it('records the approver in the audit log and lets the policy allow it', async () => {
    f = await startDevFixture({
      token: TOKEN,
      approver: { id: 'dev:carol', roles: ['notes-admin'] },
      approvals: { policies: [{ tools: ['notes.delete'], roles: ['notes-admin'] }] },
    });
    const response = await decide('s1');
    expect(response.status).toBe(200);
    expect(NotesPlugin.deleted).toEqual([3]);
    expect((await f.store.readAudit()).map((r) => [r.entry.outcome, r.entry.approver?.id])).toEqual([
      ['approved', 'dev:carol'],
    ]);
  });

  it('refuses the decision, with the policy named, when the identity lacks the role; nothing runs', async () => {
    f = await startDevFixture({
      token: TOKEN,
      approver: { id: 'dev:dan' },
      approvals: { policies: [{ name: 'deletes', tools: ['notes.delete'], roles: ['notes-admin'] }] },
    });
    const response = await decide('s2');
    expect(response.status).toBe(403);
    expect(JSON.stringify(await response.json())).toContain("policy 'deletes' allows roles notes-admin");
    expect(NotesPlugin.deleted).toEqual([]);
  });
});
