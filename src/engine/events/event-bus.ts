import { Subject, type Observable } from 'rxjs';
import { redactEvent } from './redact-event.js';
import type { TrellisEvent } from './trellis-event.js';

/**
 * The app's event stream. Emitting costs one property read when nobody subscribes:
 * callers on the hot path check `observed` before building an event. Events carrying
 * arguments or messages are redacted ({@link redactEvent}) before listeners see them.
 */
export class EventBus {
  private readonly subject = new Subject<TrellisEvent>();
  readonly events$: Observable<TrellisEvent> = this.subject.asObservable();
  /** The owning team of a plugin (`@Plugin({ owner })`), set by the app: error events naming a plugin carry it. */
  ownerOf: (plugin: string) => string | undefined = () => undefined;

  get observed(): boolean {
    return this.subject.observed;
  }

  emit(event: TrellisEvent): void {
    if (!this.subject.observed) return;
    if (event.type === 'error' && event.plugin !== undefined && event.owner === undefined) {
      const owner = this.ownerOf(event.plugin);
      if (owner !== undefined) event = { ...event, owner };
    }
    this.subject.next(redactEvent(event));
  }

  complete(): void {
    this.subject.complete();
  }
}
