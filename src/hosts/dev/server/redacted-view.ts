import type { AppDescription } from '../../../../index.js';
import { redactSecrets } from '../../../../plugin.js';
import { redactArguments, redactMessage, type SecretFieldsOf } from '../../../../host.js';
import type { SessionView } from '../views/session-page.js';

/** Each tool's `@Secret()` fields, from what is installed now. */
export function secretFieldsOf(app: AppDescription): SecretFieldsOf {
  const fields = new Map(app.plugins.flatMap((p) => p.tools.map((t) => [t.name, t.secretFields] as const)));
  return (tool) => fields.get(tool);
}

/**
 * A session as the page and the API show it: the store keeps the transcript as the model
 * read it, so its messages, the waiting calls' arguments (with each tool's `@Secret()`
 * fields), the turn records and their timelines pass through the redactor here, at the sink.
 * An `edit` on the page starts from these arguments: a redacted value must be typed again.
 */
export function redactedView(view: SessionView, fieldsOf: SecretFieldsOf): SessionView {
  return {
    ...view,
    transcript: view.transcript.map((message) => redactMessage(message, fieldsOf)),
    turns: view.turns.map((turn) => redactSecrets(turn) as SessionView['turns'][number]),
    live: view.live && (redactSecrets(view.live) as SessionView['live']),
    pending: view.pending.map((p) => ({
      ...(redactSecrets({ ...p, arguments: '' }) as typeof p),
      arguments: redactArguments(p.arguments, fieldsOf(p.tool)),
    })),
  };
}
