import type { ChatMessage } from '../../../index.js';
import { toolContent } from '../../../plugin.js';
import { estimateMessageTokens, MEDIA_PART_TOKENS } from '../../../plugins/memory/token-estimate.js';

describe('memory token estimates of messages with images and files', () => {
  it('count an image or file at a flat MEDIA_PART_TOKENS, not by its base64 length, in user and tool messages', () => {
    const big = Buffer.alloc(1024 * 1024).toString('base64');
    const user: ChatMessage = {
      role: 'user',
      content: 'abcdefgh',
      parts: [
        { type: 'text', text: 'abcdefgh' },
        { type: 'image', data: big, mediaType: 'image/png' },
      ],
    };
    const tool: ChatMessage = {
      role: 'tool',
      toolCallId: 'c',
      name: 't',
      content: JSON.stringify(toolContent({ type: 'file', data: big, mediaType: 'application/pdf', name: 'a.pdf' })),
    };
    expect(estimateMessageTokens(user)).toBe(2 + MEDIA_PART_TOKENS);
    expect(estimateMessageTokens(tool)).toBe(MEDIA_PART_TOKENS);
    expect(estimateMessageTokens({ role: 'user', content: 'abcdefgh' })).toBe(2);
  });
});
