import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/** Which vendor's wire format the server speaks. */
export type FakeVendor = 'openai' | 'anthropic';

/** A tool call the fake model makes; its JSON arguments arrive in the given pieces. */
export interface FakeToolCall {
  readonly id: string;
  /** The name as it appears on the wire (already encoded). */
  readonly name: string;
  readonly argumentPieces: readonly string[];
}

/** A successful streamed answer. */
export interface FakeStreamReply {
  readonly type: 'stream';
  readonly textPieces?: readonly string[];
  readonly toolCalls?: readonly FakeToolCall[];
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number };
  /** After the text, send the vendor's in-stream error event of this type (e.g. `overloaded_error`) and end. */
  readonly errorEvent?: string;
}

/** An HTTP error in the vendor's error body; `retry-after-ms: 1` keeps SDK retries fast. */
export interface FakeErrorReply {
  readonly type: 'error';
  readonly status: number;
  readonly message?: string;
}

/** Starts streaming the given text, then never finishes: for abort and timeout tests. */
export interface FakeStallReply {
  readonly type: 'stall';
  readonly textPieces?: readonly string[];
}

/** Never answers at all, not even headers: for request timeouts. */
export interface FakeHangReply {
  readonly type: 'hang';
}

/** Server-sent-event frames sent verbatim (a vendor's documented stream, replayed). */
export interface FakeRawReply {
  readonly type: 'raw';
  readonly frames: readonly string[];
}

export type FakeReply = FakeStreamReply | FakeErrorReply | FakeStallReply | FakeHangReply | FakeRawReply;

/** One request as the server received it. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Record<string, any>;
  /** The body exactly as the client sent it. */
  readonly raw: string;
}

const MODEL = 'fake-model-001';

/**
 * A local HTTP server on 127.0.0.1 that answers like OpenAI's chat completions or
 * Anthropic's messages endpoint, SSE streaming included, from a queue of scripted replies.
 * Point the real SDK at `baseURL`.
 *
 * @example
 * const server = await FakeVendorServer.start('openai');
 * server.enqueue({ type: 'error', status: 429 }, { type: 'stream', textPieces: ['Hi'] });
 * const model = new OpenAIModel({ model: 'gpt-test', apiKey: 'k', baseURL: server.baseURL });
 */
export class FakeVendorServer {
  readonly requests: RecordedRequest[] = [];
  private readonly queue: FakeReply[] = [];

  private constructor(
    readonly vendor: FakeVendor,
    private readonly server: Server,
    readonly baseURL: string,
  ) {}

  static async start(vendor: FakeVendor): Promise<FakeVendorServer> {
    const server = createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    // The OpenAI SDK appends `/chat/completions` to its base URL; Anthropic's appends `/v1/messages`.
    const fake = new FakeVendorServer(
      vendor,
      server,
      vendor === 'openai' ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`,
    );
    return fake;
  }

  /** Queues replies, answered one per request in order. */
  enqueue(...replies: FakeReply[]): void {
    this.queue.push(...replies);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    this.requests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: raw ? JSON.parse(raw) : {},
      raw,
    });
    const reply = this.queue.shift();
    if (!reply)
      return this.sendError(res, { type: 'error', status: 400, message: 'fake server: no scripted reply left' });
    if (reply.type === 'error') return this.sendError(res, reply);
    if (reply.type === 'hang') return;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (reply.type === 'raw') {
      res.end(reply.frames.join(''));
      return;
    }
    if (reply.type === 'stall') {
      const frames =
        this.vendor === 'openai'
          ? openAIFrames({ type: 'stream', textPieces: reply.textPieces })
          : anthropicFrames({ type: 'stream', textPieces: reply.textPieces });
      // Everything but the closing frames (finish and usage), then silence until the client gives up.
      for (const frame of frames.slice(0, -3)) res.write(frame);
      return;
    }
    const frames = this.vendor === 'openai' ? openAIFrames(reply) : anthropicFrames(reply);
    if (reply.errorEvent) {
      // The error replaces the closing frames, as when a vendor fails mid-answer.
      for (const frame of frames.slice(0, -3)) res.write(frame);
      res.end(this.errorFrame(reply.errorEvent));
      return;
    }
    for (const frame of frames) res.write(frame);
    res.end();
  }

  private errorFrame(type: string): string {
    const error = { type, message: `fake ${type}` };
    return this.vendor === 'openai'
      ? `data: ${JSON.stringify({ error })}\n\n`
      : `event: error\ndata: ${JSON.stringify({ type: 'error', error })}\n\n`;
  }

  private sendError(res: ServerResponse, reply: FakeErrorReply): void {
    const message = reply.message ?? `fake ${reply.status}`;
    const body =
      this.vendor === 'openai'
        ? { error: { message, type: errorType(reply.status), param: null, code: null } }
        : { type: 'error', error: { type: errorType(reply.status), message } };
    res.writeHead(reply.status, { 'content-type': 'application/json', 'retry-after-ms': '1' });
    res.end(JSON.stringify(body));
  }
}

function errorType(status: number): string {
  if (status === 429) return 'rate_limit_error';
  if (status === 401) return 'authentication_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** `data: {chat.completion.chunk}` lines, a usage chunk, then `data: [DONE]`. */
function openAIFrames(reply: FakeStreamReply): string[] {
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: object, finishReason: string | null = null): string =>
    `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created, model: MODEL, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] })}\n\n`;
  const frames = [chunk({ role: 'assistant', content: '' })];
  for (const text of reply.textPieces ?? []) frames.push(chunk({ content: text }));
  (reply.toolCalls ?? []).forEach((call, index) => {
    frames.push(
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
    );
    for (const piece of call.argumentPieces)
      frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  frames.push(chunk({}, reply.toolCalls?.length ? 'tool_calls' : 'stop'));
  const usage = reply.usage ?? { inputTokens: 10, outputTokens: 5 };
  frames.push(
    `data: ${JSON.stringify({
      id: 'chatcmpl-fake',
      object: 'chat.completion.chunk',
      created,
      model: MODEL,
      choices: [],
      usage: {
        prompt_tokens: usage.inputTokens,
        completion_tokens: usage.outputTokens,
        total_tokens: usage.inputTokens + usage.outputTokens,
      },
    })}\n\n`,
  );
  frames.push('data: [DONE]\n\n');
  return frames;
}

/** `event: message_start` … content blocks … `message_delta` with usage, `message_stop`. */
function anthropicFrames(reply: FakeStreamReply): string[] {
  const event = (name: string, data: object): string =>
    `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  const usage = reply.usage ?? { inputTokens: 10, outputTokens: 5 };
  const frames = [
    event('message_start', {
      message: {
        id: 'msg_fake',
        type: 'message',
        role: 'assistant',
        content: [],
        model: MODEL,
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.inputTokens, output_tokens: 1 },
      },
    }),
    event('ping', {}),
  ];
  let block = 0;
  if (reply.textPieces?.length) {
    frames.push(event('content_block_start', { index: block, content_block: { type: 'text', text: '' } }));
    for (const text of reply.textPieces)
      frames.push(event('content_block_delta', { index: block, delta: { type: 'text_delta', text } }));
    frames.push(event('content_block_stop', { index: block++ }));
  }
  for (const call of reply.toolCalls ?? []) {
    frames.push(
      event('content_block_start', {
        index: block,
        content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
      }),
    );
    for (const piece of call.argumentPieces)
      frames.push(
        event('content_block_delta', { index: block, delta: { type: 'input_json_delta', partial_json: piece } }),
      );
    frames.push(event('content_block_stop', { index: block++ }));
  }
  frames.push(
    event('message_delta', {
      delta: { stop_reason: reply.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: usage.outputTokens },
    }),
  );
  frames.push(event('message_stop', {}));
  return frames;
}
