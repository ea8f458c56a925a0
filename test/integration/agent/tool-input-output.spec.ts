import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsInt, IsString, Min, ValidateNested } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  ScriptedModel,
  type ToolContext,
  type TrellisEvent,
  type ChatMessage,
} from '../../../index.js';

class Address {
  @IsString() city!: string;
  @IsString() zip!: string;
}

class ShipInput {
  @IsString() orderId!: string;
  @IsInt() @Min(1) quantity!: number;
  @ValidateNested() @Type(() => Address) address!: Address;
}

class ShipView {
  @IsString() trackingId!: string;
}

let runs: ShipInput[] = [];

@Plugin({ name: 'ship', version: '1.0.0' })
class ShipPlugin {
  @Tool({
    name: 'ship.send',
    description: 'Ships an order. Use when asked to ship; not for returns.',
    input: ShipInput,
    output: ShipView,
  })
  send(input: ShipInput, _ctx: ToolContext) {
    runs.push(input);
    return { trackingId: `T-${input.orderId}` };
  }
  @Tool({ name: 'ship.broken', description: 'Returns a malformed view. Tests only.', input: Address, output: ShipView })
  broken() {
    return { trackingId: 42 };
  }
}

const good = { orderId: 'A1', quantity: 2, address: { city: 'Oslo', zip: '0150' } };

function toolMessages(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.filter((m) => m.role === 'tool');
}

beforeEach(() => {
  runs = [];
});

async function setup(script: ConstructorParameters<typeof ScriptedModel>[0]) {
  const app = Trellis.create();
  await app.install(ShipPlugin);
  const model = new ScriptedModel(script);
  const session = app.agent({ name: 'ship', model, instructions: 'Ship things.' }).session('s1');
  return { app, model, session };
}

describe('the JSON Schema the model sees comes from the input DTO', () => {
  it('inlines nested DTOs and forbids additional properties at every level', async () => {
    const { model, session } = await setup(['nothing to do']);
    await session.send('hi');

    const tool = model.calls[0]!.tools.find((t) => t.name === 'ship.send')!;
    expect(tool.description).toBe('Ships an order. Use when asked to ship; not for returns.');
    expect(tool.inputSchema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: expect.arrayContaining(['orderId', 'quantity', 'address']),
      properties: {
        orderId: { type: 'string' },
        quantity: { type: 'integer', minimum: 1 },
        address: {
          type: 'object',
          additionalProperties: false,
          properties: { city: { type: 'string' }, zip: { type: 'string' } },
          required: expect.arrayContaining(['city', 'zip']),
        },
      },
    });
  });
});

describe('bad arguments become a ToolInput result the model can correct', () => {
  it('lists each bad field; the model sees it in the next request and its corrected call runs', async () => {
    const { model, session } = await setup([
      { toolCalls: [{ name: 'ship.send', args: { orderId: 5, quantity: 0, address: { city: 'Oslo' }, extra: true } }] },
      { toolCalls: [{ name: 'ship.send', args: good }] },
      'shipped',
    ]);

    const result = await session.send('ship A1');

    expect(result.status).toBe('completed');
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolInput', retryable: false } });
    const seen = JSON.parse(toolMessages(model.calls[1]!.messages)[0]!.content) as {
      error: { code: string; message: string; retryable: boolean };
    };
    expect(seen.error.code).toBe('ToolInput');
    expect(seen.error.retryable).toBe(false);
    for (const field of ['orderId', 'quantity', 'address.zip', 'extra']) expect(seen.error.message).toContain(field);
    // Only the corrected call ran, with a transformed input.
    expect(runs).toHaveLength(1);
    expect(runs[0]).toBeInstanceOf(ShipInput);
    expect(runs[0]!.address).toBeInstanceOf(Address);
    expect(result.toolCalls[1]).toMatchObject({ ok: true, value: { trackingId: 'T-A1' } });
  });

  it('treats arguments that are not JSON the same way', async () => {
    const { model, session } = await setup([
      { toolCalls: [{ name: 'ship.send', args: '{"orderId": "A1", quantity: ' }] },
      { toolCalls: [{ name: 'ship.send', args: good }] },
      'shipped',
    ]);

    const result = await session.send('ship A1');

    expect(result.status).toBe('completed');
    const seen = JSON.parse(toolMessages(model.calls[1]!.messages)[0]!.content) as {
      error: { code: string; message: string };
    };
    expect(seen.error.code).toBe('ToolInput');
    expect(seen.error.message).toMatch(/JSON/i);
    expect(runs).toHaveLength(1);
  });
});

describe('a result that does not match the output DTO', () => {
  it('becomes a ToolOutput result for the model and a tool.output_invalid event naming the plugin', async () => {
    const { model, session } = await setup([
      { toolCalls: [{ name: 'ship.broken', args: { city: 'Oslo', zip: '1' } }] },
      'sorry',
    ]);
    const events: TrellisEvent[] = [];
    const sub = session.events$.subscribe((e) => events.push(e));

    const result = await session.send('go');
    sub.unsubscribe();

    expect(result.status).toBe('completed');
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolOutput' } });
    const seen = JSON.parse(toolMessages(model.calls[1]!.messages)[0]!.content) as {
      error: { code: string; message: string };
    };
    expect(seen.error.code).toBe('ToolOutput');
    expect(seen.error.message).toContain('trackingId');
    expect(events.find((e) => e.type === 'tool.output_invalid')).toMatchObject({ tool: 'ship.broken', plugin: 'ship' });
  });

  it('passes a matching result through unchanged', async () => {
    const { session } = await setup([{ toolCalls: [{ name: 'ship.send', args: good }] }, 'ok']);
    const result = await session.send('go');
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: { trackingId: 'T-A1' } });
  });
});
