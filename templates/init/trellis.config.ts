import type { ModelRequest } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { GreeterPlugin } from './plugins/greeter.plugin.js';

/**
 * Offline, with no API key: calls greeter.hello with the last capitalised word of the
 * message, then answers with what the tool returned.
 */
function offlineReply(request: ModelRequest) {
  const last = request.messages.at(-1);
  if (last?.role === 'tool') return `The greeter says: ${last.content}`;
  const name = last?.content.match(/[A-Z][\p{L}-]*/gu)?.at(-1) ?? 'world';
  return { toolCalls: [{ name: 'greeter.hello', args: { name } }] };
}

const hasKey = Boolean(process.env.OPENAI_API_KEY || process.env.ANTHROPIC_API_KEY);

export default {
  plugins: [GreeterPlugin],
  agent: { name: 'greeter', instructions: 'You greet people. Use the greeter.hello tool.' },
  context: { 'app.locale': 'en' },
  // With OPENAI_API_KEY or ANTHROPIC_API_KEY set, the CLI uses that model instead.
  model: hasKey ? undefined : new ScriptedModel(offlineReply, { name: 'offline' }),
};
