import 'reflect-metadata';
import { Plugin, Trellis, TrellisError } from '../../../index.js';

@Plugin({ name: 'billing', version: '2.3.1', owner: 'team-payments' })
class Billing2 {}

@Plugin({ name: 'billing', version: '1.9.0', owner: 'team-payments' })
class Billing1 {}

@Plugin({ name: 'refunds', version: '1.0.0', owner: 'team-support', dependsOn: { billing: '^2.1.0' } })
class Refunds {}

@Plugin({ name: 'ledger', version: '1.0.0', dependsOn: ['billing'] })
class Ledger {}

async function refusal(work: Promise<unknown>): Promise<TrellisError> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(TrellisError.is(error)).toBe(true);
  return error as TrellisError;
}

describe('@Plugin({ owner, dependsOn: { name: range } })', () => {
  it('installs a dependant when the installed version is in its range, and shows owners and ranges in describe()', async () => {
    const app = Trellis.create();
    await app.install(Billing2);
    await app.install(Refunds);
    await app.install(Ledger);
    const plugins = app.describe().plugins;
    expect(plugins.map((p) => [p.name, p.owner, p.dependsOn, p.dependsOnRanges])).toEqual([
      ['billing', 'team-payments', [], {}],
      ['refunds', 'team-support', ['billing'], { billing: '^2.1.0' }],
      ['ledger', undefined, ['billing'], {}],
    ]);
    // The range names a dependency like a name does: billing cannot go while refunds needs it.
    await expect(app.uninstall('billing')).rejects.toMatchObject({ code: 'DependentPlugin' });
  });

  it('refuses a dependant when the installed version is outside its range, naming both', async () => {
    const app = Trellis.create();
    await app.install(Billing1);
    const error = await refusal(app.install(Refunds));
    expect(error.code).toBe('MissingDependency');
    expect(error.message).toContain("Plugin 'refunds' needs 'billing' ^2.1.0, but 1.9.0 is installed");
    expect(app.describe().plugins.map((p) => p.name)).toEqual(['billing']);
  });

  it('refuses a bad owner and a range that is not semver at install', async () => {
    @Plugin({ name: 'bad-owner', version: '1.0.0', owner: 'team payments!' })
    class BadOwner {}
    @Plugin({ name: 'bad-range', version: '1.0.0', dependsOn: { billing: 'two-ish' } })
    class BadRange {}
    const app = Trellis.create();
    expect((await refusal(app.install(BadOwner))).message).toContain('owner "team payments!" must be a team name');
    expect((await refusal(app.install(BadRange))).message).toContain(
      'dependsOn.billing: "two-ish" is not a semver range',
    );
  });
});
