import 'reflect-metadata';
import { jest } from '@jest/globals';
import {
  MemoryStore,
  Plugin,
  ScriptedModel,
  Tool,
  Trellis,
  type ModelRequest,
  type ScriptedReply,
} from '../../../index.js';
import { DELEGATION } from '../../../src/agent/delegation/delegation-extension.js';

/**
 * Delegation is an extension a turn runs only when its agent has `agents` or `handoffs` (or a
 * handoff gave it the session): a plain turn calls none of it. The architecture side (the turn
 * loop imports no delegation file) is pinned in test/unit/architecture/folder-layers.spec.ts.
 */
@Plugin({ name: 'clock', version: '1.0.0' })
class ClockPlugin {
  @Tool({
    name: 'clock.now',
    description: 'The time.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  })
  now() {
    return '12:00';
  }
}

const lastMessage = (request: ModelRequest) => request.messages.at(-1)!;

/** Asks for the clock, then answers with what it read. */
const clockModel = (name: string) =>
  new ScriptedModel(
    (request): ScriptedReply => {
      const last = lastMessage(request);
      if (last.role === 'tool' && last.content.includes('12:00')) return `${name}: it is ${last.content}`;
      return { toolCalls: [{ id: `c${Math.random().toString(36).slice(2)}`, name: 'clock.now', args: {} }] };
    },
    { name: `${name}-model` },
  );

function spies() {
  return (['extendEnv', 'history', 'handOver', 'rollUpUsage'] as const).map(
    (method) => [method, jest.spyOn(DELEGATION, method)] as const,
  );
}

afterEach(() => jest.restoreAllMocks());

describe('delegation is a turn extension', () => {
  it('a plain turn (a tool call, the answer, a second turn on the stored session) calls nothing of it', async () => {
    const watched = spies();
    const app = Trellis.create({ store: new MemoryStore() });
    await app.install(ClockPlugin);
    const session = app.agent({ name: 'plain', model: clockModel('plain'), instructions: 'x' }).session('p1');
    const first = await session.send('What time is it?');
    const second = await session.send('And now?');
    expect([first.reply, second.reply]).toEqual(['plain: it is 12:00', 'plain: it is 12:00']);
    expect(first.toolCalls.map((c) => c.tool)).toEqual(['clock.now']);
    expect(first.usage.byAgent).toBeUndefined();
    expect(watched.filter(([, spy]) => spy.mock.calls.length > 0).map(([method]) => method)).toEqual([]);
    await app.stop();
  });

  it('an agent with handoffs runs it: its tools in the view, the handoff, the usage by agent (the spies see calls)', async () => {
    const watched = new Map(spies());
    const app = Trellis.create({ store: new MemoryStore() });
    await app.install(ClockPlugin);
    const triageModel = new ScriptedModel(
      (request): ScriptedReply => {
        const last = lastMessage(request);
        if (last.role === 'user')
          return {
            toolCalls: [
              {
                id: `h${Math.random().toString(36).slice(2)}`,
                name: 'handoff_to_clerk',
                args: { input: 'time question' },
              },
            ],
          };
        return 'triage: done';
      },
      { name: 'triage-model' },
    );
    const triage = app.agent({ name: 'triage', model: triageModel, instructions: 'x', handoffs: [{ agent: 'clerk' }] });
    // The clerk delegates nothing: after the handoff its turns run the extension for the session's sake (history, usage).
    app.agent({ name: 'clerk', model: clockModel('clerk'), instructions: 'x' });
    const session = triage.session('d1');
    const first = await session.send('What time is it?');
    expect(first.reply).toBe('clerk: it is 12:00');
    expect(Object.keys(first.usage.byAgent ?? {}).sort()).toEqual(['clerk', 'triage']);
    expect(watched.get('extendEnv')!.mock.calls.length).toBeGreaterThan(0);
    expect(watched.get('handOver')!).toHaveBeenCalledTimes(1);
    expect(watched.get('rollUpUsage')!.mock.calls.length).toBeGreaterThan(0);
    const historyCalls = watched.get('history')!.mock.calls.length;
    const second = await session.send('And now?');
    expect(second.reply).toBe('clerk: it is 12:00');
    expect(session.activeAgent).toBe('clerk');
    expect(watched.get('history')!.mock.calls.length).toBeGreaterThan(historyCalls);
    await app.stop();
  });
});
