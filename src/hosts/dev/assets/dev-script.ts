/**
 * The page's browser script, served at `/assets/dev.js` (an ES module; no build step).
 * It listens to the page's Server-Sent Events, re-renders `#main` from the server (which
 * escapes everything) when something changed, and posts the chat and approval forms as
 * JSON, showing a refusal in the form's error line. Text from events is only ever put in
 * the page with `textContent`.
 */
export const DEV_SCRIPT = `
const main = document.getElementById('main');
const live = document.getElementById('live');
const stream = document.getElementById('stream');
let timer;
// A form's refusal outlives a re-render of #main (live events may re-render it at any time).
const refusals = new Map();
const formKey = (form) => form.dataset.post + '|' + (form.dataset.call || '');

// Decisions and messages being posted: a live re-render waits for them.
let submitting = 0;

function userIsEditing() {
  const active = document.activeElement;
  return submitting > 0 || Boolean(main && active && main.contains(active) && active.closest('form'));
}

async function refresh(afterSubmit) {
  const url = main && main.dataset.fragment;
  if (!url) return;
  const response = await fetch(url, { headers: { accept: 'text/html' } });
  if (!response.ok) return;
  const html = await response.text();
  // Checked again after the fetch: the user may have started typing or submitting meanwhile.
  if (!afterSubmit && userIsEditing()) return refreshSoon();
  main.innerHTML = html;
  for (const form of main.querySelectorAll('form[data-post]')) {
    const kept = refusals.get(formKey(form));
    const line = form.querySelector('.error');
    if (kept && line) line.textContent = kept;
  }
}

// Live events re-render #main, but never under the user's hands: while a field of a form in
// #main has focus, the re-render waits (a submit re-renders at once after a success).
function refreshLive() {
  if (userIsEditing()) return refreshSoon();
  refresh(false);
}

function refreshSoon() {
  clearTimeout(timer);
  timer = setTimeout(refreshLive, 120);
}

function logLine(event) {
  if (!live) return;
  const item = document.createElement('li');
  const what = event.tool || event.point || event.model || event.status || event.code || '';
  item.textContent = event.type + (what ? ' · ' + what : '');
  live.prepend(item);
  while (live.children.length > 60) live.lastChild.remove();
}

if (document.body.dataset.events) {
  const source = new EventSource(document.body.dataset.events);
  source.addEventListener('message', (message) => {
    const event = JSON.parse(message.data);
    if (event.type === 'model.delta') {
      if (stream && event.delta && event.delta.type === 'text') stream.textContent += event.delta.text;
      return;
    }
    if (event.type === 'turn.started' && stream) stream.textContent = '';
    // Each model call's text on a paragraph of its own, not run into the previous one's.
    if (event.type === 'round.started' && stream && stream.textContent !== '' && !stream.textContent.endsWith('\\n\\n')) stream.textContent += '\\n\\n';
    logLine(event);
    refreshSoon();
  });
}

function decisionOf(form, submitter) {
  const decision = { callId: form.dataset.call, decision: submitter ? submitter.value : 'approve' };
  if (decision.decision === 'edit') {
    try {
      decision.args = JSON.parse(form.elements.args.value);
    } catch (error) {
      throw new Error('The edited arguments are not valid JSON: ' + error.message);
    }
  }
  const reason = form.elements.message && form.elements.message.value.trim();
  if (decision.decision === 'reject' && reason) decision.message = reason;
  return { decisions: [decision] };
}

document.addEventListener('submit', async (event) => {
  const form = event.target.closest('form[data-post]');
  if (!form) return;
  event.preventDefault();
  const error = form.querySelector('.error');
  const buttons = [...form.querySelectorAll('button')];
  error.textContent = '';
  refusals.delete(formKey(form));
  let body;
  try {
    body = form.dataset.kind === 'message' ? { message: form.elements.message.value } : decisionOf(form, event.submitter);
  } catch (problem) {
    error.textContent = problem.message;
    return;
  }
  buttons.forEach((b) => (b.disabled = true));
  let ok = false;
  submitting++;
  try {
    const response = await fetch(form.dataset.post, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) });
    const result = await response.json().catch(() => ({}));
    if (!response.ok) {
      const text = (result.error && (result.error.code + ': ' + result.error.message)) || 'The server refused (' + response.status + ')';
      refusals.set(formKey(form), text);
      // A re-render may have replaced this form meanwhile: the refusal goes to the one shown.
      const shown = form.isConnected ? form : [...main.querySelectorAll('form[data-post]')].find((f) => formKey(f) === formKey(form));
      const line = shown && shown.querySelector('.error');
      if (line) line.textContent = text;
    } else {
      ok = true;
      if (form.dataset.kind === 'message') form.reset();
    }
  } catch (problem) {
    error.textContent = 'The request failed: ' + problem.message;
  } finally {
    submitting--;
    buttons.forEach((b) => (b.disabled = false));
    // A refusal stays readable: #main (which may hold this form) is re-rendered only after a success.
    if (ok) await refresh(true);
  }
});
`;
