import 'reflect-metadata';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { Hook, OnEffect, Plugin, Requires, StateKey, Tool, Trellis } from '../../../index.js';
import { diffContracts, type PluginContract } from '../../../governance.js';

class RefundInput {
  @IsString() @Matches(/^o-[0-9]+$/) orderId!: string;
  @IsInt() @Min(1) @Max(1000) amount!: number;
  @IsOptional() @IsIn(['eur', 'usd']) currency?: string;
  @IsOptional() @IsString() note?: string;
}

class RefundView {
  @IsString() refundId!: string;
  @IsInt() amount!: number;
}

@Plugin({ name: 'billing', version: '2.3.0', owner: 'team-payments' })
@StateKey('billing.balance', { scope: 'session', merge: 'exclusive', persistent: true, default: 0 })
class Billing {
  @Tool({
    name: 'billing.refund',
    description: 'Refunds an order.',
    input: RefundInput,
    output: RefundView,
    tags: ['money'],
  })
  @Requires('app.user_id', { key: 'app.locale', optional: true })
  refund() {
    return { refundId: 'r1', amount: 1 };
  }

  @Tool({ name: 'billing.balance_of', description: 'Reads the balance.', input: RefundInput })
  balance() {
    return 0;
  }

  @Hook('tool.after_call')
  after() {}

  @OnEffect('billing.charged')
  charged() {}
}

async function baseContract(): Promise<PluginContract> {
  const app = Trellis.create();
  await app.install(Billing);
  return app.contracts().find((c) => c.name === 'billing')!;
}

/** A contract copy the seeds edit freely (JSON, so any shape the file could hold). */
type Mutable = any;
const clone = (c: PluginContract): Mutable => structuredClone(c) as Mutable;
const refund = (c: Mutable) => c.tools.find((t: { name: string }) => t.name === 'billing.refund')!;

/** Known changes: each edits a copy of the contract; `expect` is how a correct diff classifies it. */
const SEEDED: { name: string; expect: 'breaking' | 'compatible'; edit: (c: Mutable) => void }[] = [
  {
    name: 'tool removed',
    expect: 'breaking',
    edit: (c) => (c.tools = c.tools.filter((t: { name: string }) => t.name !== 'billing.balance_of')),
  },
  {
    name: 'tool renamed',
    expect: 'breaking',
    edit: (c) => (c.tools.find((t: { name: string }) => t.name === 'billing.balance_of')!.name = 'billing.balance'),
  },
  {
    name: 'optional input field made required',
    expect: 'breaking',
    edit: (c) => refund(c).input.required.push('currency'),
  },
  {
    name: 'required input field added',
    expect: 'breaking',
    edit: (c) => ((refund(c).input.properties.reason = { type: 'string' }), refund(c).input.required.push('reason')),
  },
  {
    name: 'input type narrowed',
    expect: 'breaking',
    edit: (c) => (refund(c).input.properties.orderId = { type: 'integer' }),
  },
  {
    name: 'input enum value removed',
    expect: 'breaking',
    edit: (c) => (refund(c).input.properties.currency.enum = ['eur']),
  },
  { name: 'input maximum lowered', expect: 'breaking', edit: (c) => (refund(c).input.properties.amount.maximum = 500) },
  { name: 'output field removed', expect: 'breaking', edit: (c) => delete refund(c).output.properties.refundId },
  {
    name: 'output field made optional',
    expect: 'breaking',
    edit: (c) => (refund(c).output.required = refund(c).output.required.filter((f: string) => f !== 'amount')),
  },
  { name: 'hook dropped', expect: 'breaking', edit: (c) => (c.hooks = []) },
  {
    name: 'state key renamed',
    expect: 'breaking',
    edit: (c) => (
      (c.stateKeys[0].key = 'billing.credit'),
      (c.contextKeys.writes = c.contextKeys.writes.map((k: string) => (k === 'billing.balance' ? 'billing.credit' : k)))
    ),
  },
  { name: 'state key no longer persistent', expect: 'breaking', edit: (c) => (c.stateKeys[0].persistent = false) },
  { name: 'effect handler removed', expect: 'breaking', edit: (c) => (c.effects = []) },
  {
    name: 'new required context read',
    expect: 'breaking',
    edit: (c) => c.contextKeys.reads.push({ key: 'app.tenant', optional: false }),
  },
  {
    name: 'optional read made required',
    expect: 'breaking',
    edit: (c) => (c.contextKeys.reads.find((r: { key: string }) => r.key === 'app.locale')!.optional = false),
  },
  { name: 'tag removed', expect: 'breaking', edit: (c) => (refund(c).tags = []) },
  { name: 'new dependency', expect: 'breaking', edit: (c) => (c.dependsOn = { ledger: '^1.0.0' }) },
  {
    name: 'optional input field added',
    expect: 'compatible',
    edit: (c) => (refund(c).input.properties.memo = { type: 'string' }),
  },
  {
    name: 'required input field made optional',
    expect: 'compatible',
    edit: (c) => (refund(c).input.required = refund(c).input.required.filter((f: string) => f !== 'orderId')),
  },
  {
    name: 'input enum widened',
    expect: 'compatible',
    edit: (c) => refund(c).input.properties.currency.enum.push('gbp'),
  },
  {
    name: 'input maximum raised',
    expect: 'compatible',
    edit: (c) => (refund(c).input.properties.amount.maximum = 5000),
  },
  {
    name: 'output field added',
    expect: 'compatible',
    edit: (c) => (refund(c).output.properties.status = { type: 'string' }),
  },
  {
    name: 'tool added',
    expect: 'compatible',
    edit: (c) => c.tools.push({ name: 'billing.invoice', input: { type: 'object', properties: {} }, tags: [] }),
  },
  { name: 'hook added', expect: 'compatible', edit: (c) => c.hooks.push('tool.error') },
  {
    name: 'state key added',
    expect: 'compatible',
    edit: (c) => (
      c.stateKeys.push({ key: 'billing.last', scope: 'session', merge: 'exclusive', persistent: false }),
      c.contextKeys.writes.push('billing.last')
    ),
  },
  {
    name: 'optional context read added',
    expect: 'compatible',
    edit: (c) => c.contextKeys.reads.push({ key: 'app.region', optional: true }),
  },
  { name: 'tag added', expect: 'compatible', edit: (c) => refund(c).tags.push('audited') },
  { name: 'owner changed', expect: 'compatible', edit: (c) => (c.owner = 'team-finance') },
  // Whether one regular expression takes everything another does is not decided: any change of a pattern is flagged (a known false flag).
  {
    name: 'input pattern loosened',
    expect: 'compatible',
    edit: (c) => (refund(c).input.properties.orderId.pattern = '^o-[0-9a-z]+$'),
  },
];

describe('trellis contract diff: seeded changes, counted', () => {
  it('classifies the seeded changes: 17 of 17 breaking ones caught; of 12 compatible ones, 1 flagged (a loosened pattern)', async () => {
    const base = await baseContract();
    expect(diffContracts([base], [base]).changes).toEqual([]);
    const outcome = SEEDED.map((seed) => {
      const next = clone(base);
      seed.edit(next);
      const { changes } = diffContracts([base], [next]);
      const flagged = changes.some((c) => c.kind === 'breaking');
      return {
        name: seed.name,
        expect: seed.expect,
        got: flagged ? 'breaking' : changes.length > 0 ? 'compatible' : 'unseen',
        changes,
      };
    });
    const breaking = outcome.filter((o) => o.expect === 'breaking');
    const compatible = outcome.filter((o) => o.expect === 'compatible');
    const caught = breaking.filter((o) => o.got === 'breaking').length;
    const falseFlags = compatible.filter((o) => o.got === 'breaking').length;
    const seenCompatible = compatible.filter((o) => o.got === 'compatible').length;
    // The figures docs/governance.md quotes.
    expect({ breaking: breaking.length, caught, compatible: compatible.length, seenCompatible, falseFlags }).toEqual({
      breaking: 17,
      caught: 17,
      compatible: 12,
      seenCompatible: 11,
      falseFlags: 1,
    });
    expect(outcome.filter((o) => o.expect === 'compatible' && o.got === 'breaking').map((o) => o.name)).toEqual([
      'input pattern loosened',
    ]);
    expect(outcome.find((o) => o.name === 'tool renamed')!.changes.map((c) => c.what)).toContain(
      "tool 'billing.balance_of' was removed (renamed to 'billing.balance'?)",
    );
  });

  it('asks for a major bump on a breaking change (a minor one for 0.x), and none for compatible changes', async () => {
    const base = await baseContract();
    const broken = clone(base);
    broken.hooks = [];
    expect(diffContracts([base], [{ ...broken, version: '2.4.0' }]).ok).toBe(false);
    expect(diffContracts([base], [{ ...broken, version: '3.0.0' }]).ok).toBe(true);
    expect(diffContracts([{ ...base, version: '0.4.2' }], [{ ...broken, version: '0.5.0' }]).ok).toBe(true);
    expect(diffContracts([{ ...base, version: '0.4.2' }], [{ ...broken, version: '0.4.3' }]).ok).toBe(false);
    const widened = clone(base);
    widened.hooks.push('tool.error');
    expect(diffContracts([base], [{ ...widened, version: '2.3.1' }])).toMatchObject({
      ok: true,
      plugins: [{ name: 'billing', breaking: 0, compatible: 1, unbumped: false }],
    });
    expect(diffContracts([base], [])).toMatchObject({
      changes: [{ kind: 'breaking', what: "plugin 'billing' was removed" }],
    });
  });

  it('writes the contract from the decorators: schemas in and out, hooks, keys read and written, effects, owner', async () => {
    const c = await baseContract();
    expect(c).toMatchObject({
      name: 'billing',
      version: '2.3.0',
      owner: 'team-payments',
      hooks: ['tool.after_call'],
      effects: ['billing.charged'],
      dependsOn: {},
    });
    expect(c.contextKeys.reads).toEqual([
      { key: 'app.locale', optional: true },
      { key: 'app.user_id', optional: false },
    ]);
    expect(c.contextKeys.writes).toEqual(['billing.balance', 'billing.balance_of.result', 'billing.refund.result']);
    expect(refund(clone(c)).output.required).toEqual(['refundId', 'amount']);
    expect(refund(clone(c)).input.properties.amount).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000 });
  });
});
