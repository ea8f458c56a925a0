import 'reflect-metadata';
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { SqliteStore, Trellis, ScriptedModel, type ModelRequest, type ScriptedReply } from '../../../index.js';
import { SemanticRecall, WorkingMemory, workingMemoryPlugin } from '../../../plugins/memory/index.js';
import { EMBEDDING_PROVIDER, type EmbeddingProvider } from '../../../plugins/retrieval/index.js';

/** Synonyms share a dimension: "dog" and "puppy" are close, "invoice" is far from both. */
const CONCEPTS: Record<string, number> = {
  dog: 0,
  dogs: 0,
  puppy: 0,
  pet: 0,
  biscuit: 0,
  invoice: 1,
  invoices: 1,
  bill: 1,
  billing: 1,
  holiday: 2,
  vacation: 2,
  trip: 2,
  lisbon: 2,
};
class TestEmbeddings implements EmbeddingProvider {
  readonly name = 'test:concepts';
  fail = false;
  async embed(texts: readonly string[]): Promise<number[][]> {
    if (this.fail) throw new Error('embedding service down');
    return texts.map((t) => {
      const v = [0, 0, 0, 0.05];
      for (const w of t.toLowerCase().match(/[a-z]+/g) ?? []) if (CONCEPTS[w] !== undefined) v[CONCEPTS[w]]! += 1;
      return v;
    });
  }
}

const MARKER = 'Biscuit-7f3a';
const WORKING_MARKER = 'prefers-metric-91c2';

/** The model: saves working memory when told "remember: …", else answers "noted"; records what it was shown. */
function model(seen: string[]) {
  return new ScriptedModel((request: ModelRequest): ScriptedReply => {
    const last = request.messages.at(-1)!;
    const system = request.messages
      .filter((m) => m.role === 'system')
      .map((m) => m.content)
      .join('\n---\n');
    if (last.role === 'user') {
      seen.push(system);
      const remember = /^remember: (.*)$/.exec(last.content);
      if (remember)
        return {
          toolCalls: [
            {
              id: `call_${randomUUID()}`,
              name: 'memory.working.update',
              args: JSON.parse(remember[1]!) as Record<string, unknown>,
            },
          ],
        };
      return `noted: ${last.content}`;
    }
    return `tool said: ${last.content}`;
  });
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-user-memory-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function memoryApp(options: { maxTokens?: number } = {}) {
  const embeddings = new TestEmbeddings();
  const path = join(dir, 'memory.db');
  const app = Trellis.create({
    store: SqliteStore.open(path),
    providers: [{ provide: EMBEDDING_PROVIDER, useValue: embeddings }],
  });
  await app.install(SemanticRecall, {
    config: { topK: 3, minScore: 0.5, ...(options.maxTokens ? { maxTokens: options.maxTokens } : {}) },
  });
  await app.install(WorkingMemory);
  const seen: string[] = [];
  const agent = app.agent({ name: 'assistant', instructions: 'Help the user.', model: model(seen) });
  const session = (user: string | undefined, id: string = randomUUID()) =>
    agent.session(id, user ? { context: { 'app.user_id': user } } : {});
  return { app, seen, session, embeddings, path };
}

/** Every row of the records table, as text. */
function recordsText(path: string): string {
  const db = new Database(path, { readonly: true });
  try {
    return JSON.stringify(db.prepare('SELECT * FROM records').all());
  } finally {
    db.close();
  }
}

describe("semantic recall: a user's earlier sessions, by meaning, never another user's", () => {
  it("recalls the user's relevant exchange from another session, within the budget, and nothing for another user or an anonymous session", async () => {
    const { app, seen, session } = await memoryApp();
    await session('u1', 'a').send(`My dog is called ${MARKER}.`);
    await session('u1', 'a').send('Please send the invoice to accounting.');
    await session('u2', 'b').send('My invoice total was wrong.');
    seen.length = 0;

    await session('u1', 'c').send('What was the name of my puppy?');
    expect(seen[0]).toContain('Relevant exchanges from earlier conversations with this user');
    expect(seen[0]).toContain(MARKER);
    expect(seen[0]).not.toContain('invoice');
    await session('u2', 'd').send('What was the name of my puppy?');
    expect(seen[1]).not.toContain(MARKER);
    await session(undefined, 'e').send('What was the name of my puppy?');
    expect(seen[2]).not.toContain(MARKER);
    expect(seen[2]).not.toContain('Relevant exchanges');
    // The same session's exchanges are in its transcript already: not recalled again (session c's are).
    await session('u1', 'a').send('Tell me about my dog');
    expect(seen[3]).toContain('What was the name of my puppy?');
    expect(seen[3]).not.toContain(MARKER);
    await app.stop();
  });

  it('adds the best exchanges first and only as many as fit in maxTokens', async () => {
    const { app, seen, session } = await memoryApp({ maxTokens: 60 });
    await session('u1').send('dog dog dog dog: the best dog words');
    await session('u1').send(`My pet dog is ${MARKER}, a very good dog with a long story ${'about walks '.repeat(12)}`);
    await session('u1').send('a dog and an invoice');
    seen.length = 0;
    await session('u1').send('dog');
    const recalled = seen[0]!.split('---').find((part) => part.includes('Relevant exchanges'))!;
    expect(recalled).toContain('dog dog dog dog');
    expect(recalled).not.toContain('about walks');
    expect(Math.ceil(recalled.trim().length / 4)).toBeLessThanOrEqual(60);
    await app.stop();
  });

  it('an embedding failure skips recall and is reported; the turn completes', async () => {
    const { app, session, embeddings } = await memoryApp();
    const errors: string[] = [];
    app.events$.subscribe((e) => e.type === 'error' && errors.push(e.message));
    embeddings.fail = true;
    const result = await session('u1').send('my dog');
    expect(result.status).toBe('completed');
    expect(errors.some((m) => m.includes('embedding service down'))).toBe(true);
    await app.stop();
  });
});

describe('working memory: one record per user, kept in the store, updated by the agent', () => {
  it("is shown in the user's next sessions, never in another user's; a model cannot address another user", async () => {
    const { app, seen, session, path } = await memoryApp();
    const saved = await session('u1').send(`remember: {"notes":"${WORKING_MARKER}"}`);
    expect(saved.toolCalls.map((c) => [c.tool, c.ok])).toEqual([['memory.working.update', true]]);
    seen.length = 0;
    await session('u1').send('hello again');
    expect(seen[0]).toContain(WORKING_MARKER);
    await session('u2').send('hello');
    expect(seen[1]).not.toContain(WORKING_MARKER);
    expect(seen[1]).toContain('(empty: nothing saved yet)');
    // An argument naming another user is refused by the DTO; u2's record stays empty.
    const sneaky = await session('u1').send('remember: {"notes":"overwritten","userId":"u2"}');
    expect(sneaky.toolCalls[0]!.ok).toBe(false);
    // Without a user the tool cannot run at all.
    const anonymous = await session(undefined).send('remember: {"notes":"nobody"}');
    expect(anonymous.toolCalls[0]!.error?.code).toBe('MissingContext');
    await app.stop();
    // Persisted: a new app over the same file shows it.
    const again = await (async () => {
      const next = Trellis.create({
        store: SqliteStore.open(path),
        providers: [{ provide: EMBEDDING_PROVIDER, useValue: new TestEmbeddings() }],
      });
      await next.install(WorkingMemory);
      const shown: string[] = [];
      await next
        .agent({ name: 'x', instructions: 'Help.', model: model(shown) })
        .session(randomUUID(), { context: { 'app.user_id': 'u1' } })
        .send('hi');
      await next.stop();
      return shown[0]!;
    })();
    expect(again).toContain(WORKING_MARKER);
    const working = (JSON.parse(recordsText(path)) as { namespace: string; subject: string; value: string }[]).filter(
      (r) => r.namespace === 'memory.working',
    );
    expect(working.map((r) => [r.subject, JSON.parse(r.value)])).toEqual([['u1', { notes: WORKING_MARKER }]]);
  });

  it('takes any class-validator DTO: the model sees its fields, bad values are refused', async () => {
    class Profile {
      @IsOptional() @IsString() @MaxLength(40) name?: string;
      @IsOptional() @IsIn(['metric', 'imperial']) units?: string;
    }
    const ProfileMemory = workingMemoryPlugin(Profile, {
      name: 'profile',
      description: "the user's name and preferred units",
    });
    const app = Trellis.create({ store: SqliteStore.open(join(dir, 'p.db')) });
    await app.install(ProfileMemory);
    const tool = app.describe().plugins.find((p) => p.name === 'profile')!.tools[0]!;
    expect(tool.name).toBe('profile.update');
    expect(JSON.stringify(tool)).toContain('imperial');
    const calls: Record<string, unknown>[] = [{ units: 'furlongs' }, { name: 'Ada', units: 'metric' }];
    const m = new ScriptedModel((req) =>
      req.messages.at(-1)!.role === 'user'
        ? { toolCalls: [{ id: `call_${randomUUID()}`, name: 'profile.update', args: calls.shift()! }] }
        : 'ok',
    );
    const agent = app.agent({ name: 'p', instructions: 'Help.', model: m });
    expect((await agent.session(undefined, { context: { 'app.user_id': 'u9' } }).send('x')).toolCalls[0]!.ok).toBe(
      false,
    );
    expect((await agent.session(undefined, { context: { 'app.user_id': 'u9' } }).send('y')).toolCalls[0]!.ok).toBe(
      true,
    );
    await app.stop();
  });
});

describe('erasure: app.erase removes what both memories hold of a user', () => {
  it("erasing a user deletes their recalled exchanges and working memory, in every row of the store's records; other users keep theirs", async () => {
    const { app, session, path } = await memoryApp();
    await session('u1', 's1').send(`My dog is called ${MARKER}.`);
    await session('u1', 's1').send(`remember: {"notes":"${WORKING_MARKER}"}`);
    await session('u2', 's2').send('My dog is called Rex.');
    await session('u2', 's2').send('remember: {"notes":"u2 keeps this"}');
    expect(recordsText(path)).toContain(MARKER);
    expect(recordsText(path)).toContain(WORKING_MARKER);

    const report = await app.erase({ userId: 'u1' });
    expect(report.sessions).toEqual(['s1']);
    expect(report.plugins).toEqual(expect.arrayContaining(['memory.recall', 'memory.working']));
    const left = recordsText(path);
    expect(left).not.toContain(MARKER);
    expect(left).not.toContain(WORKING_MARKER);
    expect(left).toContain('Rex');
    expect(left).toContain('u2 keeps this');
    await app.stop();
  });

  it("erasing a session deletes that session's recalled exchanges only", async () => {
    const { app, session, path } = await memoryApp();
    await session('u1', 'keep').send('My dog is called Rex.');
    await session('u1', 'drop').send(`My dog is called ${MARKER}.`);
    await app.erase({ sessionId: 'drop' });
    const left = recordsText(path);
    expect(left).not.toContain(MARKER);
    expect(left).toContain('Rex');
    await app.stop();
  });
});
