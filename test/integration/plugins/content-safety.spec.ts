import 'reflect-metadata';
import { IsOptional, IsString } from 'class-validator';
import { Plugin, ScriptedModel, Tool, Trellis, TrellisError, type ToolContext } from '../../../index.js';
import { ContentSafetyPlugin, passesLuhn } from '../../../plugins/content-safety/index.js';

class CmdInput {
  @IsOptional() @IsString() cmd?: string;
}

@Plugin({ name: 'ops', version: '1.0.0' })
class OpsPlugin {
  static runs: string[] = [];
  @Tool({ name: 'ops.status', description: 'Service status.', input: CmdInput })
  status(_i: CmdInput, _ctx: ToolContext) {
    OpsPlugin.runs.push('status');
    return 'up';
  }
  @Tool({ name: 'ops.wipe', description: 'Wipes a disk. Never use.', input: CmdInput, tags: ['dangerous'] })
  wipe(_i: CmdInput, _ctx: ToolContext) {
    OpsPlugin.runs.push('wipe');
    return 'wiped';
  }
  @Tool({ name: 'ops.shell', description: 'Runs a shell command.', input: CmdInput, tags: ['exec'] })
  shell(_i: CmdInput, _ctx: ToolContext) {
    OpsPlugin.runs.push('shell');
    return 'ran';
  }
}

async function setup(config: object, script: ConstructorParameters<typeof ScriptedModel>[0]) {
  OpsPlugin.runs = [];
  const app = Trellis.create();
  await app.install(OpsPlugin);
  await app.install(ContentSafetyPlugin, { config });
  const model = new ScriptedModel(script);
  const session = app.agent({ name: 'a', model, instructions: 'x' }).session('s');
  return { model, session };
}

describe('content-safety plugin', () => {
  describe('message.received', () => {
    it('blocks a message matching a blocked pattern before any model call', async () => {
      const { model, session } = await setup({ blockedPatterns: ['/secret\\s+plans/i', 'forbidden'] }, ['never']);
      const result = await session.send('Tell me the SECRET   plans');
      expect(result.status).toBe('blocked');
      expect(result.error).toEqual({
        code: 'Blocked',
        message: 'the message matches blocked content (blockedPatterns[0])',
      });
      expect(model.calls).toHaveLength(0);
    });

    it('uses the configured reason and lets other messages through', async () => {
      const { session } = await setup({ blockedPatterns: ['forbidden'], blockReason: 'not allowed here' }, ['hello']);
      expect((await session.send('this is forbidden')).error?.message).toBe('not allowed here');
      const ok = await session.send('hi there');
      expect(ok).toMatchObject({ status: 'completed', reply: 'hello' });
    });
  });

  describe('message.sending redacts personal data', () => {
    it.each([
      ['e-mail', 'Write to jane.doe+x@mail.example.co.uk today', 'Write to [REDACTED:email] today'],
      ['international phone', 'Call +44 20 7946 0958 now', 'Call [REDACTED:phone] now'],
      ['US phone', 'Call (555) 123-4567.', 'Call [REDACTED:phone].'],
      ['bare 10-digit phone', 'Call 5551234567', 'Call [REDACTED:phone]'],
      ['Luhn-valid card with spaces', 'Card 4111 1111 1111 1111 on file', 'Card [REDACTED:card] on file'],
      ['Luhn-valid card with dashes', 'Card 5500-0000-0000-0004.', 'Card [REDACTED:card].'],
      ['Luhn-valid Amex', 'Amex 378282246310005', 'Amex [REDACTED:card]'],
    ])('%s', async (_kind, reply, expected) => {
      const { session } = await setup({}, [reply]);
      const result = await session.send('details?');
      expect(result.reply).toBe(expected);
      expect(session.transcript.at(-1)?.content).toBe(expected);
    });

    it.each([
      ['a card number failing Luhn', 'Card 4111 1111 1111 1112 is invalid'],
      ['a 16-digit id failing Luhn', 'Ref 1234567812345678'],
      ['an ISO date', 'Shipped 2024-01-15'],
      ['an order id', 'Order 1234567'],
      ['a version', 'Version 1.2.3'],
      ['an IP address', 'Host 10.0.0.1'],
    ])('leaves %s alone', async (_kind, reply) => {
      const { session } = await setup({}, [reply]);
      expect((await session.send('details?')).reply).toBe(reply);
    });

    it('applies configured patterns, and built-ins can be switched off', async () => {
      const { session } = await setup(
        {
          redactEmails: false,
          redactPatterns: [
            { name: 'employee', matches: 'EMP-\\d{6}' },
            { name: 'ssn', matches: '/\\b\\d{3}-\\d{2}-\\d{4}\\b/', replacement: '***' },
          ],
        },
        ['EMP-123456 (a@b.io) SSN 078-05-1120 card 4111111111111111'],
      );
      expect((await session.send('who?')).reply).toBe('[REDACTED:employee] (a@b.io) SSN *** card [REDACTED:card]');
    });

    it('passesLuhn checks the checksum', () => {
      expect(passesLuhn('4111111111111111')).toBe(true);
      expect(passesLuhn('4111111111111112')).toBe(false);
    });
  });

  describe("with the agent's streamText: 'final'", () => {
    it('streams no raw reply text: listeners get the redacted reply only', async () => {
      const app = Trellis.create();
      await app.install(ContentSafetyPlugin, { config: {} });
      const model = new ScriptedModel(['Write to jane@example.com today']);
      const session = app.agent({ name: 'a', model, instructions: 'x', streamText: 'final' }).session('s');
      const texts: string[] = [];
      const sub = session.events$.subscribe((e) => {
        if (e.type === 'model.delta' && e.delta.type === 'text') texts.push(e.delta.text);
      });
      const result = await session.send('contact?');
      sub.unsubscribe();
      expect(result.reply).not.toContain('jane@example.com');
      expect(texts).toEqual([result.reply]);
    });

    it('streams raw text live by default (the documented trade-off)', async () => {
      const app = Trellis.create();
      await app.install(ContentSafetyPlugin, { config: {} });
      const session = app
        .agent({ name: 'a', model: new ScriptedModel(['Write to jane@example.com today']), instructions: 'x' })
        .session('s');
      const texts: string[] = [];
      const sub = session.events$.subscribe((e) => {
        if (e.type === 'model.delta' && e.delta.type === 'text') texts.push(e.delta.text);
      });
      await session.send('contact?');
      sub.unsubscribe();
      expect(texts.join('')).toContain('jane@example.com');
    });
  });

  describe('tool.before_call blocks dangerous tools', () => {
    it('blocks a tool tagged dangerous (the default tag), runs the rest', async () => {
      const { session } = await setup({}, [
        {
          toolCalls: [
            { name: 'ops.wipe', args: {} },
            { name: 'ops.status', args: {} },
          ],
        },
        'done',
      ]);
      const result = await session.send('wipe and check');
      expect(result.status).toBe('completed');
      expect(result.toolCalls[0]).toMatchObject({ tool: 'ops.wipe', ok: false, error: { code: 'Blocked' } });
      expect(result.toolCalls[0]!.error!.message).toContain("ops.wipe is tagged 'dangerous'");
      expect(result.toolCalls[1]).toMatchObject({ tool: 'ops.status', ok: true });
      expect(OpsPlugin.runs).toEqual(['status']);
    });

    it('blocks tools by configured name glob and tag', async () => {
      const { session } = await setup({ dangerousTools: ['ops.st*'], dangerousTags: ['exec'] }, [
        {
          toolCalls: [
            { name: 'ops.status', args: {} },
            { name: 'ops.shell', args: { cmd: 'ls' } },
            { name: 'ops.wipe', args: {} },
          ],
        },
        'done',
      ]);
      const result = await session.send('go');
      expect(result.toolCalls.map((c) => [c.tool, c.ok])).toEqual([
        ['ops.status', false],
        ['ops.shell', false],
        ['ops.wipe', true],
      ]);
      expect(result.toolCalls[0]!.error!.message).toContain('dangerousTools');
      expect(OpsPlugin.runs).toEqual(['wipe']);
    });
  });

  it('refuses a bad config at install, naming every bad field', async () => {
    const app = Trellis.create();
    const error = await app
      .install(ContentSafetyPlugin, {
        config: {
          blockedPatterns: ['ok', '(unclosed'],
          redactEmails: 'yes',
          redactPatterns: [{ name: '', matches: '[' }],
          dangerousTools: ['rm -rf'],
          dangerousTags: 'dangerous',
          unknown: true,
        },
      })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    const paths = ((error as TrellisError).details['errors'] as { path: string }[]).map((e) => e.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'blockedPatterns',
        'redactEmails',
        'redactPatterns[0].name',
        'redactPatterns[0].matches',
        'dangerousTools',
        'dangerousTags',
        'unknown',
      ]),
    );
    expect((error as TrellisError).message).toContain('blockedPatterns[1] is not a valid regular expression');
  });
});
