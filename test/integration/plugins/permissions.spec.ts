import 'reflect-metadata';
import { IsOptional, IsString } from 'class-validator';
import { Plugin, ScriptedModel, Tool, Trellis, TrellisError, type ToolContext } from '../../../index.js';
import { PermissionsPlugin } from '../../../plugins/permissions/index.js';

class SqlInput {
  @IsString() sql!: string;
}
class NoInput {
  @IsOptional() @IsString() note?: string;
}

/** Tools that record every run, so a test can tell a blocked call from one that ran. */
@Plugin({ name: 'db', version: '1.0.0' })
class DbPlugin {
  static runs: string[] = [];
  @Tool({ name: 'db.search', description: 'Runs a read query. Use to look data up.', input: SqlInput })
  search(input: SqlInput, _ctx: ToolContext) {
    DbPlugin.runs.push(`search:${input.sql}`);
    return [{ id: 1 }];
  }
  @Tool({ name: 'db.drop', description: 'Drops a table. Never use unless told.', input: NoInput })
  drop(_input: NoInput, _ctx: ToolContext) {
    DbPlugin.runs.push('drop');
    return 'dropped';
  }
  @Tool({ name: 'db.stats', description: 'Table statistics.', input: NoInput })
  stats(_input: NoInput, _ctx: ToolContext) {
    DbPlugin.runs.push('stats');
    return { rows: 3 };
  }
}

async function appWith(config: object) {
  DbPlugin.runs = [];
  const app = Trellis.create();
  await app.install(DbPlugin);
  await app.install(PermissionsPlugin, { config });
  return app;
}

const call = (name: string, args: object) => ({ toolCalls: [{ name, args }] });

describe('permissions plugin', () => {
  it('blocks a call a deny rule matches by argument, naming the rule', async () => {
    const app = await appWith({
      rules: [
        {
          tool: 'db.search',
          when: { arg: 'sql', matches: '/delete/i' },
          effect: 'deny',
          reason: 'the database is read-only',
        },
      ],
    });
    const model = new ScriptedModel([call('db.search', { sql: 'DELETE FROM users' }), 'done']);
    const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('clean up');
    expect(result.status).toBe('blocked');
    expect(result.error?.message).toContain(
      'rule rules[0] (db.search when sql matches /delete/i) denies db.search: the database is read-only',
    );
    expect(DbPlugin.runs).toEqual([]);
  });

  it('lets a call through when the argument does not match', async () => {
    const app = await appWith({
      rules: [{ tool: 'db.search', when: { arg: 'sql', matches: 'delete', flags: 'i' }, effect: 'deny' }],
    });
    const model = new ScriptedModel([call('db.search', { sql: 'select 1' }), 'one row']);
    const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('look');
    expect(result.status).toBe('completed');
    expect(DbPlugin.runs).toEqual(['search:select 1']);
  });

  it('suspends an ask call, and runs it once approved', async () => {
    const app = await appWith({
      rules: [{ name: 'confirm-stats', tool: 'db.stats', effect: 'ask', reason: 'stats are costly' }],
    });
    const model = new ScriptedModel([call('db.stats', {}), '3 rows']);
    const session = app.agent({ name: 'a', model, instructions: 'x' }).session('s');
    const parked = await session.send('how big?');
    expect(parked.status).toBe('suspended');
    expect(DbPlugin.runs).toEqual([]);
    const ticket = parked.suspended![0]!;
    expect(ticket.ticket.message).toBe("rule 'confirm-stats' asks for approval before db.stats runs: stats are costly");
    expect(ticket.ticket.allowedDecisions).toEqual(['approve', 'reject']);
    const resumed = await session.resume({ decisions: [{ callId: ticket.callId, decision: 'approve' }] });
    expect(resumed.status).toBe('completed');
    expect(resumed.reply).toBe('3 rows');
    expect(DbPlugin.runs).toEqual(['stats']);
  });

  it('never runs an ask call that is rejected', async () => {
    const app = await appWith({ rules: [{ tool: 'db.stats', effect: 'ask' }] });
    const model = new ScriptedModel([call('db.stats', {}), 'ok, not counted']);
    const session = app.agent({ name: 'a', model, instructions: 'x' }).session('s');
    const parked = await session.send('how big?');
    const resumed = await session.resume({ decisions: [{ callId: parked.suspended![0]!.callId, decision: 'reject' }] });
    expect(resumed.status).toBe('completed');
    expect(resumed.toolCalls[0]).toMatchObject({ tool: 'db.stats', ok: false, error: { code: 'Rejected' } });
    expect(DbPlugin.runs).toEqual([]);
  });

  describe('precedence among matching rules (deny > ask > allow)', () => {
    it('deny wins over allow and ask, whatever the rule order', async () => {
      const app = await appWith({
        rules: [
          { tool: '*', effect: 'allow' },
          { tool: 'db.*', effect: 'ask' },
          { name: 'no-deletes', tool: 'db.search', when: { arg: 'sql', matches: '/delete/i' }, effect: 'deny' },
        ],
      });
      const model = new ScriptedModel([call('db.search', { sql: 'delete from t' }), 'never']);
      const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('go');
      expect(result.status).toBe('blocked');
      expect(result.error?.message).toContain("rule 'no-deletes' denies db.search");
    });

    it('ask wins over allow', async () => {
      const app = await appWith({
        rules: [
          { tool: 'db.stats', effect: 'ask' },
          { tool: 'db.*', effect: 'allow' },
        ],
      });
      const model = new ScriptedModel([call('db.stats', {}), 'never']);
      const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('go');
      expect(result.status).toBe('suspended');
      expect(result.suspended![0]!.ticket.message).toContain('rules[0] (db.stats) asks for approval');
    });

    it('an allow rule overrides a stricter default', async () => {
      const app = await appWith({ rules: [{ tool: 'db.s*', effect: 'allow' }], default: 'ask' });
      const model = new ScriptedModel([call('db.stats', {}), '3 rows']);
      const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('go');
      expect(result.status).toBe('completed');
      expect(DbPlugin.runs).toEqual(['stats']);
    });

    it('the default applies when no rule matches', async () => {
      const app = await appWith({ rules: [{ tool: 'other.*', effect: 'allow' }], default: 'ask' });
      const model = new ScriptedModel([call('db.search', { sql: 'select 1' }), 'never']);
      const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('go');
      expect(result.status).toBe('suspended');
      expect(result.suspended![0]!.ticket.message).toContain('the default rule (ask)');
    });
  });

  describe('tool-name globs', () => {
    it.each([
      ['db.*', 'db.stats', 'suspended'],
      ['*', 'db.stats', 'suspended'],
      ['db.st?ts', 'db.stats', 'suspended'],
      ['db.s', 'db.stats', 'completed'],
      ['d.*', 'db.stats', 'completed'],
      ['*.search', 'db.stats', 'completed'],
    ])('%s applied to %s → %s', async (glob, tool, status) => {
      const app = await appWith({ rules: [{ tool: glob, effect: 'ask' }] });
      const model = new ScriptedModel([call(tool, {}), 'answer']);
      const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('go');
      expect(result.status).toBe(status);
    });
  });

  describe('tools denied outright are not offered', () => {
    it('removes a tool with an unconditional deny rule, keeps conditionally denied ones', async () => {
      const app = await appWith({
        rules: [
          { tool: 'db.drop', effect: 'deny' },
          { tool: 'db.search', when: { arg: 'sql', matches: '/delete/i' }, effect: 'deny' },
        ],
      });
      const model = new ScriptedModel(['hello']);
      await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('hi');
      expect(model.calls[0]!.tools.map((t) => t.name).sort()).toEqual(['db.search', 'db.stats']);
    });

    it('with default deny, offers only tools some allow or ask rule names', async () => {
      const app = await appWith({
        rules: [
          { tool: 'db.search', effect: 'allow' },
          { tool: 'db.stats', effect: 'ask' },
        ],
        default: 'deny',
      });
      const model = new ScriptedModel(['hello']);
      await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('hi');
      expect(model.calls[0]!.tools.map((t) => t.name).sort()).toEqual(['db.search', 'db.stats']);
    });

    it('a call to a removed tool never runs', async () => {
      const app = await appWith({ rules: [{ tool: 'db.drop', effect: 'deny' }] });
      const model = new ScriptedModel([call('db.drop', {}), 'could not']);
      const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('drop it');
      expect(result.toolCalls[0]).toMatchObject({ tool: 'db.drop', ok: false, error: { code: 'ToolNotFound' } });
      expect(DbPlugin.runs).toEqual([]);
    });
  });

  describe('configuration', () => {
    it('refuses a bad config at install, naming every bad field', async () => {
      const app = Trellis.create();
      const bad = {
        rules: [
          { tool: 'db search', effect: 'maybe' },
          { tool: 'db.*', effect: 'deny', when: { arg: '', matches: '/(unclosed/i' }, extra: 1 },
          {
            tool: 'x',
            effect: 'ask',
            when: { arg: 'a', matches: 'b', flags: 'q' },
            allowedDecisions: ['approve', 'ignore'],
          },
        ],
        default: 'sometimes',
      };
      const error = await app.install(PermissionsPlugin, { config: bad }).catch((e: unknown) => e);
      expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
      const paths = ((error as TrellisError).details['errors'] as { path: string }[]).map((e) => e.path);
      expect(paths).toEqual(
        expect.arrayContaining([
          'rules[0].tool',
          'rules[0].effect',
          'rules[1].extra',
          'rules[1].when.arg',
          'rules[1].when.matches',
          'rules[2].when.flags',
          'rules[2].allowedDecisions',
          'default',
        ]),
      );
      expect((error as TrellisError).message).toContain(
        'rules[1].when.matches: matches is not a valid regular expression',
      );
    });

    it('accepts an empty config (everything allowed)', async () => {
      const app = Trellis.create();
      await expect(app.install(PermissionsPlugin)).resolves.toBeDefined();
    });
  });
});
