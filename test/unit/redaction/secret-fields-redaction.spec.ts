import 'reflect-metadata';
import type { ModelDelta } from '../../../src/contract/model-provider.js';
import { DeltaRedactor } from '../../../src/engine/models/delta-redactor.js';
import { redactMessage } from '../../../src/engine/models/message-redaction.js';
import { redactArguments } from '../../../src/redaction/redactor.js';

const fieldsOf = (tool: string) => (tool === 'vault.login' ? ['memo'] : []);

function streamed(deltas: readonly ModelDelta[]): ModelDelta[] {
  const out: ModelDelta[] = [];
  const redactor = new DeltaRedactor((delta) => out.push(delta), fieldsOf);
  for (const delta of deltas) redactor.push(delta);
  redactor.flush();
  return out;
}

const argsOf = (deltas: readonly ModelDelta[], index: number) =>
  deltas
    .filter((d): d is Extract<ModelDelta, { type: 'tool_call' }> => d.type === 'tool_call' && d.index === index)
    .map((d) => d.argumentsDelta ?? '')
    .join('');

describe('model.delta: a call to a tool with @Secret() fields', () => {
  it('is held whole and sent once, at the end of the model call, with its secret fields redacted', () => {
    const out = streamed([
      { type: 'tool_call', index: 0, id: 'c1', name: 'vault.login' },
      { type: 'tool_call', index: 0, argumentsDelta: '{"user":"ada","me' },
      { type: 'tool_call', index: 0, argumentsDelta: 'mo":"correct horse ' },
      { type: 'tool_call', index: 0, argumentsDelta: 'battery staple"}' },
    ]);
    expect(out[0]).toEqual({ type: 'tool_call', index: 0, id: 'c1', name: 'vault.login', argumentsDelta: undefined });
    expect(argsOf(out, 0)).toBe('{"user":"ada","memo":"[Redacted]"}');
    expect(JSON.stringify(out)).not.toContain('horse');
  });

  it('fails closed on arguments that are not JSON', () => {
    const out = streamed([
      { type: 'tool_call', index: 0, id: 'c1', name: 'vault.login' },
      { type: 'tool_call', index: 0, argumentsDelta: '{"memo":"correct horse' },
    ]);
    expect(argsOf(out, 0)).toBe('[Redacted]');
  });

  it('streams other calls and text as before, beside it', () => {
    const out = streamed([
      { type: 'text', text: 'Logging in. ' },
      { type: 'tool_call', index: 0, id: 'c1', name: 'vault.login', argumentsDelta: '{"memo":"plain words"}' },
      { type: 'tool_call', index: 1, id: 'c2', name: 'notes.add', argumentsDelta: '{"text":"buy ' },
      { type: 'tool_call', index: 1, argumentsDelta: 'milk"}' },
    ]);
    expect(argsOf(out, 1)).toBe('{"text":"buy milk"}');
    expect(argsOf(out, 0)).toBe('{"memo":"[Redacted]"}');
    expect(
      out
        .filter((d) => d.type === 'text')
        .map((d) => (d as { text: string }).text)
        .join(''),
    ).toBe('Logging in. ');
  });
});

describe('redactArguments and redactMessage', () => {
  it('redact a call’s @Secret() fields, secret names and secret shapes, and leave the rest', () => {
    expect(
      JSON.parse(
        redactArguments('{"user":"ada","memo":"plain","apiKey":"k","note":"Bearer 7Fq2vX9pL3mK8rT1"}', ['memo']),
      ),
    ).toEqual({
      user: 'ada',
      memo: '[Redacted]',
      apiKey: '[Redacted]',
      note: 'Bearer [Redacted]',
    });
    expect(redactArguments('not json: pin: 904172')).toBe('not json: pin: [Redacted]');
  });

  it('redact a transcript message: text, text parts, image URLs, call arguments; image bytes stay', () => {
    const message = redactMessage(
      {
        role: 'assistant',
        content: 'token a3f5c9e1b7d2468f0e1c3b5a79d8f6e4c2b0a1d3',
        parts: [
          { type: 'text', text: 'pin: 904172' },
          { type: 'image', url: 'https://u:S3cr3tPa55w0rd@img.example.com/a.png' },
          {
            type: 'image',
            data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg',
            mediaType: 'image/png',
          },
        ],
        toolCalls: [{ id: 'c1', name: 'vault.login', arguments: '{"user":"ada","memo":"plain words"}' }],
      },
      fieldsOf,
    );
    expect(JSON.stringify(message)).not.toMatch(/a3f5c9e1|904172|S3cr3tPa55w0rd|plain words/);
    expect(message.parts?.[2]).toEqual({
      type: 'image',
      data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg',
      mediaType: 'image/png',
    });
    expect(message.toolCalls?.[0]?.arguments).toBe('{"user":"ada","memo":"[Redacted]"}');
  });
});
