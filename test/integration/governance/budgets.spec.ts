import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IsString } from 'class-validator';
import { Redis } from 'ioredis';
import pg from 'pg';
import { billingPrice } from '../../../plugins/billing/index.js';
import {
  Hook,
  MemoryStore,
  Plugin,
  ScriptedModel,
  SqliteStore,
  suspend,
  Tool,
  Trellis,
  type ModelRequest,
  type ScriptedReply,
  type SessionStore,
  type ToolCallInfo,
  type TrellisEvent,
} from '../../../index.js';
import { PostgresBudgetCounter, RedisBudgetCounter, type BudgetSettings } from '../../../governance.js';
import { haveService, POSTGRES_URL, REDIS_URL } from '../../support/services.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';

const redisUp = await haveService('redis', 'budgets counted across workers in Redis');
const pgUp = await haveService('postgres', 'budgets counted across workers in PostgreSQL');

class Q {
  @IsString() q!: string;
}

let ran: string[] = [];
/** A fixed clock in the middle of a minute: no per-minute window ends while a test runs. */
const MID_MINUTE = 1_800_000_030_000;

@Plugin({ name: 'search', version: '1.0.0', owner: 'team-search' })
class Search {
  @Tool({ name: 'search.find', description: 'Finds.', input: Q })
  async find(input: Q) {
    await new Promise((r) => setTimeout(r, 40));
    ran.push(`find ${input.q}`);
    return 'found';
  }
}

@Plugin({ name: 'search-extra', version: '1.0.0', owner: 'team-search' })
class SearchExtra {
  @Tool({ name: 'search-extra.suggest', description: 'Suggests.', input: Q })
  suggest(input: Q) {
    ran.push(`suggest ${input.q}`);
    return 'suggested';
  }
}

@Plugin({ name: 'notes', version: '1.0.0', owner: 'team-notes' })
class Notes {
  @Tool({ name: 'notes.add', description: 'Adds.', input: Q })
  add(input: Q) {
    ran.push(`note ${input.q}`);
    return 'added';
  }
}

/** A search plugin whose own llm.before hook takes 50 ms every round. */
@Plugin({ name: 'search', version: '1.0.0', owner: 'team-search' })
class SlowHookSearch {
  @Tool({ name: 'search.find', description: 'Finds.', input: Q })
  async find(input: Q) {
    await new Promise((r) => setTimeout(r, 40));
    ran.push(`find ${input.q}`);
    return 'found';
  }

  @Hook('llm.before')
  async warm() {
    await new Promise((r) => setTimeout(r, 50));
  }
}

@Plugin({ name: 'payments', version: '1.0.0', owner: 'team-payments' })
class Payments {
  @Tool({ name: 'payments.refund', description: 'Refunds.', input: Q })
  refund(input: Q) {
    ran.push(`refund ${input.q}`);
    return 'refunded';
  }

  @Hook('tool.gate')
  gate(call: ToolCallInfo) {
    return call.tool === 'payments.refund' ? suspend({ message: 'Refund?' }) : undefined;
  }
}

/** One round asking for `calls` (fresh random ids every time), then an answer. */
function oneRound(calls: { name: string; q: string }[]) {
  return (req: ModelRequest): ScriptedReply =>
    req.messages.at(-1)?.role === 'tool'
      ? 'done'
      : { toolCalls: calls.map((c) => ({ id: `call_${randomUUID()}`, name: c.name, args: { q: c.q } })) };
}

/** Round 1 (the agent's own, 100 tokens) asks for one call; round 2 reads its result: 300 tokens, the tool's plugin's. */
function spendingRound(name: string) {
  return (req: ModelRequest): ScriptedReply =>
    req.messages.at(-1)?.role === 'tool'
      ? { text: 'done', usage: { inputTokens: 280, outputTokens: 20 } }
      : {
          toolCalls: [{ id: `call_${randomUUID()}`, name, args: { q: 'x' } }],
          usage: { inputTokens: 90, outputTokens: 10 },
        };
}

async function appWith(budgets: BudgetSettings, store?: SessionStore) {
  const app = Trellis.create({ budgets, ...(store && { store }) });
  await app.install(Search);
  await app.install(SearchExtra);
  await app.install(Notes);
  return app;
}

const codes = (calls: readonly { ok: boolean; error?: { code: string } }[]) =>
  calls.map((c) => (c.ok ? 'ok' : c.error!.code));

beforeEach(() => {
  ran = [];
});

describe('budgets per plugin and owner, enforced at the point of spend', () => {
  it("counts an owner's tool calls per minute across its plugins: the calls past the limit do not run, and the model and the host are told", async () => {
    const app = await appWith({
      limits: [{ name: 'search-team', owner: 'team-search', toolCallsPerMinute: 3 }],
      now: () => MID_MINUTE,
    });
    const seen: TrellisEvent[] = [];
    app.events$.subscribe((e) => e.type === 'budget.exceeded' && seen.push(e));
    const calls = [
      ...['a', 'b', 'c'].map((q) => ({ name: 'search.find', q })),
      { name: 'search-extra.suggest', q: 'd' },
      { name: 'search.find', q: 'e' },
      { name: 'notes.add', q: 'f' },
    ];
    const result = await app
      .agent({ name: 'desk', model: new ScriptedModel(oneRound(calls)), instructions: '', toolConcurrency: 1 })
      .session('b1')
      .send('go');
    expect(result.status).toBe('completed');
    // Calls run in order here: three of team-search's pass; its next two are refused; team-notes pays nothing.
    expect(ran).toEqual(['find a', 'find b', 'find c', 'note f']);
    const refused = result.toolCalls.filter((c) => !c.ok);
    expect(refused.map((c) => c.tool)).toEqual(['search-extra.suggest', 'search.find']);
    expect(refused[0]!.error).toMatchObject({ code: 'BudgetExceeded', retryable: true });
    expect(refused[0]!.error.message).toContain(
      "Budget 'search-team' of plugin 'search-extra' (owner team-search) is spent: at most 3 tool calls per minute (window: 1 minute)",
    );
    expect(seen).toEqual([
      expect.objectContaining({
        type: 'budget.exceeded',
        plugin: 'search-extra',
        owner: 'team-search',
        limit: 'toolCallsPerMinute',
        max: 3,
        window: '1 minute',
      }),
      expect.objectContaining({
        type: 'budget.exceeded',
        plugin: 'search',
        owner: 'team-search',
        limit: 'toolCallsPerMinute',
        max: 3,
      }),
    ]);
  });

  it('holds under concurrency in one process: 12 sessions at once, limit 5, exactly 5 calls run', async () => {
    const app = await appWith({ limits: [{ plugin: 'search', toolCallsPerMinute: 5 }], now: () => MID_MINUTE });
    const agent = app.agent({
      name: 'desk',
      model: new ScriptedModel(oneRound([{ name: 'search.find', q: 'x' }])),
      instructions: '',
    });
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => agent.session(`c${i}`).send('go')));
    expect(ran).toHaveLength(5);
    expect(results.flatMap((r) => r.toolCalls).filter((c) => c.error?.code === 'BudgetExceeded')).toHaveLength(7);
  });

  it("limits a plugin's tool time per turn: a call that would start past it is refused; the next turn starts afresh", async () => {
    const app = await appWith({ limits: [{ plugin: 'search', toolMsPerTurn: 60 }] });
    let round = 0;
    const model = new ScriptedModel((req: ModelRequest): ScriptedReply => {
      if (req.messages.at(-1)?.role === 'user') round = 0;
      round++;
      return round <= 3
        ? { toolCalls: [{ id: `call_${randomUUID()}`, name: 'search.find', args: { q: `r${round}` } }] }
        : 'done';
    });
    const session = app.agent({ name: 'desk', model, instructions: '' }).session('t1');
    const first = await session.send('go');
    // 40 ms, then 80 ms spent: the third call (past 60 ms) is refused.
    expect(first.toolCalls.map((c) => (c.ok ? 'ok' : c.error.code))).toEqual(['ok', 'ok', 'BudgetExceeded']);
    expect(first.toolCalls[2]!.error!.message).toContain('at most 60 ms of tool time per turn (window: this turn)');
    const second = await session.send('again');
    expect(second.toolCalls.map((c) => (c.ok ? 'ok' : c.error.code))).toEqual(['ok', 'ok', 'BudgetExceeded']);
  });

  it("refuses a plugin's next call once the tokens of model calls reading its results reach tokensPerTurn", async () => {
    const app = await appWith({ limits: [{ name: 'search-tokens', plugin: 'search', tokensPerTurn: 150 }] });
    let round = 0;
    const model = new ScriptedModel((req: ModelRequest): ScriptedReply => {
      if (req.messages.at(-1)?.role === 'user') round = 0;
      round++;
      // Round 1 (the agent's, 100 tokens) asks for search; round 2 reads its result (200 tokens: search's) and asks again.
      if (round <= 2)
        return {
          toolCalls: [{ id: `call_${randomUUID()}`, name: 'search.find', args: { q: `r${round}` } }],
          usage: { inputTokens: round * 90, outputTokens: round * 10 },
        };
      return { text: 'done', usage: { inputTokens: 10, outputTokens: 1 } };
    });
    const result = await app.agent({ name: 'desk', model, instructions: '' }).session('k1').send('go');
    expect(result.toolCalls.map((c) => (c.ok ? 'ok' : c.error.code))).toEqual(['ok', 'BudgetExceeded']);
    expect(result.toolCalls[1]!.error!.message).toContain(
      "Budget 'search-tokens' of plugin 'search' (owner team-search) is spent: at most 150 model tokens per turn",
    );
    // Round 2's 200 and round 3's 11 (it read the refusal, a result of search's tool): 211.
    expect(result.usage.byPlugin!['search']!.totalTokens).toBe(211);
  });

  it('opens a new window each minute', async () => {
    let now = MID_MINUTE;
    const app = await appWith({ limits: [{ plugin: 'search', toolCallsPerMinute: 1 }], now: () => now });
    const agent = app.agent({
      name: 'desk',
      model: new ScriptedModel(oneRound([{ name: 'search.find', q: 'x' }])),
      instructions: '',
    });
    expect((await agent.session('m1').send('go')).toolCalls[0]!.ok).toBe(true);
    expect((await agent.session('m2').send('go')).toolCalls[0]!.error?.code).toBe('BudgetExceeded');
    now += 60_000;
    expect((await agent.session('m3').send('go')).toolCalls[0]!.ok).toBe(true);
  });

  it("limits all of a plugin's time in a turn with msPerTurn: its own hooks count, not only its tools", async () => {
    const run = async (limit: { toolMsPerTurn: number } | { msPerTurn: number }) => {
      const app = Trellis.create({ budgets: { limits: [{ plugin: 'search', ...limit }] } });
      await app.install(SlowHookSearch);
      let round = 0;
      const model = new ScriptedModel((): ScriptedReply =>
        ++round <= 2
          ? { toolCalls: [{ id: `call_${randomUUID()}`, name: 'search.find', args: { q: `r${round}` } }] }
          : 'done',
      );
      return app.agent({ name: 'desk', model, instructions: '' }).session(`w${randomUUID()}`).send('go');
    };
    // Tools only: 40 ms spent before the second call, under 60.
    expect(codes((await run({ toolMsPerTurn: 60 })).toolCalls)).toEqual(['ok', 'ok']);
    // Everything: its llm.before hook (50 ms a round) and its tool (40 ms) are past 60 before the second call.
    const all = await run({ msPerTurn: 60 });
    expect(codes(all.toolCalls)).toEqual(['ok', 'BudgetExceeded']);
    expect(all.toolCalls[1]!.error!.message).toContain(
      'at most 60 ms per turn of its tools, hooks, transforms and the model calls reading its results (window: this turn)',
    );
    expect(all.usage.byPlugin!['search']!.hookMs).toBeGreaterThanOrEqual(140);
  });

  it('keeps counting a per-turn limit across a suspension, resumed in another app', async () => {
    const store = new MemoryStore();
    const open = async (model: ScriptedModel) => {
      const app = Trellis.create({ store, budgets: { limits: [{ plugin: 'search', toolMsPerTurn: 60 }] } });
      await app.install(Search);
      await app.install(Payments);
      return app.agent({ name: 'desk', model, instructions: '' }).session('p1');
    };
    const refund = `call_${randomUUID()}`;
    const call = (name: string, id = `call_${randomUUID()}`) => ({ id, name, args: { q: name } });
    const first = await open(
      new ScriptedModel([
        { toolCalls: [call('search.find')] },
        { toolCalls: [call('search.find'), call('payments.refund', refund)] },
      ]),
    );
    const suspended = await first.send('go');
    expect(suspended.status).toBe('suspended');
    // 80 ms of search's tools in this turn so far.
    const resumed = await (
      await open(new ScriptedModel([{ toolCalls: [call('search.find')] }, 'done']))
    ).resume({ decisions: [{ callId: refund, decision: 'approve' }] });
    expect(resumed.status).toBe('completed');
    expect(codes(resumed.toolCalls)).toEqual(['ok', 'ok', 'ok', 'BudgetExceeded']);
  });

  it("limits an owner's tokens over a window, across sessions, and opens a new window when it ends", async () => {
    let now = MID_MINUTE;
    const app = await appWith({
      limits: [{ name: 'search-tokens', owner: 'team-search', tokens: { max: 500, windowMs: 3_600_000 } }],
      now: () => now,
    });
    const seen: TrellisEvent[] = [];
    app.events$.subscribe((e) => e.type === 'budget.exceeded' && seen.push(e));
    const agent = app.agent({ name: 'desk', model: new ScriptedModel(spendingRound('search.find')), instructions: '' });
    // 0, then 300 spent before each call: both run; 600 before the third.
    expect(codes((await agent.session('t1').send('go')).toolCalls)).toEqual(['ok']);
    expect(codes((await agent.session('t2').send('go')).toolCalls)).toEqual(['ok']);
    const third = await agent.session('t3').send('go');
    expect(codes(third.toolCalls)).toEqual(['BudgetExceeded']);
    expect(third.toolCalls[0]!.error).toMatchObject({ retryable: true });
    expect(third.toolCalls[0]!.error!.message).toContain(
      "Budget 'search-tokens' of plugin 'search' (owner team-search) is spent: at most 500 model tokens caused by its tools' results per 1 hour (window: 1 hour)",
    );
    expect(seen).toEqual([
      expect.objectContaining({
        plugin: 'search',
        owner: 'team-search',
        limit: 'tokens',
        max: 500,
        window: '1 hour',
        spent: 600,
      }),
    ]);
    // The team's other plugin shares the window; team-notes does not.
    expect(
      codes(
        (
          await app
            .agent({ name: 'x', model: new ScriptedModel(spendingRound('search-extra.suggest')), instructions: '' })
            .session('t4')
            .send('go')
        ).toolCalls,
      ),
    ).toEqual(['BudgetExceeded']);
    expect(
      codes(
        (
          await app
            .agent({ name: 'y', model: new ScriptedModel(spendingRound('notes.add')), instructions: '' })
            .session('t5')
            .send('go')
        ).toolCalls,
      ),
    ).toEqual(['ok']);
    now += 3_600_000;
    expect(codes((await agent.session('t6').send('go')).toolCalls)).toEqual(['ok']);
  });

  it("limits cost over a window at the billing plugin's prices", async () => {
    // 300 tokens at 2 credits per 1,000: 0.6 credits per turn of search's.
    const price = billingPrice({ plans: [{ name: 'pro', credits: 100, pricePer1kTokens: 2 }] });
    const app = await appWith({
      price,
      limits: [{ plugin: 'search', cost: { max: 1, windowMs: 86_400_000 } }],
      now: () => MID_MINUTE,
    });
    const agent = app.agent({ name: 'desk', model: new ScriptedModel(spendingRound('search.find')), instructions: '' });
    expect(codes((await agent.session('c1').send('go')).toolCalls)).toEqual(['ok']);
    expect(codes((await agent.session('c2').send('go')).toolCalls)).toEqual(['ok']);
    const third = await agent.session('c3').send('go');
    expect(codes(third.toolCalls)).toEqual(['BudgetExceeded']);
    expect(third.toolCalls[0]!.error!.message).toContain(
      "at most 1 of cost (model tokens caused by its tools' results, at the app's prices) per 1 day",
    );
  });

  it('counts windowed tokens exactly when many sessions spend at once (12 turns, 300 tokens each)', async () => {
    const app = await appWith({
      limits: [{ plugin: 'search', tokens: { max: 3_600, windowMs: 60_000 } }],
      now: () => MID_MINUTE,
    });
    const agent = app.agent({ name: 'desk', model: new ScriptedModel(spendingRound('search.find')), instructions: '' });
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => agent.session(`k${i}`).send('go')));
    // Every call was admitted before any reached the limit; their 12 × 300 tokens were all counted: the 13th is refused.
    expect(results.flatMap((r) => codes(r.toolCalls))).toEqual(Array(12).fill('ok'));
    expect(codes((await agent.session('k12').send('go')).toolCalls)).toEqual(['BudgetExceeded']);
  });

  it('refuses a limit without a target or a number, a bad window, and a cost without a price', () => {
    expect(() => Trellis.create({ budgets: { limits: [{ toolCallsPerMinute: 3 }] } })).toThrow(
      /exactly one of plugin or owner/,
    );
    expect(() => Trellis.create({ budgets: { limits: [{ owner: 'x' }] } })).toThrow(/limits nothing/);
    expect(() => Trellis.create({ budgets: { limits: [{ owner: 'x', toolCallsPerMinute: 0 }] } })).toThrow(
      /positive whole number/,
    );
    expect(() => Trellis.create({ budgets: { limits: [{ owner: 'x', tokens: { max: 10, windowMs: 10 } }] } })).toThrow(
      /tokens.windowMs must be whole milliseconds from 1,000/,
    );
    expect(() =>
      Trellis.create({ budgets: { limits: [{ owner: 'x', tokens: { max: 1.5, windowMs: 60_000 } }] } }),
    ).toThrow(/tokens.max must be a positive whole number/);
    expect(() =>
      Trellis.create({ budgets: { limits: [{ name: 'spend', owner: 'x', cost: { max: 5, windowMs: 60_000 } }] } }),
    ).toThrow(/Budget 'spend' limits cost, but budgets.price is not set/);
  });
});

/** Two apps as two workers on one counter: 10 turns of two calls each, against `toolCallsPerMinute: 7` for the team; then tokens counted by both. */
async function twoWorkers(open: () => Promise<{ budgets: Pick<BudgetSettings, 'counter'>; store?: SessionStore }>) {
  const workers = await Promise.all(
    [open(), open()].map(async (opening) => {
      const { budgets, store } = await opening;
      return appWith(
        {
          ...budgets,
          limits: [
            { owner: 'team-search', toolCallsPerMinute: 7 },
            { plugin: 'notes', tokens: { max: 1_500, windowMs: 60_000 } },
          ],
          now: () => MID_MINUTE,
        },
        store,
      );
    }),
  );
  const agents = workers.map((app) =>
    app.agent({
      name: 'desk',
      model: new ScriptedModel(
        oneRound([
          { name: 'search.find', q: 'x' },
          { name: 'search-extra.suggest', q: 'y' },
        ]),
      ),
      instructions: '',
    }),
  );
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) => agents[i % 2]!.session(`w${i}-${randomUUID()}`).send('go')),
  );
  const calls = results.flatMap((r) => r.toolCalls);
  expect(calls).toHaveLength(20);
  expect(ran).toHaveLength(7);
  expect(calls.filter((c) => c.ok)).toHaveLength(7);
  expect(calls.filter((c) => c.error?.code === 'BudgetExceeded')).toHaveLength(13);
  // Six turns, three on each worker at once, each spending 300 tokens on notes: 1,800 counted between them, so a seventh is refused on either.
  const spenders = workers.map((app) =>
    app.agent({ name: 'notes-desk', model: new ScriptedModel(spendingRound('notes.add')), instructions: '' }),
  );
  const spent = await Promise.all(
    Array.from({ length: 6 }, (_, i) => spenders[i % 2]!.session(`n${i}-${randomUUID()}`).send('go')),
  );
  expect(spent.flatMap((r) => codes(r.toolCalls))).toEqual(Array(6).fill('ok'));
  for (const spender of spenders)
    expect(codes((await spender.session(`n-${randomUUID()}`).send('go')).toolCalls)).toEqual(['BudgetExceeded']);
}

describe('budgets across workers, in the store (no Redis)', () => {
  it('two apps on one SQLite file share their counts: exactly the limit runs, and tokens add up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trellis-budgets-'));
    const stores: SqliteStore[] = [];
    try {
      await twoWorkers(async () => {
        const store = SqliteStore.open(join(dir, 'shared.db'));
        stores.push(store);
        // No counter given: the store counts.
        return { budgets: {}, store };
      });
    } finally {
      for (const store of stores) await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

(pgUp ? describe : describe.skip)('budgets across workers (PostgreSQL)', () => {
  it('two apps with a PostgresBudgetCounter each, on their own pools: exactly the limit runs, and tokens add up', async () => {
    const schemas = new PostgresSchemas();
    const schema = schemas.next();
    const pools = [
      new pg.Pool({ connectionString: POSTGRES_URL, max: 4 }),
      new pg.Pool({ connectionString: POSTGRES_URL, max: 4 }),
    ];
    try {
      let i = 0;
      await twoWorkers(async () => ({
        budgets: { counter: await PostgresBudgetCounter.open({ pool: pools[i++]!, schema }) },
      }));
    } finally {
      await Promise.all(pools.map((p) => p.end()));
      await schemas.dropAll();
    }
  });
});

(redisUp ? describe : describe.skip)('budgets across workers (Redis)', () => {
  it('two apps sharing a Redis counter run exactly the limit between them, and tokens add up', async () => {
    const prefix = `trellis-test-budget-${randomUUID()}`;
    const clients = [new Redis(REDIS_URL), new Redis(REDIS_URL)];
    try {
      let i = 0;
      await twoWorkers(async () => ({ budgets: { counter: new RedisBudgetCounter(clients[i++]!, prefix) } }));
    } finally {
      const keys = await clients[0]!.keys(`${prefix}:*`);
      if (keys.length > 0) await clients[0]!.del(...keys);
      await Promise.all(clients.map((c) => c.quit()));
    }
  });
});
