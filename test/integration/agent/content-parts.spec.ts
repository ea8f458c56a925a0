import 'reflect-metadata';
import { IsString } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  ScriptedModel,
  MemoryStore,
  type ToolContext,
  type ModelRequest,
} from '../../../index.js';
import { messageParts, toolContent, MAX_IMAGE_BYTES } from '../../../plugin.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

class ScanInput {
  @IsString() id!: string;
}

@Plugin({ name: 'scans', version: '1.0.0' })
class ScansPlugin {
  @Tool({
    name: 'scans.fetch',
    description: 'Fetches the scan of an invoice as an image. Use when asked about an invoice.',
    input: ScanInput,
  })
  fetch(input: ScanInput, _ctx: ToolContext) {
    return toolContent(
      { type: 'text', text: `Scan of ${input.id}` },
      { type: 'image', data: PNG, mediaType: 'image/png' },
    );
  }
}

@Plugin({ name: 'redact', version: '1.0.0' })
class RedactPlugin {
  @Hook('message.received')
  redact(text: string) {
    return text.replace(/\d{4}-\d{4}/g, '[card]');
  }
}

function lastUser(request: ModelRequest) {
  return [...request.messages].reverse().find((m) => m.role === 'user')!;
}

describe('content parts', () => {
  it('send() takes parts: the model sees the image, hooks and the turn record see the text', async () => {
    const model = new ScriptedModel((request) => {
      const parts = messageParts(lastUser(request));
      return `saw ${parts.map((p) => (p.type === 'image' ? `image:${p.mediaType}:${p.data?.length}` : p.type)).join(',')}`;
    });
    const app = Trellis.create({ store: new MemoryStore() });
    const session = app.agent({ name: 'a', model, instructions: 'x' }).session('s1');
    const result = await session.send([
      { type: 'text', text: 'What is on it?' },
      { type: 'image', data: PNG, mediaType: 'image/png' },
    ]);
    expect(result.reply).toBe(`saw text,image:image/png:${PNG.toString('base64').length}`);
    const user = lastUser(model.calls[0]!);
    expect(user.content).toBe('What is on it?');
    expect(user.parts).toEqual([
      { type: 'text', text: 'What is on it?' },
      { type: 'image', data: PNG.toString('base64'), mediaType: 'image/png' },
    ]);
  });

  it('a message.received rewrite replaces the text parts; the image stays', async () => {
    const model = new ScriptedModel(['ok']);
    const app = Trellis.create();
    await app.install(RedactPlugin);
    await app.start();
    await app
      .agent({ name: 'a', model, instructions: 'x' })
      .session('s5')
      .send([
        { type: 'image', data: PNG, mediaType: 'image/png' },
        { type: 'text', text: 'card 1234-5678' },
      ]);
    expect(lastUser(model.calls[0]!)).toEqual({
      role: 'user',
      content: 'card [card]',
      parts: [
        { type: 'text', text: 'card [card]' },
        { type: 'image', data: PNG.toString('base64'), mediaType: 'image/png' },
      ],
    });
    await app.stop();
  });

  it('keeps the parts in the stored transcript: a new app on the same store shows them to the model', async () => {
    const store = new MemoryStore();
    const first = Trellis.create({ store });
    await first
      .agent({ name: 'a', model: new ScriptedModel(['ok']), instructions: 'x' })
      .session('s2')
      .send([
        { type: 'file', data: Buffer.from('%PDF-1.4 total 42'), mediaType: 'application/pdf', name: 'invoice.pdf' },
        { type: 'text', text: 'Total?' },
      ]);
    const model = new ScriptedModel(['again']);
    await Trellis.create({ store }).agent({ name: 'a', model, instructions: 'x' }).session('s2').send('and now?');
    const earlier = model.calls[0]!.messages.find((m) => m.parts !== undefined)!;
    expect(messageParts(earlier)[0]).toEqual({
      type: 'file',
      data: Buffer.from('%PDF-1.4 total 42').toString('base64'),
      mediaType: 'application/pdf',
      name: 'invoice.pdf',
    });
  });

  it('a tool may return parts: the next model call gets them in the tool message', async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'scans.fetch', args: { id: 'INV-7' }, id: `c_${Math.random().toString(36).slice(2)}` }] },
      'done',
    ]);
    const app = Trellis.create();
    await app.install(ScansPlugin);
    await app.start();
    const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s3').send('Show me INV-7');
    expect(result.status).toBe('completed');
    const tool = model.calls[1]!.messages.find((m) => m.role === 'tool')!;
    expect(messageParts(tool)).toEqual([
      { type: 'text', text: 'Scan of INV-7' },
      { type: 'image', data: PNG.toString('base64'), mediaType: 'image/png' },
    ]);
    await app.stop();
  });

  it('refuses an unsupported media type, an oversized image and a malformed part with clear errors, before the turn runs', async () => {
    const model = new ScriptedModel(['never']);
    const session = Trellis.create().agent({ name: 'a', model, instructions: 'x' }).session('s4');
    await expect(session.send([{ type: 'image', data: PNG, mediaType: 'image/tiff' }])).rejects.toMatchObject({
      code: 'UnsupportedMediaType',
      message: expect.stringContaining('image/tiff'),
    });
    await expect(
      session.send([{ type: 'file', data: Buffer.from('x'), mediaType: 'application/msword', name: 'a.doc' }]),
    ).rejects.toMatchObject({ code: 'UnsupportedMediaType', message: expect.stringContaining('application/msword') });
    await expect(
      session.send([{ type: 'image', data: Buffer.alloc(MAX_IMAGE_BYTES + 1), mediaType: 'image/png' }]),
    ).rejects.toMatchObject({ code: 'ContentTooLarge', details: { limit: MAX_IMAGE_BYTES } });
    await expect(
      session.send([{ type: 'file', data: 'not base64!', mediaType: 'application/pdf', name: 'x.pdf' }]),
    ).rejects.toMatchObject({ code: 'InvalidContent' });
    await expect(
      session.send([{ type: 'file', data: PNG, mediaType: 'application/pdf' } as never]),
    ).rejects.toMatchObject({ code: 'InvalidContent', message: expect.stringContaining('name') });
    await expect(session.send([{ type: 'audio' } as never])).rejects.toMatchObject({ code: 'InvalidContent' });
    expect(model.callCount).toBe(0);
  });
});
