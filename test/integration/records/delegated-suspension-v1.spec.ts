import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { IsString } from 'class-validator';
import {
  Hook,
  Plugin,
  Tool,
  Trellis,
  suspend,
  type ModelRequest,
  type ScriptedReply,
  type ToolCallInfo,
} from 'trellis';
import type { StoredSession } from 'trellis/stores';
import { MemoryStore, ScriptedModel } from 'trellis/testing';

// What wrote test/fixtures/records/delegated-suspended-v1.json: top → mid → leaf, the leaf's
// one ledger call parked. Three stored sessions: the top one and two child sessions.
class LineInput {
  @IsString() line!: string;
}

@Plugin({ name: 'ledger', version: '1.0.0' })
class LedgerPlugin {
  lines: string[] = [];
  @Tool({ name: 'ledger.append', description: 'Appends a line.', input: LineInput })
  append(input: LineInput) {
    this.lines.push(input.line);
    return `appended ${input.line}`;
  }
  @Hook('tool.gate')
  approval(call: ToolCallInfo) {
    return call.tool === 'ledger.append'
      ? suspend({ message: 'Append?', allowedDecisions: ['approve', 'reject'] })
      : undefined;
  }
}

const fixture = JSON.parse(
  readFileSync(new URL('../../fixtures/records/delegated-suspended-v1.json', import.meta.url), 'utf8'),
) as { sessions: StoredSession[] };
const tools = (r: ModelRequest) => r.messages.filter((m) => m.role === 'tool');

async function appFromFixture() {
  const store = new MemoryStore();
  for (const session of fixture.sessions) {
    await store.checkpoint({
      sessionId: session.id,
      agent: session.agent,
      expectedRevision: 0,
      state: session.state,
      append: session.transcript,
      turn: session.turns[0]!,
      suspension: session.suspension,
    });
  }
  const app = Trellis.create({ store });
  const ledger = (await app.install(LedgerPlugin)).instance;
  const relay = (done: string) => new ScriptedModel((r): ScriptedReply => `${done}: ${tools(r).at(-1)?.content}`);
  app.agent({ name: 'leaf', model: relay('leaf'), instructions: 'Keep the ledger.', plugins: ['ledger'] });
  app.agent({
    name: 'mid',
    model: relay('mid'),
    instructions: 'Relay.',
    plugins: [],
    agents: [{ agent: 'leaf', name: 'ask_leaf', description: 'Ask leaf.' }],
  });
  const top = app.agent({
    name: 'top',
    model: relay('top'),
    instructions: 'Relay.',
    plugins: [],
    agents: [{ agent: 'mid', name: 'ask_mid', description: 'Ask mid.' }],
  });
  return { app, ledger, session: top.session('fixture-top') };
}

describe('a turn suspended two sub-agents deep, as stored by suspension record v1', () => {
  it('lists the deep call with its path and, approved, runs it once through both child sessions', async () => {
    const { app, ledger, session } = await appFromFixture();
    expect((await session.pending()).map((p) => [p.callId, p.path])).toEqual([['t1/m1/l1', ['top', 'mid', 'leaf']]]);

    const result = await session.resume({ decisions: [{ callId: 't1/m1/l1', decision: 'approve' }] });

    expect(result.status).toBe('completed');
    expect(result.reply).toBe('top: mid: leaf: appended x');
    expect(ledger.lines).toEqual(['x']);
    await app.stop();
  });

  it('rejected, never runs it', async () => {
    const { app, ledger, session } = await appFromFixture();
    const result = await session.resume({ decisions: [{ callId: 't1/m1/l1', decision: 'reject' }] });
    expect(result.reply).toMatch(/^top: mid: leaf: .*Rejected/);
    expect(ledger.lines).toEqual([]);
    await app.stop();
  });
});
