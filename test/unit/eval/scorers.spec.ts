import 'reflect-metadata';
import { IsInt, IsString, Min } from 'class-validator';
import {
  budgetScorer,
  exactScorer,
  jsonScorer,
  parseDataset,
  trajectoryScorer,
  type EvalObservation,
  type ObservedToolCall,
} from '../../../eval.js';
import type { TurnResult } from '../../../index.js';

class OrderView {
  @IsString() id!: string;
  @IsInt() @Min(0) total!: number;
}

function observe(
  line: string,
  reply: string,
  toolCalls: ObservedToolCall[] = [],
  extra: { latencyMs?: number; tokens?: number; rounds?: number } = {},
): EvalObservation {
  const [c] = parseDataset(line, 'x.jsonl');
  const result = {
    status: 'completed',
    reply,
    rounds: extra.rounds ?? 1,
    toolCalls: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: extra.tokens ?? 10 },
  } as unknown as TurnResult;
  return { case: c!, result, reply, toolCalls, latencyMs: extra.latencyMs ?? 5 };
}

const call = (name: string, args: unknown = {}): ObservedToolCall => ({ name, args, ok: true });

describe('the exact scorer', () => {
  it('passes the same text with other surrounding whitespace, fails any other text', () => {
    expect(
      exactScorer.score(observe('{"input":"q","expected":{"output":"Two rows."}}', '  Two rows.\n')),
    ).toMatchObject({ pass: true });
    expect(exactScorer.score(observe('{"input":"q","expected":{"output":"Two rows."}}', 'Two rows'))).toMatchObject({
      pass: false,
      detail: 'expected "Two rows.", got "Two rows"',
    });
  });
});

describe('the JSON scorer (schema, DTO, partial value)', () => {
  const scorer = jsonScorer({ OrderView });
  const line = (expected: object) => JSON.stringify({ input: 'q', expected });

  it('finds the JSON in a fenced block and checks a JSON Schema', async () => {
    const schema = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } };
    expect(await scorer.score(observe(line({ schema }), 'Here:\n```json\n{"id":"o-1"}\n```'))).toMatchObject({
      pass: true,
    });
    expect((await scorer.score(observe(line({ schema }), '{"id":7}'))).detail).toMatch(/schema: .*id.*string/);
  });

  it('validates as a class-validator DTO, refusing unknown fields, and names a DTO it was not given', async () => {
    expect(await scorer.score(observe(line({ dto: 'OrderView' }), '{"id":"o-1","total":3}'))).toMatchObject({
      pass: true,
    });
    expect(
      (await scorer.score(observe(line({ dto: 'OrderView' }), '{"id":"o-1","total":-1,"extra":1}'))).detail,
    ).toMatch(
      /total must not be less than 0.*property extra should not exist|property extra should not exist.*total must not be less than 0/,
    );
    expect((await scorer.score(observe(line({ dto: 'Nope' }), '{}'))).detail).toContain(
      "no DTO named 'Nope' was given to the run (known: OrderView)",
    );
  });

  it('matches a partial value deeply, and fails a reply with no JSON', async () => {
    expect(
      await scorer.score(
        observe(line({ json: { order: { id: 'o-1' } } }), '{"order":{"id":"o-1","total":3},"ok":true}'),
      ),
    ).toMatchObject({ pass: true });
    expect(
      await scorer.score(observe(line({ json: { order: { id: 'o-2' } } }), '{"order":{"id":"o-1"}}')),
    ).toMatchObject({ pass: false });
    expect((await scorer.score(observe(line({ json: {} }), 'no json here'))).detail).toContain(
      'the reply holds no JSON',
    );
  });
});

describe('the trajectory scorer', () => {
  const calls = [
    call('db.search', { sql: 'SELECT 1', limit: 5 }),
    call('db.search', { sql: 'SELECT 2' }),
    call('export.csv', { filename: 'a.csv' }),
  ];
  const line = (toolCalls: object[], toolOrder?: string) =>
    JSON.stringify({ input: 'q', expected: { toolCalls, ...(toolOrder ? { toolOrder } : {}) } });

  it('in-order (default) allows calls in between, but not another order', () => {
    expect(
      trajectoryScorer.score(observe(line([{ name: 'db.search' }, { name: 'export.csv' }]), '', calls)),
    ).toMatchObject({ pass: true, score: 1 });
    expect(
      trajectoryScorer.score(observe(line([{ name: 'export.csv' }, { name: 'db.search' }]), '', calls)),
    ).toMatchObject({ pass: false, score: 0.5 });
  });

  it('exact wants these calls and no others', async () => {
    expect(
      trajectoryScorer.score(
        observe(line([{ name: 'db.search' }, { name: 'db.search' }, { name: 'export.csv' }], 'exact'), '', calls),
      ),
    ).toMatchObject({ pass: true });
    const short = await trajectoryScorer.score(
      observe(line([{ name: 'db.search' }, { name: 'db.search' }], 'exact'), '', calls),
    );
    expect(short.pass).toBe(false);
    expect(short.score).toBeLessThan(1);
  });

  it('any takes any order, each call matched once', () => {
    expect(
      trajectoryScorer.score(observe(line([{ name: 'export.csv' }, { name: 'db.search' }], 'any'), '', calls)),
    ).toMatchObject({ pass: true });
    expect(
      trajectoryScorer.score(observe(line([{ name: 'export.csv' }, { name: 'export.csv' }], 'any'), '', calls)),
    ).toMatchObject({ pass: false, score: 0.5 });
  });

  it('matches arguments partially: the fields given must be equal', () => {
    expect(trajectoryScorer.score(observe(line([{ name: 'db.search', args: { limit: 5 } }]), '', calls))).toMatchObject(
      { pass: true },
    );
    expect(
      trajectoryScorer.score(observe(line([{ name: 'db.search', args: { sql: 'SELECT 3' } }]), '', calls)),
    ).toMatchObject({ pass: false });
  });
});

describe('the budget scorer', () => {
  it('passes within every limit, fails over any, naming it', async () => {
    const line = '{"input":"q","budgets":{"latencyMs":100,"tokens":50,"rounds":2}}';
    expect(budgetScorer.score(observe(line, '', [], { latencyMs: 80, tokens: 50, rounds: 2 }))).toMatchObject({
      pass: true,
      score: 1,
    });
    const over = await budgetScorer.score(observe(line, '', [], { latencyMs: 180, tokens: 51, rounds: 2 }));
    expect(over.pass).toBe(false);
    expect(over.detail).toBe('over: latency 180ms of 100ms, tokens 51 of 50');
    expect(over.score).toBeCloseTo(1 / 3);
  });
});
