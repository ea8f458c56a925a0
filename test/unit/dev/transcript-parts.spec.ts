import type { ChatMessage } from '../../../index.js';
import type { StoredSession } from '../../../stores.js';
import { toolContent } from '../../../plugin.js';
import { transcriptLines } from '../../../src/hosts/cli/render/transcript.js';
import { transcriptView } from '../../../src/hosts/dev/views/transcript-view.js';

const PNG64 = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
const PDF64 = Buffer.alloc(2048, 1).toString('base64');

const transcript: ChatMessage[] = [
  {
    role: 'user',
    content: 'Total? <b>',
    parts: [
      { type: 'text', text: 'Total? <b>' },
      { type: 'image', data: PNG64, mediaType: 'image/png' },
      { type: 'file', data: PDF64, mediaType: 'application/pdf', name: 'inv"<oice>.pdf' },
      { type: 'image', url: 'https://example.com/x.png?a="1"&b=<2>' },
    ],
  },
  {
    role: 'tool',
    toolCallId: 'c1',
    name: 'scans.fetch',
    content: JSON.stringify(
      toolContent({ type: 'text', text: 'scan' }, { type: 'image', data: PNG64, mediaType: 'image/png' }),
    ),
  },
];

describe('transcript views of content parts', () => {
  it('the dev page shows an image as <img> from a data: URL, and files and image URLs as escaped placeholders', () => {
    const page = transcriptView(transcript).toString();
    expect(page).toContain(`<img src="data:image/png;base64,${PNG64}" alt="[image image/png, 8 B]">`);
    expect(page).toContain('[file inv&quot;&lt;oice&gt;.pdf application/pdf, 2.0 KB]');
    expect(page).toContain('[image https://example.com/x.png?a=&quot;1&quot;&amp;b=&lt;2&gt;]');
    expect(page).toContain('Total? &lt;b&gt;');
    // The tool's image too; and no raw markup from any stored value.
    expect(page.split('<img ').length - 1).toBe(2);
    expect(page).not.toContain('<oice>');
    expect(page).not.toContain('"1"');
  });

  it('does not turn a tampered part into markup: an unknown media type or non-base64 data stays a placeholder', () => {
    const bad: ChatMessage[] = [
      {
        role: 'user',
        content: '',
        parts: [
          { type: 'image', data: '"><script>alert(1)</script>', mediaType: 'image/png' },
          { type: 'image', data: PNG64, mediaType: 'image/svg+xml' },
        ],
      },
    ];
    const page = transcriptView(bad).toString();
    expect(page).not.toContain('<img');
    expect(page).not.toContain('<script>');
  });

  it('sessions show prints a placeholder with media type, name and size for each image and file', () => {
    const session = {
      id: 's1',
      agent: 'desk',
      revision: 1,
      createdAt: '',
      updatedAt: '',
      state: {},
      turns: [],
      transcript,
      suspension: null,
    } as unknown as StoredSession;
    const text = transcriptLines(session).join('\n');
    expect(text).toContain('user: Total? <b>');
    expect(text).toContain('[image image/png, 8 B]');
    expect(text).toContain('[file inv"<oice>.pdf application/pdf, 2.0 KB]');
    expect(text).toContain('tool scans.fetch (c1): scan');
    expect(text).not.toContain(PDF64);
  });
});
