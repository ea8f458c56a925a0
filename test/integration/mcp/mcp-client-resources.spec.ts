import 'reflect-metadata';
import { Hook, Plugin, ScriptedModel, suspend, Trellis, type ToolCallInfo } from 'trellis';
import { McpServerClient, type McpElicitation } from 'trellis/mcp';
import { TRIP_SERVER } from '../../support/mcp-peers.js';

const stdio = { command: process.execPath, args: [TRIP_SERVER] };

describe("MCP client: a server's resources, prompts and elicitation (server built with the SDK)", () => {
  let app: Trellis;
  afterEach(async () => app?.stop());

  it('lists and reads resources in code, and offers them to the model as list_resources / read_resource tools', async () => {
    app = Trellis.create();
    const mcp = await McpServerClient.connect(app, 'trips', stdio);
    expect(await mcp.listResources()).toEqual([
      expect.objectContaining({ uri: 'trips://itinerary/oslo', name: 'itinerary', mimeType: 'text/plain' }),
    ]);
    expect((await mcp.readResource('trips://itinerary/oslo')).contents).toEqual([
      { uri: 'trips://itinerary/oslo', text: 'Day 1: fjord. Day 2: museum.' },
    ]);
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'trips.list_resources', args: {} }] },
      { toolCalls: [{ name: 'trips.read_resource', args: { uri: 'trips://itinerary/oslo' } }] },
      'Here is the plan.',
    ]);
    const result = await app.agent({ name: 'a', model, instructions: '' }).session().send('What is the Oslo plan?');
    expect(result.toolCalls.map((c) => c.value)).toEqual([
      [
        {
          uri: 'trips://itinerary/oslo',
          name: 'itinerary',
          description: 'Four nights in Oslo.',
          mimeType: 'text/plain',
        },
      ],
      'Day 1: fjord. Day 2: museum.',
    ]);
    expect(
      app
        .describe()
        .plugins.find((p) => p.name === 'trips')!
        .tools.find((t) => t.name === 'trips.read_resource')!.tags,
    ).toContain('mcp-resource');
  });

  it('lists prompts and fills one in; its text is a message a session takes', async () => {
    app = Trellis.create();
    const mcp = await McpServerClient.connect(app, 'trips', stdio);
    expect(await mcp.listPrompts()).toEqual([
      expect.objectContaining({
        name: 'plan_prompt',
        description: 'Ask for a trip plan.',
        arguments: [expect.objectContaining({ name: 'city', required: true })],
      }),
    ]);
    const prompt = await mcp.getPrompt('plan_prompt', { city: 'Rome' });
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Plan four nights in Rome.' } }]);
    const model = new ScriptedModel((req) => `You asked: ${req.messages.at(-1)!.content}`);
    const text = (prompt.messages[0]!.content as { text: string }).text;
    expect((await app.agent({ name: 'a', model, instructions: '' }).session().send(text)).reply).toBe(
      'You asked: Plan four nights in Rome.',
    );
  });

  it("answers a server's elicitation during a call through onElicitation; the call itself went through the gate first", async () => {
    app = Trellis.create();
    const questions: McpElicitation[] = [];
    await McpServerClient.connect(app, 'trips', stdio, {
      onElicitation: (question) => {
        questions.push(question);
        return { action: 'accept', content: { confirm: true } };
      },
    });
    @Plugin({ name: 'gatekeeper', version: '1.0.0' })
    class Gatekeeper {
      @Hook('tool.gate')
      gate(call: ToolCallInfo) {
        return call.tool === 'trips.book' ? suspend('Let the agent book?') : undefined;
      }
    }
    await app.install(Gatekeeper);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'trips.book', args: { city: 'Oslo' } }] }, 'ok']);
    const session = app.agent({ name: 'a', model, instructions: '' }).session();
    const parked = await session.send('Book Oslo');
    expect(parked.status).toBe('suspended');
    expect(questions).toEqual([]);
    const result = await session.resume({ decisions: [{ callId: parked.suspended![0]!.callId, decision: 'approve' }] });
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: 'booked Oslo' });
    expect(questions).toEqual([
      expect.objectContaining({
        server: 'trips',
        message: 'Book Oslo?',
        requestedSchema: expect.objectContaining({ required: ['confirm'] }),
      }),
    ]);
  });

  it("with elicitation: false the client does not claim the capability, and the server's question fails its call", async () => {
    app = Trellis.create();
    await McpServerClient.connect(app, 'trips', stdio, { elicitation: false });
    const model = new ScriptedModel([{ toolCalls: [{ name: 'trips.book', args: { city: 'Oslo' } }] }, 'ok']);
    const result = await app.agent({ name: 'a', model, instructions: '' }).session().send('Book Oslo');
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolFailed' } });
    expect(result.toolCalls[0]!.error!.message).toMatch(/elicitation/i);
  });
});
