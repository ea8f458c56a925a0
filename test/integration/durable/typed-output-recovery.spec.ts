import 'reflect-metadata';
import { IsNumber, IsString } from 'class-validator';
import {
  MemoryStore,
  Plugin,
  ScriptedModel,
  Tool,
  Trellis,
  type ModelRequest,
  type ScriptedReply,
  type SessionStore,
  type ToolContext,
} from '../../../index.js';
import { dyingStore } from './support/dying-store.js';

class Summary {
  @IsString() customer!: string;
  @IsNumber() total!: number;
}

class Lookup {
  @IsString() id!: string;
}

let toolRuns = 0;
let modelCalls = 0;

@Plugin({ name: 'ledger', version: '1.0.0' })
class LedgerPlugin {
  @Tool({ name: 'ledger.read', description: 'Reads an invoice. Tests only.', input: Lookup, onCrash: 'retry' })
  read(input: Lookup, _ctx: ToolContext) {
    toolRuns++;
    return { id: input.id, customer: 'Ada', total: 42 };
  }
}

const VALID = '{"customer":"Ada","total":42}';

/** Asks for the invoice, then answers invalid (a string total), then, told the field error, valid. */
function reply(request: ModelRequest): ScriptedReply {
  modelCalls++;
  const last = request.messages.at(-1)!;
  if (!request.messages.some((m) => m.role === 'tool'))
    return {
      toolCalls: [{ id: `call_${Math.random().toString(36).slice(2)}`, name: 'ledger.read', args: { id: '7' } }],
    };
  if (last.role === 'user' && last.content.includes('not a valid Summary')) return VALID;
  return '{"customer":"Ada","total":"42"}';
}

async function appOn(store: SessionStore) {
  const app = Trellis.create({ store, leaseTtlMs: 1_000 });
  await app.install(LedgerPlugin);
  return {
    app,
    session: app
      .agent({ name: 'desk', model: new ScriptedModel(reply), instructions: 'x', output: Summary })
      .session('s1'),
  };
}

beforeEach(() => {
  toolRuns = 0;
  modelCalls = 0;
});

describe('a typed turn cut off by a crash', () => {
  it('journals an uninterrupted typed turn with its repair round in 5 writes', async () => {
    const dying = dyingStore(new MemoryStore());
    const { app, session } = await appOn(dying.store);
    const result = await session.send('Summarise invoice 7', { key: 'k1' });
    expect(result).toMatchObject({ status: 'completed', rounds: 3, output: { customer: 'Ada', total: 42 } });
    expect(dying.writes()).toBe(5);
    await app.stop();
  });

  // Writes: the opening with the tool call's response, the tool result, the invalid answer, the valid answer, the checkpoint.
  it.each([1, 2, 3, 4, 5])(
    'goes on after a crash right after write %i with the same typed answer: no model call or tool run again, the repair round counted once',
    async (write) => {
      const shared = new MemoryStore();
      const dying = dyingStore(shared);
      const one = await appOn(dying.store);
      dying.dieAfterWrite(write);
      void one.session.send('Summarise invoice 7', { key: 'k1' });
      while (!dying.dead()) await new Promise((resolve) => setTimeout(resolve, 2));

      const two = await appOn(shared);
      const result = await two.session.send('Summarise invoice 7', { key: 'k1', waitForLease: 5_000 });

      expect(result.status).toBe('completed');
      expect(result.output).toBeInstanceOf(Summary);
      expect(result.output).toMatchObject({ customer: 'Ada', total: 42 });
      expect(modelCalls).toBe(3);
      expect(toolRuns).toBe(1);
      const stored = (await shared.load('s1'))!;
      expect(stored.turns.map((t) => [t.key, t.status, t.output])).toEqual([
        ['k1', 'completed', { customer: 'Ada', total: 42 }],
      ]);
      // The transcript keeps the answer that counted, never the invalid one or the note.
      expect(stored.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(stored.transcript.at(-1)!.content).toBe(VALID);
      await two.app.stop();
    },
  );
});
