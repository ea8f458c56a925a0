import 'reflect-metadata';
import { PassThrough } from 'node:stream';
import { IsInt } from 'class-validator';
import { Plugin, Tool, Trellis } from 'trellis';
import { serveMcp, type McpServing } from 'trellis/mcp';

class Add {
  @IsInt() a!: number;
  @IsInt() b!: number;
}

@Plugin({ name: 'calc', version: '1.0.0' })
class Calc {
  @Tool({ name: 'calc.add', description: 'Add two integers.', input: Add })
  add(input: Add) {
    return input.a + input.b;
  }
}

/** A raw JSON-RPC peer over in-memory stdio: what a client writes, line by line, and what the server answers. */
class RawPeer {
  readonly stdin = new PassThrough();
  readonly stdout = new PassThrough();
  private buffer = '';
  private readonly waiting: ((line: Record<string, unknown>) => void)[] = [];
  private readonly lines: Record<string, unknown>[] = [];

  constructor() {
    this.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      this.buffer += chunk;
      for (let i = this.buffer.indexOf('\n'); i >= 0; i = this.buffer.indexOf('\n')) {
        const line = JSON.parse(this.buffer.slice(0, i)) as Record<string, unknown>;
        this.buffer = this.buffer.slice(i + 1);
        const next = this.waiting.shift();
        if (next) next(line);
        else this.lines.push(line);
      }
    });
  }

  write(text: string): void {
    this.stdin.write(text);
  }

  next(): Promise<Record<string, unknown>> {
    const line = this.lines.shift();
    if (line) return Promise.resolve(line);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  async request(id: number, method: string, params: unknown = {}): Promise<Record<string, unknown>> {
    this.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return this.next();
  }
}

const INITIALIZE = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } };

describe('serveMcp over stdio: the lifecycle and bounded messages', () => {
  let app: Trellis;
  let serving: McpServing;
  let peer: RawPeer;
  beforeEach(async () => {
    app = Trellis.create();
    await app.install(Calc);
    peer = new RawPeer();
    serving = await serveMcp(app, { transport: { kind: 'stdio', stdin: peer.stdin, stdout: peer.stdout } });
  });
  afterEach(async () => {
    await serving.close();
    await app.stop();
  });

  it('answers tools/call before initialize with a JSON-RPC error, and runs nothing; after initialize it serves', async () => {
    const early = await peer.request(1, 'tools/call', { name: 'calc.add', arguments: { a: 1, b: 2 } });
    expect(early).toMatchObject({
      id: 1,
      error: { code: -32600, message: expect.stringContaining("send 'initialize' before 'tools/call'") },
    });
    expect(early).not.toHaveProperty('result');
    expect(await peer.request(2, 'initialize', INITIALIZE)).toMatchObject({
      id: 2,
      result: { serverInfo: { name: 'trellis' } },
    });
    peer.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    expect(await peer.request(3, 'tools/call', { name: 'calc.add', arguments: { a: 1, b: 2 } })).toMatchObject({
      id: 3,
      result: { content: [{ type: 'text', text: '3' }] },
    });
  });

  it('is not initialized by an initialize the server refused, nor by an initialize notification', async () => {
    let ran = 0;
    const counted = Trellis.create();
    @Plugin({ name: 'count', version: '1.0.0' })
    class Count {
      @Tool({ name: 'count.up', description: 'Counts. Use in tests.', input: Add })
      up() {
        return ++ran;
      }
    }
    await counted.install(Count);
    const raw = new RawPeer();
    const served = await serveMcp(counted, { transport: { kind: 'stdio', stdin: raw.stdin, stdout: raw.stdout } });
    try {
      raw.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'initialize', params: INITIALIZE })}\n`);
      const refused = await raw.request(1, 'initialize', { protocolVersion: 42 });
      expect(refused).toHaveProperty('error');
      const early = await raw.request(2, 'tools/call', { name: 'count.up', arguments: { a: 1, b: 2 } });
      expect(early).toMatchObject({ id: 2, error: { code: -32600 } });
      expect(ran).toBe(0);
      expect(await raw.request(3, 'initialize', INITIALIZE)).toMatchObject({
        id: 3,
        result: { serverInfo: { name: 'trellis' } },
      });
      expect(await raw.request(4, 'tools/call', { name: 'count.up', arguments: { a: 1, b: 2 } })).toMatchObject({
        id: 4,
        result: { content: [{ text: '1' }] },
      });
    } finally {
      await served.close();
      await counted.stop();
    }
  });

  it('answers a 20 MB message with a JSON-RPC error naming its id, and keeps serving', async () => {
    await peer.request(1, 'initialize', INITIALIZE);
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'calc.add', arguments: { a: 1, b: 2, pad: 'x'.repeat(20 * 1024 * 1024) } },
    });
    // Written in pieces, as a pipe delivers it.
    for (let i = 0; i < huge.length; i += 1 << 20) peer.write(huge.slice(i, i + (1 << 20)));
    peer.write('\n');
    expect(await peer.next()).toMatchObject({
      id: 7,
      error: { code: -32600, message: expect.stringContaining('larger than') },
    });
    expect(await peer.request(8, 'tools/call', { name: 'calc.add', arguments: { a: 2, b: 2 } })).toMatchObject({
      id: 8,
      result: { content: [{ text: '4' }] },
    });
    let closed = false;
    void serving.closed.then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(closed).toBe(false);
  }, 30_000);

  it('answers a line that is not JSON with a parse error, and keeps serving', async () => {
    await peer.request(1, 'initialize', INITIALIZE);
    peer.write('{not json\n');
    expect(await peer.next()).toMatchObject({ id: null, error: { code: -32700 } });
    expect(await peer.request(2, 'tools/list')).toMatchObject({
      id: 2,
      result: { tools: [expect.objectContaining({ name: 'calc.add' })] },
    });
  });
});
