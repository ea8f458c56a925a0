import type { AppDescription, PendingApproval } from '../../../../index.js';
import { redactSecrets } from '../../../../plugin.js';
import { escapeControl } from './terminal-text.js';

/**
 * What a person is asked to approve, in full: the tool, the call id, the gate's message
 * and every argument, pretty-printed — never cut, with control characters shown as
 * escapes so nothing in model-made text can hide, recolour or overwrite part of it.
 * Secret values (`@Secret()` fields of the tool's input DTO when `app` (`app.describe()`) is given,
 * secret-named keys, secret-shaped values) are shown as `[Redacted]`.
 *
 * @example
 * approvalLines(pending) // ['export.csv (call_1) waits for approval', '  message: Write …', '  arguments:', '    {', …]
 */
export function approvalLines(pending: PendingApproval, app?: AppDescription): string[] {
  const lines = [`${escapeControl(pending.tool)} (${escapeControl(pending.callId)}) waits for approval`];
  lines.push(...indented('message', pending.ticket.message));
  lines.push(...indented('arguments', argumentsText(pending, app)));
  return lines;
}

function indented(label: string, text: string): string[] {
  const body = escapeControl(text).split('\n');
  if (body.length === 1) return [`  ${label}: ${body[0]}`];
  return [`  ${label}:`, ...body.map((line) => `    ${line}`)];
}

function argumentsText(pending: PendingApproval, app: AppDescription | undefined): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(pending.arguments);
  } catch {
    return `${pending.arguments} (not valid JSON)`;
  }
  const secrets = app?.plugins
    .flatMap((plugin) => plugin.tools)
    .find((tool) => tool.name === pending.tool)?.secretFields;
  return JSON.stringify(redactSecrets(parsed, { topLevelSecrets: secrets }), null, 2);
}
