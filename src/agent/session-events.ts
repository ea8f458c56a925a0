import { Subject, type Observable } from 'rxjs';
import type { TrellisEvent } from '../engine/events/trellis-event.js';

/**
 * A session's event stream, made when someone first asks for it: most sessions are never
 * observed, so they carry no rxjs `Subject`. Once completed, a stream asked for later is
 * complete at once, as a completed `Subject` would be.
 */
export class SessionEvents {
  #subject: Subject<TrellisEvent> | undefined;
  #events$: Observable<TrellisEvent> | undefined;
  #completed = false;

  /** Whether anybody subscribes: events are built only then. */
  get observed(): boolean {
    return this.#subject !== undefined && this.#subject.observed;
  }

  get events$(): Observable<TrellisEvent> {
    if (this.#events$ === undefined) {
      this.#subject = new Subject<TrellisEvent>();
      if (this.#completed) this.#subject.complete();
      this.#events$ = this.#subject.asObservable();
    }
    return this.#events$;
  }

  next(event: TrellisEvent): void {
    this.#subject?.next(event);
  }

  complete(): void {
    this.#completed = true;
    this.#subject?.complete();
  }
}
