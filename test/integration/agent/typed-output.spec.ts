import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsNumber, IsObject, IsOptional, IsString, Min, ValidateNested } from 'class-validator';
import {
  Hook,
  MemoryStore,
  SqliteStore,
  OpenAIModel,
  AnthropicModel,
  Plugin,
  ScriptedModel,
  Tool,
  Trellis,
  done,
  suspend,
  type ModelRequest,
  type ScriptedReply,
  type ToolCallInfo,
  type ToolContext,
  type TrellisEvent,
  type TurnResult,
} from '../../../index.js';

class LineItem {
  @IsString() sku!: string;
  @IsInt() @Min(1) quantity!: number;
}

class InvoiceSummary {
  @IsString() customer!: string;
  @IsNumber() total!: number;
  @IsIn(['EUR', 'USD']) currency!: string;
  @IsOptional() @IsString() note?: string;
  @ValidateNested({ each: true }) @Type(() => LineItem) lines!: LineItem[];
}

class Verdict {
  @IsIn(['approve', 'reject']) verdict!: string;
}

class LookupInput {
  @IsString() id!: string;
}

@Plugin({ name: 'books', version: '1.0.0' })
class BooksPlugin {
  @Tool({
    name: 'books.invoice',
    description: 'Reads an invoice by id. Use when asked about an invoice.',
    input: LookupInput,
  })
  invoice(input: LookupInput, _ctx: ToolContext) {
    return { id: input.id, customer: 'Ada', total: 42.5, currency: 'EUR', lines: [{ sku: 'A-1', quantity: 2 }] };
  }

  @Tool({
    name: 'books.verdict',
    description: 'Records a verdict and ends the turn with it. Tests only.',
    input: LookupInput,
  })
  verdict(input: LookupInput, _ctx: ToolContext) {
    return done({ verdict: input.id === 'good' ? 'approve' : 'maybe' });
  }
}

const GOOD = { customer: 'Ada', total: 42.5, currency: 'EUR', lines: [{ sku: 'A-1', quantity: 2 }] };

/** The model asks for the invoice first, then answers with each of `answers` in turn. */
function invoiceModel(...answers: ScriptedReply[]): ScriptedModel {
  let answered = 0;
  return new ScriptedModel((request) => {
    const last = request.messages.at(-1)!;
    if (
      last.role === 'user' &&
      request.messages.filter((m) => m.role === 'tool').length === 0 &&
      !last.content.startsWith('Your answer')
    )
      return {
        toolCalls: [{ id: `call_${Math.random().toString(36).slice(2)}`, name: 'books.invoice', args: { id: '7' } }],
      };
    return answers[Math.min(answered++, answers.length - 1)]!;
  });
}

async function appWithStore(store: SqliteStore): Promise<Trellis> {
  const app = Trellis.create({ store });
  await app.install(BooksPlugin);
  return app;
}

async function appWith(): Promise<Trellis> {
  const app = Trellis.create();
  await app.install(BooksPlugin);
  return app;
}

describe('typed final output', () => {
  it('ends the turn with result.output: the DTO instance, typed, after the tools ran', async () => {
    const app = await appWith();
    const model = invoiceModel(JSON.stringify(GOOD));
    const agent = app.agent({ name: 'desk', model, instructions: 'Summarise invoices.', output: InvoiceSummary });

    const result = await agent.session('s1').send('Summarise invoice 7');

    expect(result.status).toBe('completed');
    expect(result.output).toBeInstanceOf(InvoiceSummary);
    expect(result.output!.lines[0]).toBeInstanceOf(LineItem);
    // Typed as the DTO: this line does not compile if `output` is not an InvoiceSummary.
    const total: number = result.output!.total;
    expect(total).toBe(42.5);
    expect(result.reply).toBe(JSON.stringify(GOOD));
    expect(result.toolCalls.map((c) => c.tool)).toEqual(['books.invoice']);
    // Every request of the turn said what the answer must be; the scripted model has no native mode, so the prompt says it too.
    expect(model.calls.map((c) => c.output?.name)).toEqual(['InvoiceSummary', 'InvoiceSummary']);
    expect(model.calls[0]!.output!.schema).toMatchObject({
      type: 'object',
      required: ['customer', 'total', 'currency', 'lines'],
    });
    expect(model.calls[0]!.messages[0]!.content).toContain('answer with only one JSON object');
    expect(model.calls[0]!.messages[0]!.content).toContain('"currency"');
    await app.stop();
  });

  it('takes a fenced JSON block, maps a null optional field to absent, and drops fields the DTO does not declare', async () => {
    const app = await appWith();
    const agent = app.agent({
      name: 'desk',
      model: invoiceModel('```json\n' + JSON.stringify({ ...GOOD, note: null, extra: 'x' }) + '\n```'),
      instructions: 'x',
      output: InvoiceSummary,
    });
    const result = await agent.session('s1').send('Summarise invoice 7');
    expect(result.status).toBe('completed');
    expect(result.output).toEqual(
      Object.assign(new InvoiceSummary(), { ...GOOD, lines: [Object.assign(new LineItem(), GOOD.lines[0])] }),
    );
    expect('note' in result.output! && result.output.note !== undefined).toBe(false);
    expect(result.output).not.toHaveProperty('extra');
    await app.stop();
  });

  it('sends an invalid answer back with each field error, and keeps only the answer that counted in the transcript', async () => {
    const app = await appWith();
    const bad = { ...GOOD, total: '42.5', currency: 'GBP', lines: [{ sku: 'A-1', quantity: 0 }] };
    const model = invoiceModel(JSON.stringify(bad), JSON.stringify(GOOD));
    const agent = app.agent({ name: 'desk', model, instructions: 'x', output: InvoiceSummary });
    const session = agent.session('s1');

    const result = await session.send('Summarise invoice 7');

    expect(result.status).toBe('completed');
    expect(result.output!.total).toBe(42.5);
    expect(result.rounds).toBe(3);
    const repair = model.calls[2]!.messages;
    expect(repair.at(-2)).toMatchObject({ role: 'assistant', content: JSON.stringify(bad) });
    const note = repair.at(-1)!;
    expect(note.role).toBe('user');
    expect(note.content).toContain('not a valid InvoiceSummary');
    expect(note.content).toContain('- total: total must be a number');
    expect(note.content).toContain('- currency: currency must be one of the following values: EUR, USD');
    expect(note.content).toContain('- lines[0].quantity: quantity must not be less than 1');
    // The transcript: the question, the tool round, the valid answer; not the failed attempt or the note.
    expect(session.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(session.transcript.at(-1)!.content).toBe(JSON.stringify(GOOD));
    await app.stop();
  });

  it('sends the repair note with the next request only: an answer to it that calls a tool goes on without it', async () => {
    const app = await appWith();
    const model = new ScriptedModel([
      '{"customer":"Ada"}',
      { toolCalls: [{ id: 'c-after', name: 'books.invoice', args: { id: '7' } }] },
      JSON.stringify(GOOD),
    ]);
    const result = await app
      .agent({ name: 'desk', model, instructions: 'x', output: InvoiceSummary })
      .session('s1')
      .send('Summarise invoice 7');
    expect(result).toMatchObject({ status: 'completed', rounds: 3 });
    expect(model.calls[1]!.messages.at(-1)!.content).toContain('not a valid InvoiceSummary');
    const third = model.calls[2]!.messages;
    expect(third.some((m) => m.content.includes('not a valid InvoiceSummary'))).toBe(false);
    expect(third.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    await app.stop();
  });

  it('ends failed with OutputInvalid after maxOutputRepairs, naming the fields, with no half-typed output', async () => {
    const app = await appWith();
    const model = invoiceModel('Sure! The total is 42.50 EUR.', JSON.stringify({ customer: 'Ada' }));
    const agent = app.agent({ name: 'desk', model, instructions: 'x', output: InvoiceSummary, maxOutputRepairs: 1 });

    const result = await agent.session('s1').send('Summarise invoice 7');

    expect(result.status).toBe('failed');
    expect(result.output).toBeUndefined();
    expect(result.error!.code).toBe('OutputInvalid');
    expect(result.error!.message).toContain('not a valid InvoiceSummary after 1 repair round');
    expect(result.error!.message).toContain('- total: total must be a number');
    expect(model.callCount).toBe(3);
    // The first note said the reply was not JSON at all.
    expect(model.calls[2]!.messages.at(-1)!.content).toContain('(input): the reply is not one JSON object');
    await app.stop();
  });

  it('counts repair rounds in maxRounds: an answer still invalid at the last round ends OutputInvalid, not max_rounds', async () => {
    const app = await appWith();
    const agent = app.agent({
      name: 'desk',
      model: invoiceModel('{}'),
      instructions: 'x',
      output: InvoiceSummary,
      maxRounds: 2,
      maxOutputRepairs: 5,
    });
    const result = await agent.session('s1').send('Summarise invoice 7');
    expect(result).toMatchObject({ status: 'failed', rounds: 2, error: { code: 'OutputInvalid' } });
    await app.stop();
  });

  it('types a send of its own with send(…, { output }), overriding the agent', async () => {
    const app = await appWith();
    const agent = app.agent({
      name: 'desk',
      model: new ScriptedModel([JSON.stringify({ verdict: 'approve' }), 'plain text again']),
      instructions: 'x',
    });
    const session = agent.session('s1');

    const typed = await session.send('Approve it?', { output: Verdict });
    const verdict: string = typed.output!.verdict;
    expect(verdict).toBe('approve');
    expect(typed.output).toBeInstanceOf(Verdict);

    const plain = await session.send('And now?');
    expect(plain).toMatchObject({ status: 'completed', reply: 'plain text again' });
    expect(plain.output).toBeUndefined();
    await app.stop();
  });

  it('refuses an output that is not a DTO class before anything runs', async () => {
    const app = await appWith();
    const model = new ScriptedModel(['x']);
    const agent = app.agent({ name: 'desk', model, instructions: 'x' });
    await expect(agent.session('s1').send('hi', { output: 'Verdict' as never })).rejects.toMatchObject({
      code: 'InvalidOptions',
    });
    expect(() => app.agent({ name: 'bad', model, instructions: 'x', output: 42 as never })).toThrow(
      expect.objectContaining({ code: 'InvalidOptions' }),
    );
    expect(() => app.agent({ name: 'bad', model, instructions: 'x', maxOutputRepairs: -1 })).toThrow(
      /maxOutputRepairs must be a whole number/,
    );
    expect(model.callCount).toBe(0);
    await app.stop();
  });

  it('ends a refusal failed with ModelRefused, the refusal in the transcript, never an empty reply', async () => {
    const app = await appWith();
    for (const output of [InvoiceSummary, undefined]) {
      const agent = app.agent({
        name: 'desk',
        model: new ScriptedModel([{ refusal: 'I cannot help with that request.' }]),
        instructions: 'x',
        ...(output && { output }),
      });
      const session = agent.session(`s-${output ? 'typed' : 'plain'}`);
      const result: TurnResult = await session.send('Do something bad');
      expect(result).toMatchObject({
        status: 'failed',
        error: { code: 'ModelRefused', message: 'The model refused to answer: I cannot help with that request.' },
      });
      expect(result.reply).toBeUndefined();
      expect(session.transcript.at(-1)).toEqual({ role: 'assistant', content: 'I cannot help with that request.' });
    }
    await app.stop();
  });

  it("checks a tool's done(...) value against the DTO, without repair rounds", async () => {
    const app = await appWith();
    const script = (id: string) =>
      new ScriptedModel([{ toolCalls: [{ id: `c-${id}`, name: 'books.verdict', args: { id } }] }]);
    const good = await app
      .agent({ name: 'a', model: script('good'), instructions: 'x', output: Verdict })
      .session('s1')
      .send('decide');
    expect(good.status).toBe('completed');
    expect(good.output).toEqual(Object.assign(new Verdict(), { verdict: 'approve' }));
    const bad = await app
      .agent({ name: 'b', model: script('bad'), instructions: 'x', output: Verdict })
      .session('s2')
      .send('decide');
    expect(bad).toMatchObject({ status: 'failed', error: { code: 'OutputInvalid' } });
    expect(bad.error!.message).toContain('verdict: verdict must be one of the following values');
    await app.stop();
  });

  it('streams output.partial events with the object so far, and none with streamText final', async () => {
    const app = await appWith();
    const text = JSON.stringify(GOOD);
    const pieces = (request: ModelRequest): ScriptedReply =>
      request.messages.some((m) => m.role === 'tool')
        ? text
        : { toolCalls: [{ id: 'c1', name: 'books.invoice', args: { id: '7' } }] };
    const live = app
      .agent({ name: 'live', model: new ScriptedModel(pieces), instructions: 'x', output: InvoiceSummary })
      .session('s1');
    const events: TrellisEvent[] = [];
    live.events$.subscribe((e) => events.push(e));
    await live.send('Summarise invoice 7');
    const partials = events.filter(
      (e): e is Extract<TrellisEvent, { type: 'output.partial' }> => e.type === 'output.partial',
    );
    expect(partials.length).toBeGreaterThanOrEqual(2);
    expect(partials.every((p) => p.output === 'InvoiceSummary' && p.round === 2 && p.turn === 0)).toBe(true);
    expect(partials.at(-1)!.partial).toEqual(GOOD);
    // The earlier ones are prefixes of the answer, read leniently.
    expect(Object.keys(partials[0]!.partial).length).toBeLessThan(Object.keys(GOOD).length);

    const held = app
      .agent({
        name: 'held',
        model: new ScriptedModel(pieces),
        instructions: 'x',
        output: InvoiceSummary,
        streamText: 'final',
      })
      .session('s2');
    const heldEvents: TrellisEvent[] = [];
    held.events$.subscribe((e) => heldEvents.push(e));
    await held.send('Summarise invoice 7');
    expect(heldEvents.some((e) => e.type === 'output.partial')).toBe(false);
    await app.stop();
  });

  it('reads the output again from a reply message.sending rewrote (a redaction), so output says what reply says', async () => {
    @Plugin({ name: 'redact', version: '1.0.0' })
    class RedactPlugin {
      @Hook('message.sending')
      redact(reply: string) {
        return reply.replace('Ada', '[name]');
      }
    }
    const app = await appWith();
    await app.install(RedactPlugin);
    const result = await app
      .agent({ name: 'desk', model: invoiceModel(JSON.stringify(GOOD)), instructions: 'x', output: InvoiceSummary })
      .session('s1')
      .send('Summarise invoice 7');
    expect(result.output!.customer).toBe('[name]');
    expect(result.reply).toContain('[name]');
    await app.stop();
  });
});

describe('schemas a provider cannot take are refused at agent creation and install', () => {
  class Loose {
    @IsObject() meta!: Record<string, unknown>;
    @IsString() title!: string;
  }

  it('refuses an output DTO OpenAI strict mode cannot express, naming the field and what to change; prompt mode takes it', async () => {
    const app = Trellis.create();
    const strict = new OpenAIModel({ model: 'gpt-4o', apiKey: 'k' });
    let error: unknown;
    try {
      app.agent({ name: 'desk', model: strict, instructions: 'x', output: Loose });
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'UnsupportedSchema' });
    expect((error as Error).message).toContain(
      'output Loose, for openai:gpt-4o (openai-strict): meta: is an object without declared properties',
    );
    expect((error as Error).message).toContain('@ValidateNested() with @Type(() => X)');
    expect(() =>
      app.agent({
        name: 'desk',
        model: new OpenAIModel({ model: 'llama3', baseURL: 'http://localhost:11434/v1' }),
        instructions: 'x',
        output: Loose,
      }),
    ).not.toThrow();
    // A send's own output is checked against the agent's models before anything runs.
    const agent = app.agent({
      name: 'plain',
      model: [new AnthropicModel({ model: 'claude-x', apiKey: 'k' }), strict],
      instructions: 'x',
    });
    await expect(agent.session('s1').send('hi', { output: Loose })).rejects.toMatchObject({
      code: 'UnsupportedSchema',
    });
    await app.stop();
  });

  it("refuses a plugin whose tool schema an agent's model cannot take when it is installed, not at the first call", async () => {
    @Plugin({ name: 'raw', version: '1.0.0' })
    class RawPlugin {
      @Tool({
        name: 'raw.both',
        description: 'Tests only.',
        inputSchema: {
          type: 'object',
          allOf: [{ properties: { a: { type: 'string' } } }, { properties: { b: { type: 'string' } } }],
        },
      })
      both() {
        return 'ok';
      }
    }
    const app = Trellis.create();
    app.agent({
      name: 'local',
      model: new OpenAIModel({ model: 'llama3', baseURL: 'http://localhost:11434/v1' }),
      instructions: 'x',
    });
    await expect(app.install(RawPlugin)).rejects.toThrow(
      /tool raw\.both, for openai:llama3 \(conservative\): \(root\): uses allOf/,
    );
    expect(app.describe().plugins.map((p) => p.name)).not.toContain('raw');
    // An agent that does not offer the plugin's tools does not stand in the way.
    const other = Trellis.create();
    other.agent({
      name: 'local',
      model: new OpenAIModel({ model: 'llama3', baseURL: 'http://localhost:11434/v1' }),
      instructions: 'x',
      plugins: ['books'],
    });
    await expect(other.install(RawPlugin)).resolves.toMatchObject({ name: 'raw' });
    // Installed first, the agent is refused instead.
    expect(() =>
      other.agent({
        name: 'late',
        model: new OpenAIModel({ model: 'llama3', baseURL: 'http://localhost:11434/v1' }),
        instructions: 'x',
      }),
    ).toThrow(expect.objectContaining({ code: 'UnsupportedSchema' }));
    await app.stop();
    await other.stop();
  });
});

describe('typed turns across suspension, records and delegation', () => {
  @Plugin({ name: 'gate', version: '1.0.0' })
  class GatePlugin {
    @Hook('tool.gate')
    gate(call: ToolCallInfo) {
      if (call.tool === 'books.invoice') return suspend({ message: 'Reading invoices needs approval' });
      return undefined;
    }
  }

  async function gatedApp(store: MemoryStore) {
    const app = Trellis.create({ store });
    await app.install(BooksPlugin);
    await app.install(GatePlugin);
    return app;
  }

  it('keeps a send’s output over a suspension: resume must name the DTO again, then the answer is typed', async () => {
    const store = new MemoryStore();
    const app = await gatedApp(store);
    const model = invoiceModel(JSON.stringify(GOOD));
    const session = app.agent({ name: 'desk', model, instructions: 'x' }).session('s1');
    const waiting = await session.send('Summarise invoice 7', { output: InvoiceSummary });
    expect(waiting.status).toBe('suspended');
    const decisions = [{ callId: waiting.suspended![0]!.callId, decision: 'approve' as const }];

    await expect(session.resume({ decisions })).rejects.toMatchObject({
      code: 'InvalidOptions',
      message: expect.stringContaining('asked for a typed answer of InvoiceSummary'),
    });
    await expect(session.resume({ decisions, output: Verdict })).rejects.toMatchObject({ code: 'InvalidOptions' });
    // In another process, from the store.
    const other = await gatedApp(store);
    const resumed = await other
      .agent({ name: 'desk', model, instructions: 'x' })
      .session('s1')
      .resume({ decisions, output: InvoiceSummary });
    expect(resumed.status).toBe('completed');
    expect(resumed.output).toBeInstanceOf(InvoiceSummary);
    await app.stop();
    await other.stop();
  });

  it("resumes an agent's typed turn without naming the DTO, and answers a keyed re-send from the record with the output", async () => {
    const store = new MemoryStore();
    const app = await gatedApp(store);
    const model = invoiceModel(JSON.stringify(GOOD));
    const agent = app.agent({ name: 'desk', model, instructions: 'x', output: InvoiceSummary });
    const waiting = await agent.session('s1').send('Summarise invoice 7', { key: 'msg-1' });
    const resumed = await agent
      .session('s1')
      .resume({ decisions: [{ callId: waiting.suspended![0]!.callId, decision: 'approve' }] });
    expect(resumed.output!.total).toBe(42.5);
    const stored = await store.load('s1');
    expect(stored!.turns.at(-1)!.output).toEqual(GOOD);

    const third = await agent.session('s2').send('Summarise invoice 7', { key: 'msg-2' });
    expect(third.status).toBe('suspended');
    await agent.session('s2').resume({ decisions: [{ callId: third.suspended![0]!.callId, decision: 'approve' }] });
    const calls = model.callCount;
    const again = await (
      await gatedApp(store)
    )
      .agent({ name: 'desk', model, instructions: 'x', output: InvoiceSummary })
      .session('s2')
      .send('Summarise invoice 7', { key: 'msg-2' });
    expect(model.callCount).toBe(calls);
    expect(again.output).toBeInstanceOf(InvoiceSummary);
    expect(again.output).toMatchObject(GOOD);
    await app.stop();
  });

  it('keeps the output in a SQLite turn record: a new app answers the keyed re-send with the DTO instance, calling no model', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'trellis-typed-'));
    const path = join(dir, 'trellis.db');
    const first = await appWithStore(SqliteStore.open(path));
    const done1 = await first
      .agent({ name: 'desk', model: invoiceModel(JSON.stringify(GOOD)), instructions: 'x', output: InvoiceSummary })
      .session('s1')
      .send('Summarise invoice 7', { key: 'k-1' });
    expect(done1.status).toBe('completed');
    await first.stop();
    const second = await appWithStore(SqliteStore.open(path));
    const model = invoiceModel(JSON.stringify(GOOD));
    const again = await second
      .agent({ name: 'desk', model, instructions: 'x', output: InvoiceSummary })
      .session('s1')
      .send('Summarise invoice 7', { key: 'k-1' });
    expect(model.callCount).toBe(0);
    expect(again.output).toBeInstanceOf(InvoiceSummary);
    expect(again.output!.lines[0]).toBeInstanceOf(LineItem);
    await second.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("types a sub-agent's answer where it is written: the agent tool's output runs the child turn typed, with its repair rounds", async () => {
    const app = Trellis.create();
    const judge = new ScriptedModel(['I think we should approve.', '{"verdict":"approve"}']);
    app.agent({ name: 'judge', model: judge, instructions: 'Judge.' });
    const parent = new ScriptedModel((request): ScriptedReply =>
      request.messages.some((m) => m.role === 'tool')
        ? 'done'
        : { toolCalls: [{ id: 'j1', name: 'ask_judge', args: { input: 'refund?' } }] },
    );
    const clerk = app.agent({
      name: 'clerk',
      model: parent,
      instructions: 'x',
      agents: [{ agent: 'judge', name: 'ask_judge', description: 'Ask the judge. Tests only.', output: Verdict }],
    });
    const result = await clerk.session('c1').send('decide');
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: { verdict: 'approve' } });
    expect(judge.calls[0]!.output?.name).toBe('Verdict');
    expect(judge.callCount).toBe(2);
    await app.stop();
  });
});
