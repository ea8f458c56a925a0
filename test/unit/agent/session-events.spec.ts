import { SessionEvents } from '../../../src/agent/session-events.js';
import type { TrellisEvent } from '../../../src/engine/events/trellis-event.js';

const event = (turn: number): TrellisEvent => ({ type: 'turn.started', sessionId: 's1', turn });

describe('a session event stream made on demand', () => {
  it('is not observed, and drops events, until someone subscribes', () => {
    const events = new SessionEvents();
    events.next(event(0));
    expect(events.observed).toBe(false);

    const seen: TrellisEvent[] = [];
    const subscription = events.events$.subscribe((e) => seen.push(e));
    expect(events.observed).toBe(true);
    events.next(event(1));
    subscription.unsubscribe();
    events.next(event(2));

    expect(seen).toEqual([event(1)]);
    expect(events.observed).toBe(false);
  });

  it('hands out the same observable every time', () => {
    const events = new SessionEvents();
    expect(events.events$).toBe(events.events$);
  });

  it('completes subscribers when the session ends, and completes late subscribers at once', () => {
    const early = new SessionEvents();
    let earlyDone = false;
    early.events$.subscribe({ complete: () => (earlyDone = true) });
    early.complete();
    expect(earlyDone).toBe(true);

    const late = new SessionEvents();
    late.complete();
    let lateDone = false;
    const seen: TrellisEvent[] = [];
    late.events$.subscribe({ next: (e) => seen.push(e), complete: () => (lateDone = true) });
    late.next(event(3));
    expect(lateDone).toBe(true);
    expect(seen).toEqual([]);
  });
});
