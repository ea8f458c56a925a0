import 'reflect-metadata';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { IsString } from 'class-validator';
import {
  AnthropicModel,
  OpenAIModel,
  Plugin,
  Tool,
  Trellis,
  TrellisError,
  type ModelProvider,
  type ModelRequest,
} from '../../../index.js';
import { resolveStreamLimits } from '../../../src/engine/models/stream-guard.js';

/** A local server speaking the vendors' SSE wire formats, one hostile script per request. */
type Script = (res: ServerResponse, req: IncomingMessage) => void | Promise<void>;
const scripts: Script[] = [];
let server: Server;
let baseURL: string;
const sockets = new Set<import('node:net').Socket>();

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const script = scripts.shift();
      if (!script) {
        res.writeHead(500).end('{"error":{"message":"no script"}}');
        return;
      }
      res.writeHead(
        200,
        (script as { headers?: Record<string, string> }).headers ?? {
          'content-type': 'text/event-stream',
          'cache-control': 'no-cache',
        },
      );
      void script(res, req);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

afterEach(() => {
  scripts.length = 0;
});

const WIRE = 'probe__touch';

// --- OpenAI chat completions chunks ---
function chunk(delta: Record<string, unknown>, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'fake', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
}
function call(index: number, args: string, id: string | undefined = `call_${randomUUID()}`): string {
  return chunk({
    tool_calls: [
      { index, ...(id && { id, type: 'function' }), function: { ...(id && { name: WIRE }), arguments: args } },
    ],
  });
}
const DONE = 'data: [DONE]\n\n';

// --- Anthropic messages events ---
function ev(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}
const START = ev('message_start', {
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'fake',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 0 },
  },
});
function toolUse(index: number, args: string, stop = true): string {
  return (
    ev('content_block_start', {
      index,
      content_block: { type: 'tool_use', id: `toolu_${randomUUID()}`, name: WIRE, input: {} },
    }) +
    ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args } }) +
    (stop ? ev('content_block_stop', { index }) : '')
  );
}
function messageEnd(stop: string | null): string {
  return (
    ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }) +
    ev('message_stop', {})
  );
}

/** Writes `text` and ends the response (the stream is cut there when it lacks its end). */
const send =
  (text: string): Script =>
  (res) => {
    res.end(text);
  };
/** Writes `head`, then `bytes` more bytes of one line with no newline, in 64 kB pieces, until the client goes away. */
const hugeLine =
  (head: string, bytes: number): Script =>
  async (res) => {
    res.write(head);
    const piece = 'x'.repeat(65_536);
    for (let sent = 0; sent < bytes && !res.destroyed; sent += piece.length) {
      if (!res.write(piece))
        await new Promise((resolve) => {
          res.once('drain', resolve);
          res.once('close', resolve);
        });
    }
    res.end();
  };
/** Answers 200 with an HTML page, as a proxy, a captive portal or a wrong `baseURL` does. */
const html = (): Script =>
  Object.assign(
    (res: ServerResponse) =>
      void res.end(
        '<!doctype html><html><head><title>Sign in</title></head><body><p>Please sign in to continue.</p></body></html>\n',
      ),
    { headers: { 'content-type': 'text/html; charset=utf-8' } },
  );
/** Writes `head` and then nothing more, holding the connection open. */
const stall =
  (head: string): Script =>
  (res) => {
    res.write(head);
  };

type Expect = { fault: string } | 'runs-once' | 'text' | 'refused';
type Case = readonly [name: string, script: () => Script, expected: Expect];

const OPENAI: readonly Case[] = [
  [
    'a complete call, then the stream is cut (no finish_reason)',
    () => send(call(0, '{"note":"a"}')),
    { fault: 'incomplete' },
  ],
  [
    'a complete call, then [DONE] with no finish_reason',
    () => send(call(0, '{"note":"a"}') + DONE),
    { fault: 'incomplete' },
  ],
  [
    'cut between calls: one complete, the next begun',
    () => send(call(0, '{"note":"a"}') + call(1, '{"no')),
    { fault: 'incomplete' },
  ],
  [
    'cut between calls: two complete, no finish_reason',
    () => send(call(0, '{"note":"a"}') + call(1, '{"note":"b"}')),
    { fault: 'incomplete' },
  ],
  [
    'finish_reason length mid-call',
    () => send(call(0, '{"note":"a') + chunk({}, 'length') + DONE),
    { fault: 'truncated' },
  ],
  [
    'finish_reason length after a whole call',
    () => send(call(0, '{"note":"a"}') + chunk({}, 'length') + DONE),
    { fault: 'truncated' },
  ],
  [
    'finish_reason content_filter with a call',
    () => send(call(0, '{"note":"a"}') + chunk({}, 'content_filter') + DONE),
    { fault: 'truncated' },
  ],
  [
    'tool_calls[].index 1e9',
    () => send(call(1e9, '{"note":"a"}') + chunk({}, 'tool_calls') + DONE),
    { fault: 'index' },
  ],
  [
    'tool_calls[].index 2^32-2',
    () => send(call(2 ** 32 - 2, '{"note":"a"}') + chunk({}, 'tool_calls') + DONE),
    { fault: 'index' },
  ],
  ['tool_calls[].index -1', () => send(call(-1, '{"note":"a"}') + chunk({}, 'tool_calls') + DONE), { fault: 'index' }],
  [
    'tool_calls[].index 1.5',
    () => send(call(1.5, '{"note":"a"}') + chunk({}, 'tool_calls') + DONE),
    { fault: 'index' },
  ],
  [
    'tool_calls[] without an index',
    () =>
      send(
        chunk({
          tool_calls: [
            { id: `call_${randomUUID()}`, type: 'function', function: { name: WIRE, arguments: '{"note":"a"}' } },
          ],
        }) +
          chunk({}, 'tool_calls') +
          DONE,
      ),
    { fault: 'index' },
  ],
  ['an HTML page with status 200', html, { fault: 'format' }],
  [
    'one 50 MB SSE line',
    () => hugeLine(`data: {"id":"c1","choices":[{"index":0,"delta":{"content":"`, 50_000_000),
    { fault: 'line' },
  ],
  ['a stall after the first chunk', () => stall(call(0, '{"note":')), { fault: 'idle' }],
  [
    'a body past maxResponseBytes in small lines',
    () =>
      send(
        Array.from({ length: 40 }, () => chunk({ content: 'y'.repeat(40_000) })).join('') + chunk({}, 'stop') + DONE,
      ),
    { fault: 'size' },
  ],
  [
    'control: a whole call and finish_reason tool_calls',
    () => send(call(0, '{"note":"a"}') + chunk({}, 'tool_calls') + DONE),
    'runs-once',
  ],
  [
    'control: a text reply stopped at length is kept',
    () => send(chunk({ content: 'partial answer' }) + chunk({}, 'length') + DONE),
    'text',
  ],
];

const ANTHROPIC: readonly Case[] = [
  [
    'a complete tool_use, then the stream is cut (no message_delta)',
    () => send(START + toolUse(0, '{"note":"a"}')),
    { fault: 'incomplete' },
  ],
  [
    'cut between blocks: one complete, the next begun',
    () => send(START + toolUse(0, '{"note":"a"}') + toolUse(1, '{"no', false)),
    { fault: 'incomplete' },
  ],
  [
    'message_stop without a stop_reason',
    () => send(START + toolUse(0, '{"note":"a"}') + messageEnd(null)),
    { fault: 'incomplete' },
  ],
  [
    'stop_reason max_tokens mid tool_use',
    () => send(START + toolUse(0, '{"note":"a', false) + messageEnd('max_tokens')),
    { fault: 'truncated' },
  ],
  [
    'stop_reason max_tokens after a whole tool_use',
    () => send(START + toolUse(0, '{"note":"a"}') + messageEnd('max_tokens')),
    { fault: 'truncated' },
  ],
  // A refusal is the model's answer (issue 27): its cut-off tool call is dropped, and the turn ends ModelRefused.
  [
    'stop_reason refusal with a tool_use',
    () => send(START + toolUse(0, '{"note":"a"}') + messageEnd('refusal')),
    'refused',
  ],
  [
    'input_json_delta for a block that never started (the started one has no input)',
    () =>
      send(
        START +
          ev('content_block_start', {
            index: 0,
            content_block: { type: 'tool_use', id: `toolu_${randomUUID()}`, name: WIRE, input: {} },
          }) +
          ev('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"note":"a"}' } }) +
          ev('content_block_stop', { index: 0 }) +
          messageEnd('tool_use'),
      ),
    { fault: 'index' },
  ],
  [
    'a tool_use block without an index',
    () =>
      send(
        START +
          ev('content_block_start', {
            content_block: { type: 'tool_use', id: `toolu_${randomUUID()}`, name: WIRE, input: {} },
          }) +
          ev('content_block_delta', { delta: { type: 'input_json_delta', partial_json: '{"note":"a"}' } }) +
          ev('content_block_stop', {}) +
          messageEnd('tool_use'),
      ),
    { fault: 'index' },
  ],
  [
    'an input_json_delta without an index',
    () =>
      send(
        START +
          ev('content_block_start', {
            index: 0,
            content_block: { type: 'tool_use', id: `toolu_${randomUUID()}`, name: WIRE, input: {} },
          }) +
          ev('content_block_delta', { delta: { type: 'input_json_delta', partial_json: '{"note":"a"}' } }) +
          ev('content_block_stop', { index: 0 }) +
          messageEnd('tool_use'),
      ),
    { fault: 'index' },
  ],
  [
    'two tool_use blocks started at one index',
    () => send(START + toolUse(0, '{"note":"a"}') + toolUse(0, '{"note":"b"}') + messageEnd('tool_use')),
    { fault: 'index' },
  ],
  ['an HTML page with status 200', html, { fault: 'format' }],
  [
    '200 tool_use blocks (past maxToolCalls)',
    () =>
      send(START + Array.from({ length: 200 }, (_, i) => toolUse(i, '{"note":"a"}')).join('') + messageEnd('tool_use')),
    { fault: 'index' },
  ],
  [
    'one 50 MB SSE line',
    () =>
      hugeLine(
        `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`,
        50_000_000,
      ),
    { fault: 'line' },
  ],
  ['a stall after the first event', () => stall(START), { fault: 'idle' }],
  [
    'control: a whole tool_use and stop_reason tool_use',
    () => send(START + toolUse(0, '{"note":"a"}') + messageEnd('tool_use')),
    'runs-once',
  ],
];

let runs = 0;

class TouchInput {
  @IsString() note!: string;
}

@Plugin({ name: 'probe', version: '1.0.0' })
class ProbePlugin {
  @Tool({ name: 'probe.touch', description: 'Records that it ran. Tests only.', input: TouchInput })
  touch() {
    runs++;
    return 'touched';
  }
}

const LIMITS = { idleTimeoutMs: 400, maxLineBytes: 256_000, maxResponseBytes: 1_000_000 };

function openai(): ModelProvider {
  return new OpenAIModel({ model: 'fake', baseURL: `${baseURL}/v1`, apiKey: 'k', maxRetries: 0, stream: LIMITS });
}
function anthropic(): ModelProvider {
  return new AnthropicModel({ model: 'fake', baseURL, apiKey: 'k', maxRetries: 0, stream: LIMITS });
}

function request(): ModelRequest {
  return {
    messages: [{ role: 'user', content: 'touch it' }],
    tools: [{ name: 'probe.touch', description: 'x', inputSchema: { type: 'object' } }],
    inference: {},
  } as unknown as ModelRequest;
}

beforeEach(() => {
  runs = 0;
});

describe.each([
  ['OpenAI-compatible', OPENAI, openai],
  ['Anthropic', ANTHROPIC, anthropic],
] as const)('%s adapter: a stream that ends badly runs no tool', (_vendor, cases, make) => {
  it.each(cases)(
    '%s',
    async (_name, script, expected) => {
      // The adapter alone: a retryable ModelFailed naming the fault, or the response.
      scripts.push(script());
      const direct = make().call(request());
      if (typeof expected === 'object') {
        const error = await direct.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(TrellisError.is(error, 'ModelFailed')).toBe(true);
        expect((error as TrellisError).retryable).toBe(true);
        expect((error as TrellisError).details).toMatchObject({ stream: expected.fault });
      } else {
        const response = await direct;
        expect(response.toolCalls).toHaveLength(expected === 'runs-once' ? 1 : 0);
        if (expected === 'refused') expect(response.refusal).toBeDefined();
      }

      // Through a real turn: no tool runs from a response that did not complete.
      scripts.push(script());
      if (expected === 'runs-once')
        scripts.push(
          send(
            expected === 'runs-once' && make === openai
              ? chunk({ content: 'done' }) + chunk({}, 'stop') + DONE
              : START +
                  ev('content_block_start', { index: 0, content_block: { type: 'text', text: 'done' } }) +
                  messageEnd('end_turn'),
          ),
        );
      const app = Trellis.create();
      await app.install(ProbePlugin);
      const result = await app.agent({ name: 'a', model: make(), instructions: 'x' }).session('s').send('touch it');
      if (typeof expected === 'object') {
        expect(result.status).toBe('failed');
        expect(result.error?.code).toBe('ModelFailed');
        expect(runs).toBe(0);
      } else if (expected === 'refused') {
        expect([result.status, result.error?.code, runs]).toEqual(['failed', 'ModelRefused', 0]);
      } else {
        expect(result.status).toBe('completed');
        expect(runs).toBe(expected === 'runs-once' ? 1 : 0);
      }
    },
    30_000,
  );
});

describe('stream limits', () => {
  it('refuse a 50 MB line with the default limits (4 MiB), without holding it', async () => {
    scripts.push(hugeLine(`data: {"id":"c1","choices":[{"index":0,"delta":{"content":"`, 50_000_000));
    const started = Date.now();
    const error = await new OpenAIModel({ model: 'fake', baseURL: `${baseURL}/v1`, apiKey: 'k', maxRetries: 0 })
      .call(request())
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((error as TrellisError).details).toMatchObject({ stream: 'line' });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('have an idle timeout on by default (2 minutes), and refuse a bad value', () => {
    expect(resolveStreamLimits(undefined, 'x')).toEqual({
      idleTimeoutMs: 120_000,
      maxLineBytes: 4 * 1024 * 1024,
      maxResponseBytes: 32 * 1024 * 1024,
      maxToolCalls: 128,
    });
    expect(() => new OpenAIModel({ model: 'm', stream: { idleTimeoutMs: -1 } })).toThrow(
      /idleTimeoutMs must be a whole number/,
    );
    expect(() => new AnthropicModel({ model: 'm', stream: { maxToolCalls: 0 } })).toThrow(/maxToolCalls/);
  });
});
