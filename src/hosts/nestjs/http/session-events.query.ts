import { IsOptional, Matches } from 'class-validator';

/** An event id as the worker queue's streams give them (`1733140000000-0`), or `0` for all a stream keeps. */
export const EVENT_ID = /^\d{1,20}(-\d{1,20})?$/;

/** Query of `GET /sessions/:id/events`. */
export class SessionEventsQuery {
  /** The id of the last event the client saw, when it cannot send `Last-Event-ID`; the header wins. */
  @IsOptional()
  @Matches(EVENT_ID, { message: 'after must be an event id, like 1733140000000-0 (or 0 for all the stream keeps)' })
  after?: string;
}
