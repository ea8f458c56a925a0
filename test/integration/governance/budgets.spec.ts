import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { IsString } from 'class-validator';
import { Redis } from 'ioredis';
import { Plugin, RedisBudgetCounter, ScriptedModel, Tool, Trellis, type BudgetSettings, type ModelRequest, type ScriptedReply, type TrellisEvent } from '../../../index.js';
import { haveService, REDIS_URL } from '../../support/services.js';

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

/** One round asking for `calls` (fresh random ids every time), then an answer. */
function oneRound(calls: { name: string; q: string }[]) {
  return (req: ModelRequest): ScriptedReply =>
    req.messages.at(-1)?.role === 'tool' ? 'done' : { toolCalls: calls.map((c) => ({ id: `call_${randomUUID()}`, name: c.name, args: { q: c.q } })) };
}

async function appWith(budgets: BudgetSettings) {
  const app = Trellis.create({ budgets });
  await app.install(Search);
  await app.install(SearchExtra);
  await app.install(Notes);
  return app;
}

beforeEach(() => {
  ran = [];
});

describe('budgets per plugin and owner, enforced at the point of spend', () => {
  it("counts an owner's tool calls per minute across its plugins: the calls past the limit do not run, and the model and the host are told", async () => {
    const app = await appWith({ limits: [{ name: 'search-team', owner: 'team-search', toolCallsPerMinute: 3 }], now: () => MID_MINUTE });
    const seen: TrellisEvent[] = [];
    app.events$.subscribe((e) => e.type === 'budget.exceeded' && seen.push(e));
    const calls = [...['a', 'b', 'c'].map((q) => ({ name: 'search.find', q })), { name: 'search-extra.suggest', q: 'd' }, { name: 'search.find', q: 'e' }, { name: 'notes.add', q: 'f' }];
    const result = await app.agent({ name: 'desk', model: new ScriptedModel(oneRound(calls)), instructions: '', toolConcurrency: 1 }).session('b1').send('go');
    expect(result.status).toBe('completed');
    // Calls run in order here: three of team-search's pass; its next two are refused; team-notes pays nothing.
    expect(ran).toEqual(['find a', 'find b', 'find c', 'note f']);
    const refused = result.toolCalls.filter((c) => !c.ok);
    expect(refused.map((c) => c.tool)).toEqual(['search-extra.suggest', 'search.find']);
    expect(refused[0]!.error).toMatchObject({ code: 'BudgetExceeded', retryable: true });
    expect(refused[0]!.error!.message).toContain("Budget 'search-team' of plugin 'search-extra' (owner team-search) is spent: at most 3 tool calls per minute (window: 1 minute)");
    expect(seen).toEqual([
      expect.objectContaining({ type: 'budget.exceeded', plugin: 'search-extra', owner: 'team-search', limit: 'toolCallsPerMinute', max: 3, window: '1 minute' }),
      expect.objectContaining({ type: 'budget.exceeded', plugin: 'search', owner: 'team-search', limit: 'toolCallsPerMinute', max: 3 }),
    ]);
  });

  it('holds under concurrency in one process: 12 sessions at once, limit 5, exactly 5 calls run', async () => {
    const app = await appWith({ limits: [{ plugin: 'search', toolCallsPerMinute: 5 }], now: () => MID_MINUTE });
    const agent = app.agent({ name: 'desk', model: new ScriptedModel(oneRound([{ name: 'search.find', q: 'x' }])), instructions: '' });
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
      return round <= 3 ? { toolCalls: [{ id: `call_${randomUUID()}`, name: 'search.find', args: { q: `r${round}` } }] } : 'done';
    });
    const session = app.agent({ name: 'desk', model, instructions: '' }).session('t1');
    const first = await session.send('go');
    // 40 ms, then 80 ms spent: the third call (past 60 ms) is refused.
    expect(first.toolCalls.map((c) => (c.ok ? 'ok' : c.error!.code))).toEqual(['ok', 'ok', 'BudgetExceeded']);
    expect(first.toolCalls[2]!.error!.message).toContain('at most 60 ms of tool time per turn (window: this turn)');
    const second = await session.send('again');
    expect(second.toolCalls.map((c) => (c.ok ? 'ok' : c.error!.code))).toEqual(['ok', 'ok', 'BudgetExceeded']);
  });

  it("refuses a plugin's next call once the tokens of model calls reading its results reach tokensPerTurn", async () => {
    const app = await appWith({ limits: [{ name: 'search-tokens', plugin: 'search', tokensPerTurn: 150 }] });
    let round = 0;
    const model = new ScriptedModel((req: ModelRequest): ScriptedReply => {
      if (req.messages.at(-1)?.role === 'user') round = 0;
      round++;
      // Round 1 (the agent's, 100 tokens) asks for search; round 2 reads its result (200 tokens: search's) and asks again.
      if (round <= 2) return { toolCalls: [{ id: `call_${randomUUID()}`, name: 'search.find', args: { q: `r${round}` } }], usage: { inputTokens: round * 90, outputTokens: round * 10 } };
      return { text: 'done', usage: { inputTokens: 10, outputTokens: 1 } };
    });
    const result = await app.agent({ name: 'desk', model, instructions: '' }).session('k1').send('go');
    expect(result.toolCalls.map((c) => (c.ok ? 'ok' : c.error!.code))).toEqual(['ok', 'BudgetExceeded']);
    expect(result.toolCalls[1]!.error!.message).toContain("Budget 'search-tokens' of plugin 'search' (owner team-search) is spent: at most 150 model tokens per turn");
    // Round 2's 200 and round 3's 11 (it read the refusal, a result of search's tool): 211.
    expect(result.usage.byPlugin!['search']!.totalTokens).toBe(211);
  });

  it('opens a new window each minute', async () => {
    let now = MID_MINUTE;
    const app = await appWith({ limits: [{ plugin: 'search', toolCallsPerMinute: 1 }], now: () => now });
    const agent = app.agent({ name: 'desk', model: new ScriptedModel(oneRound([{ name: 'search.find', q: 'x' }])), instructions: '' });
    expect((await agent.session('m1').send('go')).toolCalls[0]!.ok).toBe(true);
    expect((await agent.session('m2').send('go')).toolCalls[0]!.error?.code).toBe('BudgetExceeded');
    now += 60_000;
    expect((await agent.session('m3').send('go')).toolCalls[0]!.ok).toBe(true);
  });

  it('refuses a limit without a target or a number', () => {
    expect(() => Trellis.create({ budgets: { limits: [{ toolCallsPerMinute: 3 }] } })).toThrow(/exactly one of plugin or owner/);
    expect(() => Trellis.create({ budgets: { limits: [{ owner: 'x' }] } })).toThrow(/limits nothing/);
    expect(() => Trellis.create({ budgets: { limits: [{ owner: 'x', toolCallsPerMinute: 0 }] } })).toThrow(/positive whole number/);
  });
});

let redisUp = false;
beforeAll(async () => {
  redisUp = await haveService('redis', 'budgets counted across workers in Redis');
});

describe('budgets across workers (Redis)', () => {
  it('two apps (as two workers) sharing a Redis counter run exactly the limit between them, 20 concurrent calls, limit 7', async () => {
    if (!redisUp) return;
    const prefix = `trellis-test-budget-${randomUUID()}`;
    const clients = [new Redis(REDIS_URL), new Redis(REDIS_URL)];
    try {
      const workers = await Promise.all(clients.map((redis) => appWith({ limits: [{ owner: 'team-search', toolCallsPerMinute: 7 }], counter: new RedisBudgetCounter(redis, prefix), now: () => MID_MINUTE })));
      const agents = workers.map((app) => app.agent({ name: 'desk', model: new ScriptedModel(oneRound([{ name: 'search.find', q: 'x' }, { name: 'search-extra.suggest', q: 'y' }])), instructions: '' }));
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => agents[i % 2]!.session(`w${i}`).send('go')));
      const calls = results.flatMap((r) => r.toolCalls);
      expect(calls).toHaveLength(20);
      expect(ran).toHaveLength(7);
      expect(calls.filter((c) => c.ok)).toHaveLength(7);
      expect(calls.filter((c) => c.error?.code === 'BudgetExceeded')).toHaveLength(13);
    } finally {
      const keys = await clients[0]!.keys(`${prefix}:*`);
      if (keys.length > 0) await clients[0]!.del(...keys);
      await Promise.all(clients.map((c) => c.quit()));
    }
  });
});
