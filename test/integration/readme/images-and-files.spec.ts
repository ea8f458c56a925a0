import 'reflect-metadata';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Trellis } from 'trellis';
import { messageParts } from 'trellis/plugin';
import { ScriptedModel } from 'trellis/testing';

// The README's "Images and files", kept in step with it: if this breaks, the README is wrong.
describe('the README image input', () => {
  it('sends text and an image read from a file; the model is shown both', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trellis-readme-'));
    writeFileSync(join(dir, 'invoice.png'), Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'));
    const model = new ScriptedModel((request) => {
      const parts = messageParts(request.messages.at(-1)!);
      return parts.some((p) => p.type === 'image' && p.mediaType === 'image/png')
        ? 'The total is 42 EUR.'
        : 'I see no image.';
    });
    const agent = Trellis.create().agent({ name: 'desk', model, instructions: 'You read invoices.' });

    const scan = await readFile(join(dir, 'invoice.png'));
    const result = await agent.session('s1').send([
      { type: 'text', text: 'What is the total of this invoice?' },
      { type: 'image', data: scan, mediaType: 'image/png' },
    ]);

    expect(result.reply).toBe('The total is 42 EUR.');
    rmSync(dir, { recursive: true, force: true });
  });
});
