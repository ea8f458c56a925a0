import 'reflect-metadata';
import { Plugin, ScriptedModel, Tool, Trellis, type ChatMessage } from '../../../index.js';

/**
 * Tools declared with a raw `inputSchema` (the path MCP client tools take) get the limits DTO
 * tools have: text over 1 MiB or a value whose JSON would be, nesting deeper than 32 levels,
 * and `__proto__` / `constructor` / `prototype` keys at any depth are refused as `ToolInput`
 * before the tool runs, however permissive the schema.
 */
const runs: unknown[] = [];

const SCHEMAS = {
  open: { type: 'object' },
  declared: { type: 'object', properties: { note: { type: 'string' }, data: {} } },
  explicitlyOpen: { type: 'object', properties: { note: { type: 'string' } }, additionalProperties: true },
} as const;

@Plugin({ name: 'raw', version: '1.0.0' })
class RawPlugin {
  @Tool({ name: 'raw.open', description: 'Takes any object. Tests only.', inputSchema: SCHEMAS.open })
  open(args: Record<string, unknown>) {
    return this.record(args);
  }

  @Tool({ name: 'raw.declared', description: 'Takes a note. Tests only.', inputSchema: SCHEMAS.declared })
  declared(args: Record<string, unknown>) {
    return this.record(args);
  }

  @Tool({
    name: 'raw.explicit',
    description: 'Takes a note and anything else. Tests only.',
    inputSchema: SCHEMAS.explicitlyOpen,
  })
  explicit(args: Record<string, unknown>) {
    return this.record(args);
  }

  private record(args: Record<string, unknown>) {
    // What a careless tool does: copy its arguments onto an options object.
    const options = Object.assign({}, args) as { isAdmin?: unknown };
    runs.push({ isAdmin: options.isAdmin, polluted: Object.getPrototypeOf(options) !== Object.prototype });
    return 'ran';
  }
}

const TOOLS = ['raw.open', 'raw.declared', 'raw.explicit'];

function nestedText(depth: number): string {
  return '{"data":'.repeat(depth) + '1' + '}'.repeat(depth);
}

function nestedValue(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: 1 };
  for (let i = 0; i < depth; i++) value = { data: value };
  return value;
}

function manyKeys(count: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (let i = 0; i < count; i++) out[`k${i}`] = i;
  return out;
}

/** Hostile argument sets, as JSON text (what a model writes) or as a value (what a host passes). */
const HOSTILE: ReadonlyArray<readonly [string, () => string | Record<string, unknown>, RegExp]> = [
  ['a 20 MB string (text)', () => `{"note":"${'x'.repeat(20_000_000)}"}`, /characters/],
  ['a 20 MB string (value)', () => ({ note: 'x'.repeat(20_000_000) }), /characters/],
  ['nesting to 1e6 (text)', () => '['.repeat(1_000_000) + ']'.repeat(1_000_000), /characters/],
  ['nesting to 1e6 (value)', () => nestedValue(1_000_000), /characters|nested deeper/],
  ['nesting to 100,000 (text, under 1 MiB)', () => nestedText(100_000), /nested deeper than 32/],
  ['nesting to 33 (text)', () => nestedText(33), /nested deeper than 32/],
  ['nesting to 33 (value)', () => nestedValue(33), /nested deeper than 32/],
  ['200,000 undeclared keys (text)', () => JSON.stringify(manyKeys(200_000)), /characters/],
  ['200,000 undeclared keys (value)', () => manyKeys(200_000), /characters/],
  ...(['__proto__', 'constructor', 'prototype'] as const).flatMap((key) => [
    [
      `top-level ${key} (text)`,
      () => `{"note":"n","${key}":{"isAdmin":true}}`,
      new RegExp(`${key}: property ${key} should not exist`),
    ] as const,
    [
      `nested ${key} (text)`,
      () => `{"data":{"a":[{"${key}":{"isAdmin":true}}]}}`,
      new RegExp(`data\\.a\\[0\\]\\.${key}`),
    ] as const,
    [
      `top-level ${key} (value)`,
      () => JSON.parse(`{"note":"n","${key}":{"isAdmin":true}}`) as Record<string, unknown>,
      new RegExp(key),
    ] as const,
  ]),
];

async function appWithRawTools() {
  const app = Trellis.create();
  await app.install(RawPlugin);
  return app;
}

beforeEach(() => {
  runs.length = 0;
});

describe('raw inputSchema tools get the argument limits of DTO tools', () => {
  it.each(HOSTILE)(
    '%s: refused as ToolInput by all 3 schemas, through a model turn and a direct call; the tool never runs',
    async (_name, make, message) => {
      const app = await appWithRawTools();
      const args = make();
      for (const tool of TOOLS) {
        // Through a model turn: the model's arguments, as a model writes them (text).
        if (typeof args === 'string') {
          const model = new ScriptedModel([{ toolCalls: [{ name: tool, args }] }, 'done']);
          const result = await app.agent({ name: 'a', model, instructions: 'x' }).session(`s-${tool}`).send('go');
          expect(result.status).toBe('completed');
          const seen = JSON.parse(
            String(model.calls[1]!.messages.find((m: ChatMessage) => m.role === 'tool')!.content),
          ) as { error?: { code: string; message: string } };
          expect(seen.error).toMatchObject({ code: 'ToolInput', message: expect.stringMatching(message) });
        }
        // Directly, as an MCP server or a host calls a tool.
        const direct = await app
          .agent({ name: 'a', model: new ScriptedModel(['x']), instructions: 'x' })
          .session(`d-${tool}`)
          .callTool(tool, args);
        expect(direct).toMatchObject({ status: 'error', error: { code: 'ToolInput' } });
      }
      expect(runs).toEqual([]);
    },
    60_000,
  );

  it('counts: every hostile set refused on every path, and the controls run', async () => {
    const app = await appWithRawTools();
    let refused = 0;
    let tried = 0;
    for (const [, make] of HOSTILE) {
      const args = make();
      for (const tool of TOOLS) {
        tried++;
        const direct = await app
          .agent({ name: 'a', model: new ScriptedModel(['x']), instructions: 'x' })
          .session('c')
          .callTool(tool, args);
        if (direct.status === 'error' && direct.error.code === 'ToolInput') refused++;
      }
    }
    expect({ tried, refused }).toEqual({ tried: HOSTILE.length * 3, refused: HOSTILE.length * 3 });
    // Controls: 32 levels, 1,000 undeclared keys and a 100 kB note still run, on every schema.
    for (const args of [nestedValue(30), manyKeys(1_000), { note: 'n'.repeat(100_000) }]) {
      for (const tool of TOOLS)
        expect(
          await app
            .agent({ name: 'a', model: new ScriptedModel(['x']), instructions: 'x' })
            .session('c')
            .callTool(tool, args),
        ).toMatchObject({ status: 'ok' });
    }
    expect(runs).toHaveLength(9);
    expect(runs.every((r) => (r as { polluted: boolean }).polluted === false)).toBe(true);
  }, 60_000);
});
