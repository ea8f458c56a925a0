import 'reflect-metadata';
import { Plugin, ScriptedModel, Tool, Trellis } from 'trellis';
import { compileJsonSchema } from '../../../src/engine/validation/json-schema-validator.js';

describe('compileJsonSchema', () => {
  it('checks $ref into $defs, oneOf and formats exactly, with field paths', () => {
    const check = compileJsonSchema(
      {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: {
          to: { $ref: '#/$defs/Email' },
          when: { oneOf: [{ type: 'string', format: 'date' }, { type: 'integer' }] },
        },
        required: ['to'],
        $defs: { Email: { type: 'string', format: 'email' } },
      },
      'test',
    );
    expect(check({ to: 'a@b.co', when: 3 })).toEqual({ ok: true, value: { to: 'a@b.co', when: 3 } });
    const bad = check({ to: 'nope', when: true });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.errors.map((e) => e.path)).toEqual(['to', 'when']);
    expect(check({})).toEqual({ ok: false, errors: [{ path: 'to', messages: ['is required'] }] });
  });

  it('refuses a schema that does not compile, naming where it came from', () => {
    expect(() =>
      compileJsonSchema({ type: 'object', properties: { a: { $ref: '#/$defs/Missing' } } }, "tool 'x'"),
    ).toThrow(/tool 'x' cannot be compiled/);
  });
});

describe('@Tool({ inputSchema })', () => {
  it('needs exactly one of input and inputSchema', async () => {
    @Plugin({ name: 'neither', version: '1.0.0' })
    class Neither {
      @Tool({ name: 'neither.t', description: 'x' })
      t() {
        return 1;
      }
    }
    await expect(Trellis.create().install(Neither)).rejects.toThrow(
      /exactly one of input \(a DTO class\) or inputSchema/,
    );
  });

  it('hands the method the checked arguments and turns a mismatch into a ToolInput result', async () => {
    @Plugin({ name: 'mail', version: '1.0.0' })
    class Mail {
      @Tool({
        name: 'mail.send',
        description: 'Send.',
        inputSchema: {
          type: 'object',
          properties: { to: { type: 'string', format: 'email' } },
          required: ['to'],
          additionalProperties: false,
        },
      })
      send(args: { to: string }) {
        return `sent to ${args.to}`;
      }
    }
    const app = Trellis.create();
    await app.install(Mail);
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'mail.send', args: { to: 'x' } },
          { name: 'mail.send', args: { to: 'a@b.co' } },
        ],
      },
      'ok',
    ]);
    const result = await app.agent({ name: 'a', model, instructions: '' }).session().send('mail');
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolInput' } });
    expect(result.toolCalls[1]).toMatchObject({ ok: true, value: 'sent to a@b.co' });
    await app.stop();
  });
});
