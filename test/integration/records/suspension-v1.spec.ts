import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { IsInt, Min } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  suspend,
  StateKey,
  TrellisError,
  type ToolCallInfo,
  type ToolContext,
} from 'trellis';
import type { StoredSession } from 'trellis/stores';
import { ScriptedModel, MemoryStore } from 'trellis/testing';

// The plugin that wrote test/fixtures/records/session-suspended-v1.json.
class Amount {
  @IsInt() @Min(1) units!: number;
}

@Plugin({ name: 'pay', version: '1.0.0' })
@StateKey('pay.total', { scope: 'session', merge: 'exclusive', persistent: true, default: 0 })
class Pay {
  sent: number[] = [];
  @Tool({ name: 'pay.quote', description: 'Quotes a price. Use before paying.', input: Amount })
  quote(input: Amount) {
    return { price: input.units * 10 };
  }
  @Tool({ name: 'pay.send', description: 'Sends money. Use only when asked to pay.', input: Amount })
  send(input: Amount, ctx: ToolContext) {
    this.sent.push(input.units);
    ctx.update<number>('pay.total', (t) => (t ?? 0) + input.units);
    return `sent ${input.units}`;
  }
  @Hook('tool.gate')
  gate(call: ToolCallInfo) {
    return call.tool === 'pay.send'
      ? suspend({ message: 'Send money?', allowedDecisions: ['approve', 'reject'] })
      : undefined;
  }
}

const fixture = JSON.parse(
  readFileSync(new URL('../../fixtures/records/session-suspended-v1.json', import.meta.url), 'utf8'),
) as StoredSession;

async function storeWith(session: StoredSession): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.checkpoint({
    sessionId: session.id,
    agent: session.agent,
    expectedRevision: 0,
    state: session.state,
    append: session.transcript,
    turn: session.turns[0]!,
    suspension: session.suspension,
  });
  return store;
}

describe('a suspended turn stored by Trellis with suspension record v1', () => {
  it('resumes: the parked call runs once, the model sees both results in call order', async () => {
    const app = Trellis.create({ store: await storeWith(fixture) });
    const pay = (await app.install(Pay)).instance;
    const model = new ScriptedModel(['Paid 3 units.']);
    const session = app.agent({ name: 'payments', model, instructions: 'You pay.' }).session(fixture.id);

    const result = await session.resume({ decisions: [{ callId: 's1', decision: 'approve' }] });

    expect(result.status).toBe('completed');
    expect(result.reply).toBe('Paid 3 units.');
    expect(pay.sent).toEqual([3]);
    const tools = model.calls[0]!.messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => [m.toolCallId, m.content])).toEqual([
      ['q1', '{"price":30}'],
      ['s1', 'sent 3'],
    ]);
    expect(session.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
    expect(session.values['pay.total']).toBe(3);
    // Host context stored by older versions is never read back: the host states it anew.
    expect(session.values['app.user_id']).toBeUndefined();
  });

  it('fails closed on a record of an unknown version: nothing runs', async () => {
    const future = { ...fixture, suspension: { ...(fixture.suspension as object), version: 2 } };
    const app = Trellis.create({ store: await storeWith(future) });
    const pay = (await app.install(Pay)).instance;
    const session = app
      .agent({ name: 'payments', model: new ScriptedModel(['x']), instructions: 'You pay.' })
      .session(fixture.id);

    const error = await session.resume({ decisions: [{ callId: 's1', decision: 'approve' }] }).catch((e: unknown) => e);

    expect(TrellisError.is(error, 'InvalidCheckpoint')).toBe(true);
    expect((error as Error).message).toContain('version is 2');
    expect(pay.sent).toEqual([]);
  });
});

describe('a SqliteStore file written at schema version 1', () => {
  it('opens, reads the session whole, and resumes it', async () => {
    const { copyFileSync, mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { fileURLToPath } = await import('node:url');
    const { SqliteStore } = await import('trellis');
    const dir = mkdtempSync(join(tmpdir(), 'trellis-fixture-'));
    try {
      const path = join(dir, 'trellis.db');
      copyFileSync(fileURLToPath(new URL('../../fixtures/records/store-schema-v1.db', import.meta.url)), path);
      const store = new SqliteStore({ path });
      const loaded = await store.load(fixture.id);
      expect(loaded).toMatchObject({
        id: fixture.id,
        agent: 'payments',
        state: fixture.state,
        suspension: fixture.suspension,
      });
      expect(loaded!.turns).toEqual(fixture.turns);

      const app = Trellis.create({ store });
      const pay = (await app.install(Pay)).instance;
      const session = app
        .agent({ name: 'payments', model: new ScriptedModel(['Paid.']), instructions: 'You pay.' })
        .session(fixture.id);
      expect((await session.resume({ decisions: [{ callId: 's1', decision: 'reject' }] })).status).toBe('completed');
      expect(pay.sent).toEqual([]);
      await app.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
