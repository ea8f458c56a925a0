import 'reflect-metadata';
import {
  Hook,
  OnEffect,
  Plugin,
  Requires,
  StateKey,
  Trellis,
  TrellisError,
  type HookContext,
  type PluginContext,
} from '../../../index.js';
import { KernelHarness, recordEvents, rejectionOf, turnLevel } from '../../support/kernel-harness.js';
import { kernelOf } from '../../../src/app/kernel-access.js';

/*
 * Three plugins owned by three teams. They share no code and no instances: team A
 * publishes a profile and an effect, team B scores profiles when told, team C plans with
 * the score. Each reads only keys it declared and writes only its own.
 */

// Team A: knows who the user is.
@StateKey('profile.tier', { scope: 'session', merge: 'exclusive' })
@Plugin({ name: 'profile', version: '1.0.0', priority: 10 })
class ProfilePlugin {
  @Hook('message.received')
  @Requires('app.user_id')
  identify(message: string, ctx: HookContext) {
    const tier = String(ctx.deps['app.user_id']).startsWith('vip-') ? 'gold' : 'basic';
    ctx.set('profile.tier', tier);
    ctx.emit('profile.updated', { tier });
    return message.trim();
  }
}

// Team B: scores a profile whenever team A says it changed.
@StateKey('scoring.score', { scope: 'session', merge: 'exclusive' })
@Plugin({ name: 'scoring', version: '1.0.0' })
class ScoringPlugin {
  @OnEffect('profile.updated')
  @Requires('profile.tier')
  rescore(payload: { tier: string }, ctx: PluginContext & { deps: Record<string, unknown> }) {
    // The committed value and the effect's payload agree: the handler runs after the commit.
    const tier = ctx.deps['profile.tier'];
    if (tier !== payload.tier) throw new Error(`saw ${String(tier)} but was told ${payload.tier}`);
    ctx.set('scoring.score', tier === 'gold' ? 90 : 40);
  }
}

// Team C: plans the turn with the score; it never sees the profile.
@Plugin({ name: 'offers', version: '1.0.0' })
class OffersPlugin {
  static misbehave: 'read' | 'write' | undefined;

  @Hook('planning.started')
  @Requires('scoring.score')
  plan(instructions: string, ctx: HookContext) {
    if (OffersPlugin.misbehave === 'read') ctx.get('profile.tier');
    if (OffersPlugin.misbehave === 'write') ctx.set('scoring.score', 100);
    const score = ctx.get<number>('scoring.score')!;
    return `${instructions}\nOffer: ${score >= 80 ? 'premium upgrade' : 'starter discount'} (score ${score}).`;
  }
}

async function teamsApp() {
  const app = Trellis.create();
  await app.install(ProfilePlugin);
  await app.install(ScoringPlugin);
  await app.install(OffersPlugin);
  return { app, kernel: new KernelHarness(app) };
}

/** The start of a turn, as the agent loop runs it. */
async function startTurn(kernel: KernelHarness, session: string, message: string) {
  const turn = turnLevel({ 'trellis.turn_input': message });
  const received = await kernel.pipeline('message.received', message, { session, turn });
  await kernel.parallel('task.start', undefined, { session, turn });
  const instructions = await kernel.pipeline('planning.started', 'You are a shop assistant.', { session, turn });
  return { received, instructions };
}

describe('plugins owned by different teams', () => {
  beforeEach(() => {
    OffersPlugin.misbehave = undefined;
  });

  it('cooperate only through declared context keys and effects', async () => {
    const { app, kernel } = await teamsApp();
    kernelOf(app).sessionState('alice').seed({ 'app.user_id': 'vip-alice' });
    const events = recordEvents(app);

    const { received, instructions } = await startTurn(kernel, 'alice', '  where is my order?  ');

    expect(received).toBe('where is my order?');
    expect(instructions).toBe('You are a shop assistant.\nOffer: premium upgrade (score 90).');
    expect(kernel.sessionValues('alice')).toEqual({
      'app.user_id': 'vip-alice',
      'profile.tier': 'gold',
      'scoring.score': 90,
    });
    expect(events.of('effect.dispatched')).toEqual([
      expect.objectContaining({ effect: 'profile.updated', plugin: 'scoring', sessionId: 'alice' }),
    ]);
    expect(events.of('error')).toEqual([]);
  });

  it("keep each session's data to that session", async () => {
    const { app, kernel } = await teamsApp();
    kernelOf(app).sessionState('alice').seed({ 'app.user_id': 'vip-alice' });
    kernelOf(app).sessionState('bob').seed({ 'app.user_id': 'bob' });

    const alice = await startTurn(kernel, 'alice', 'hi');
    const bob = await startTurn(kernel, 'bob', 'hi');

    expect(alice.instructions).toMatch(/premium upgrade \(score 90\)/);
    expect(bob.instructions).toMatch(/starter discount \(score 40\)/);
    expect(kernel.sessionValues('bob')['profile.tier']).toBe('basic');
    expect(kernel.sessionValues('alice')['profile.tier']).toBe('gold');
  });

  it('a team that reads a key it did not declare is refused with ContextAccess, naming the key', async () => {
    const { app, kernel } = await teamsApp();
    kernelOf(app).sessionState('alice').seed({ 'app.user_id': 'vip-alice' });
    OffersPlugin.misbehave = 'read';

    const error = await rejectionOf(startTurn(kernel, 'alice', 'hi'));

    expect(TrellisError.is(error, 'ContextAccess')).toBe(true);
    expect((error as TrellisError).details).toMatchObject({
      key: 'profile.tier',
      plugin: 'offers',
      point: 'planning.started',
    });
  });

  it("a team that writes another team's key is refused with ContextAccess, and the key keeps its value", async () => {
    const { app, kernel } = await teamsApp();
    kernelOf(app).sessionState('alice').seed({ 'app.user_id': 'vip-alice' });
    OffersPlugin.misbehave = 'write';

    const error = await rejectionOf(startTurn(kernel, 'alice', 'hi'));

    expect(TrellisError.is(error, 'ContextAccess')).toBe(true);
    expect((error as TrellisError).details).toMatchObject({ key: 'scoring.score', plugin: 'offers' });
    expect(kernel.sessionValues('alice')['scoring.score']).toBe(90);
  });

  it('a team whose declared input is not there yet gets MissingContext, not undefined', async () => {
    const { kernel } = await teamsApp();

    const error = await rejectionOf(kernel.pipeline('planning.started', 'x', { session: 'new', turn: turnLevel() }));

    expect(TrellisError.is(error, 'MissingContext')).toBe(true);
    expect((error as TrellisError).details).toMatchObject({ key: 'scoring.score', levels: ['turn', 'session'] });
  });

  it('an agent that leaves the scoring team out still gets its effect handled (structural parts always count)', async () => {
    const { app, kernel } = await teamsApp();
    kernelOf(app).sessionState('alice').seed({ 'app.user_id': 'alice' });
    const turn = turnLevel();

    await kernel.pipeline('message.received', 'hi', { session: 'alice', turn, active: ['profile', 'offers'] });
    const instructions = await kernel.pipeline('planning.started', 'Base.', {
      session: 'alice',
      turn,
      active: ['profile', 'offers'],
    });

    expect(instructions).toBe('Base.\nOffer: starter discount (score 40).');
  });
});
