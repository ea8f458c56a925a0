import { Subject } from 'rxjs';
import {
  compareWithBaseline,
  evalReport,
  junitXml,
  parseDataset,
  runEval,
  type EvalReport,
  type EvalSession,
} from '../../../eval.js';
import { ScriptedModel, Trellis, type TrellisEvent, type TurnResult } from '../../../index.js';
import { EvalProgress } from '../../../src/hosts/cli/render/eval-progress.js';
import { processIo } from '../../../src/hosts/cli/cli-io.js';
import { PassThrough, Readable } from 'node:stream';

const completed = (reply: string): TurnResult =>
  ({
    status: 'completed',
    reply,
    rounds: 1,
    toolCalls: [],
    usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
  }) as unknown as TurnResult;

/** A session that answers `reply`, or throws `error`. */
function fakeSession(answer: () => Promise<TurnResult>): EvalSession {
  return { events$: new Subject<TrellisEvent>().asObservable(), send: answer };
}

describe('runEval: one failing case never stops the run', () => {
  const cases = parseDataset(
    [
      '{"id":"a","input":"one","expected":{"contains":"ok"}}',
      '{"id":"b","input":"two"}',
      '{"id":"c","input":"three"}',
      '{"id":"d","input":"four","expected":{"contains":"ok"}}',
    ].join('\n'),
    'x.jsonl',
  );

  it('a case whose send throws, or whose session cannot be made, fails alone, saying why; the others are scored', async () => {
    const results = await runEval({
      cases,
      concurrency: 2,
      session: (c) => {
        if (c.id === 'c') throw new Error('no session for you');
        return fakeSession(async () => {
          if (c.id === 'b') throw new Error('the provider is down');
          return completed('ok');
        });
      },
    });
    expect(results.map((r) => [r.id, r.pass])).toEqual([
      ['a', true],
      ['b', false],
      ['c', false],
      ['d', true],
    ]);
    expect(results[1]!.error).toBe('the case did not run: the provider is down');
    expect(results[1]!.scores).toEqual([
      { scorer: 'run', pass: false, score: 0, detail: 'the case did not run: the provider is down' },
    ]);
    expect(results[2]!.error).toContain('no session for you');
  });

  it('a scorer that throws fails its case with the reason; the other scorers still count', async () => {
    const results = await runEval({
      cases: cases.slice(0, 2),
      session: () => fakeSession(async () => completed('ok')),
      scorers: [
        {
          name: 'fragile',
          applies: (c) => c.id === 'a',
          score: () => {
            throw new Error('boom');
          },
        },
      ],
    });
    expect(results[0]!.pass).toBe(false);
    expect(results[0]!.scores.map((s) => [s.scorer, s.pass])).toEqual([
      ['status', true],
      ['contains', true],
      ['fragile', false],
    ]);
    expect(results[0]!.scores[2]!.detail).toBe('the scorer failed: boom');
    expect(results[1]!.pass).toBe(true);
  });

  it('an aborted run starts no more cases and reports them as not run', async () => {
    const controller = new AbortController();
    let sent = 0;
    const results = await runEval({
      cases,
      concurrency: 1,
      signal: controller.signal,
      session: () => fakeSession(async () => (sent++, controller.abort(), completed('ok'))),
    });
    expect(sent).toBe(1);
    expect(results.map((r) => r.error)).toEqual([
      undefined,
      'not run: the eval was cancelled',
      'not run: the eval was cancelled',
      'not run: the eval was cancelled',
    ]);
  });

  it('over a real app, a case whose turn fails (the model throws) fails with the status, and the next case runs', async () => {
    const app = Trellis.create();
    const model = new ScriptedModel((request) => {
      if (request.messages.at(-1)!.content === 'explode') throw new Error('model exploded');
      return 'fine';
    });
    const agent = app.agent({ name: 'a', instructions: 'Answer.', model });
    const results = await runEval({
      cases: parseDataset(
        '{"id":"x","input":"explode"}\n{"id":"y","input":"hello","expected":{"output":"fine"}}',
        'x.jsonl',
      ),
      session: () => agent.session(),
      concurrency: 1,
    });
    expect(results.map((r) => r.pass)).toEqual([false, true]);
    expect(results[0]!.scores[0]!.detail).toMatch(
      /^expected completed, got failed \(ModelFailed|^expected completed, got failed/,
    );
    await app.stop();
  });
});

function report(cases: { id: string; pass: boolean; score: number }[]): EvalReport {
  return evalReport(
    cases.map((c) => ({
      ...c,
      scores: [{ scorer: 'contains', pass: c.pass, score: c.score, detail: c.pass ? 'ok' : 'missing "<b>&\u0001"' }],
      latencyMs: 5,
      tokens: 1,
      reply: 'a <reply> & "quotes"',
      toolCalls: [],
    })),
    { dataset: 'd.jsonl', startedAt: new Date(0), durationMs: 10 },
  );
}

describe('the baseline comparison', () => {
  const base = {
    version: 1 as const,
    dataset: 'd',
    passRate: 1,
    meanScore: 1,
    cases: Object.fromEntries(
      ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].map((id) => [id, { pass: true, score: 1 }]),
    ),
  };
  const run = (failing: number) =>
    report(Object.keys(base.cases).map((id, i) => ({ id, pass: i >= failing, score: i >= failing ? 1 : 0.5 })));

  it('regresses on any fall with threshold 0, and within the threshold it does not', () => {
    expect(compareWithBaseline(base, run(0)).regressed).toBe(false);
    const one = compareWithBaseline(base, run(1));
    expect(one).toMatchObject({
      regressed: true,
      passRateDrop: 0.1,
      meanScoreDrop: 0.05,
      newlyFailing: ['a'],
      lowered: [{ id: 'a', from: 1, to: 0.5 }],
    });
    expect(compareWithBaseline(base, run(1), 0.1).regressed).toBe(false);
    expect(compareWithBaseline(base, run(2), 0.1).regressed).toBe(true);
    expect(() => compareWithBaseline(base, run(0), 1.5)).toThrow(/between 0 and 1/);
  });

  it('new cases and cases the run left out are listed, not counted', () => {
    const partial = report([
      { id: 'a', pass: true, score: 1 },
      { id: 'new', pass: false, score: 0 },
    ]);
    const c = compareWithBaseline(base, partial);
    expect(c.regressed).toBe(false);
    expect(c.added).toEqual(['new']);
    expect(c.missing).toHaveLength(9);
  });
});

describe('JUnit XML', () => {
  it('one testcase a case, a failure per failing scorer, an error for a case that did not run; text escaped', () => {
    const r = report([
      { id: 'ok', pass: true, score: 1 },
      { id: 'bad <1>', pass: false, score: 0 },
    ]);
    const xml = junitXml({
      ...r,
      cases: [
        ...r.cases,
        {
          id: 'crashed',
          pass: false,
          score: 0,
          scores: [{ scorer: 'run', pass: false, score: 0, detail: 'the case did not run: down' }],
          latencyMs: 0,
          tokens: 0,
          reply: '',
          toolCalls: [],
          error: 'the case did not run: down',
        },
      ],
      summary: { ...r.summary, cases: 3, failed: 2 },
    });
    expect(xml).toContain('<testsuites name="trellis eval" tests="3" failures="1" errors="1"');
    expect(xml).toContain('<testcase classname="d.jsonl" name="bad &lt;1&gt;"');
    expect(xml).toContain('<failure type="contains" message="contains: missing &quot;&lt;b&gt;&amp;\ufffd&quot;">');
    expect(xml).toContain('<error type="run" message="run: the case did not run: down">');
    expect(xml).toContain('<system-out>a &lt;reply&gt; &amp; "quotes"</system-out>');
    expect(xml).not.toMatch(/[\u0001]/);
  });
});

describe('progress: redrawn on a terminal, silent elsewhere', () => {
  it('draws a bar with counts on a terminal and clears it at the end', () => {
    const written: string[] = [];
    const progress = new EvalProgress({ write: (t) => void written.push(t), columns: 80 }, 2);
    progress.case({ id: 'a', pass: true, score: 1, scores: [], latencyMs: 1, tokens: 0, reply: '', toolCalls: [] }, 1);
    progress.case({ id: 'b', pass: false, score: 0, scores: [], latencyMs: 1, tokens: 0, reply: '', toolCalls: [] }, 2);
    progress.end();
    expect(written[1]).toMatch(/^\r\u001b\[2K\[█+░+\] 1\/2 {2}✓ 1 {2}✗ 0/);
    expect(written[2]).toMatch(/\] 2\/2 {2}✓ 1 {2}✗ 1/);
    expect(written.at(-1)).toBe('\r\u001b[2K');
  });

  it('the process io offers a terminal only when stderr is a TTY and CI is not set', () => {
    const tty = Object.assign(new PassThrough(), { isTTY: true, columns: 100 });
    const streams = { stdout: new PassThrough(), stderr: tty, stdin: Readable.from([]) };
    expect(processIo(streams, {}, '/').terminal?.columns).toBe(100);
    expect(processIo(streams, { CI: 'true' }, '/').terminal).toBeUndefined();
    expect(processIo({ ...streams, stderr: new PassThrough() }, {}, '/').terminal).toBeUndefined();
  });
});
