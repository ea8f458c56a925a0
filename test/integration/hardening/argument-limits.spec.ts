import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Min, ValidateNested } from 'class-validator';
import { Trellis, Plugin, Tool, ScriptedModel, type ChatMessage } from '../../../index.js';

class Address {
  @IsString() city!: string;
  @IsOptional() @ValidateNested() @Type(() => Address) next?: Address;
}

class ShipInput {
  @IsString() orderId!: string;
  @IsInt() @Min(1) quantity!: number;
  @IsOptional() @ValidateNested() @Type(() => Address) address?: Address;
}

let runs = 0;

@Plugin({ name: 'ship', version: '1.0.0' })
class ShipPlugin {
  @Tool({ name: 'ship.send', description: 'Ships an order. Tests only.', input: ShipInput })
  send() {
    runs += 1;
    return { ok: true };
  }
}

/** Sends one raw argument text to `ship.send` and returns what the model read back. */
async function callWith(rawArguments: string): Promise<{ status: string; content: string }> {
  const app = Trellis.create();
  await app.install(ShipPlugin);
  const model = new ScriptedModel([{ toolCalls: [{ name: 'ship.send', args: rawArguments }] }, 'done']);
  const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('go');
  const tool = model.calls[1]!.messages.find((m: ChatMessage) => m.role === 'tool')!;
  return { status: result.status, content: String(tool.content) };
}

function nested(depth: number, leaf = '{"city":"Oslo"}'): string {
  return '{"city":"Oslo","next":'.repeat(depth) + leaf + '}'.repeat(depth);
}

beforeEach(() => {
  runs = 0;
});

describe('arguments nested too deep come back as a ToolInput result', () => {
  it.each([
    ['inside a declared nested DTO', `{"orderId":"A","quantity":1,"address":${nested(3000)}}`],
    [
      'as an array in an undeclared field',
      `{"orderId":"A","quantity":1,"junk":${'['.repeat(3000)}${']'.repeat(3000)}}`,
    ],
    [
      'as objects in an undeclared field',
      `{"orderId":"A","quantity":1,"junk":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`,
    ],
  ])('%s: the turn completes and the tool never runs', async (_name, raw) => {
    const { status, content } = await callWith(raw);
    expect(status).toBe('completed');
    expect(JSON.parse(content)).toEqual({
      error: expect.objectContaining({
        code: 'ToolInput',
        message: expect.stringMatching(/nested deeper than 32 levels/),
      }),
    });
    expect(runs).toBe(0);
  });

  it('moderate nesting inside the limit still validates and runs', async () => {
    const { content } = await callWith(`{"orderId":"A","quantity":1,"address":${nested(10)}}`);
    expect(JSON.parse(content)).toEqual({ ok: true });
    expect(runs).toBe(1);
  });
});

describe('arguments larger than the limit are refused before parsing into a DTO', () => {
  it('a 2 MB argument text is a ToolInput result naming the limit', async () => {
    const { content } = await callWith(JSON.stringify({ orderId: 'x'.repeat(2_000_000), quantity: 1 }));
    expect(JSON.parse(content).error).toMatchObject({
      code: 'ToolInput',
      message: expect.stringMatching(/1048576 characters/),
    });
    expect(runs).toBe(0);
  });
});

describe('prototype keys are refused like any undeclared property', () => {
  it.each(['__proto__', 'constructor', 'prototype'])(
    'a top-level %s key (raw JSON text) is refused and the tool does not run',
    async (key) => {
      const { content } = await callWith(`{"orderId":"A","quantity":1,"${key}":{"isAdmin":true}}`);
      expect(JSON.parse(content).error).toMatchObject({
        code: 'ToolInput',
        message: expect.stringContaining(`- ${key}:`),
      });
      expect(runs).toBe(0);
    },
  );

  it('a nested __proto__ key inside a DTO is refused with its path', async () => {
    const { content } = await callWith(
      '{"orderId":"A","quantity":1,"address":{"city":"Oslo","__proto__":{"polluted":1}}}',
    );
    expect(JSON.parse(content).error).toMatchObject({
      code: 'ToolInput',
      message: expect.stringContaining('- address.__proto__:'),
    });
    expect(runs).toBe(0);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
