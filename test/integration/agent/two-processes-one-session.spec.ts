import 'reflect-metadata';
import { IsString } from 'class-validator';
import { Trellis, Plugin, Tool, StateKey, SqliteStore, type ToolContext, type SessionStore } from 'trellis';
import { ScriptedModel, MemoryStore } from 'trellis/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

class Note {
  @IsString() text!: string;
}

@Plugin({ name: 'notes', version: '1.0.0' })
@StateKey('notes.count', { scope: 'session', merge: 'exclusive', persistent: true, default: 0 })
class Notes {
  @Tool({ name: 'notes.add', description: 'Adds a note. Use when asked to remember something.', input: Note })
  add(_input: Note, ctx: ToolContext) {
    ctx.update<number>('notes.count', (n) => (n ?? 0) + 1);
    return 'noted';
  }
}

/** Two apps on one store stand for two processes serving the same session in turns. */
async function twoProcesses(store: SessionStore) {
  const open = async () => {
    const app = Trellis.create({ store });
    await app.install(Notes);
    const model = new ScriptedModel((request) =>
      request.messages.at(-1)!.role === 'user'
        ? { toolCalls: [{ name: 'notes.add', args: { text: String(request.messages.at(-1)!.content) } }] }
        : `ok after ${request.messages.length} messages`,
    );
    return { model, session: app.agent({ name: 'notes', model, instructions: 'x' }).session('shared') };
  };
  return { a: await open(), b: await open() };
}

/** A store to share, and how to close it and remove its files. */
type SharedStore = { readonly store: SessionStore; readonly done: () => void };

describe.each([
  ['MemoryStore', (): SharedStore => ({ store: new MemoryStore(), done: () => undefined })],
  [
    'SqliteStore',
    (): SharedStore => {
      const dir = mkdtempSync(join(tmpdir(), 'trellis-two-'));
      const store = new SqliteStore({ path: join(dir, 'db.sqlite') });
      return {
        store,
        done: () => {
          void store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  ],
] as const)('one session served by two processes in turns (%s)', (_name, make) => {
  it('each process picks up the turns the other checkpointed, instead of failing at save', async () => {
    const { store, done } = make();
    try {
      const { a, b } = await twoProcesses(store);
      expect((await a.session.send('first')).status).toBe('completed');
      expect((await b.session.send('second')).status).toBe('completed');
      const third = await a.session.send('third');
      expect(third.status).toBe('completed');
      // a's request for turn 3 held turn 2 (written by b): system + 2 turns × 4 messages + the new user message.
      const lastRequest = a.model.calls.at(-2)!;
      expect(lastRequest.messages.map((m) => m.content)).toContain('second');
      expect(a.session.transcript.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
        'first',
        'second',
        'third',
      ]);
      expect(a.session.values['notes.count']).toBe(3);
      const stored = await store.load('shared');
      expect(stored!.turns.map((t) => t.input)).toEqual(['first', 'second', 'third']);
      expect(stored!.state['notes.count']).toBe(3);
    } finally {
      done();
    }
  });
});
