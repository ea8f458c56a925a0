/**
 * An enqueuing process of the double-texting test (run as transpiled JavaScript): sends
 * ORDER_COUNT messages `<ORDER_ID>-m<i>` to session ORDER_SESSION back to back — each send
 * accepted before the next is made, none awaiting a reply — after the line `go` on stdin,
 * then waits for every result and prints one JSON line: per message, when its enqueue began
 * and was accepted (ms since the epoch), and its turn's status.
 */
import { createInterface } from 'node:readline';
import { TurnQueue } from '../../queue.js';

const env = (name: string) =>
  process.env[name] ??
  (() => {
    throw new Error(`${name} is not set`);
  })();
const me = env('ORDER_ID');
const count = Number(env('ORDER_COUNT'));
const queue = new TurnQueue({
  url: env('SCALE_REDIS_URL'),
  prefix: env('SCALE_PREFIX'),
  queueName: 'turns',
  pollMs: 500,
});
const lines = createInterface({ input: process.stdin });
await new Promise<void>((resolve) => lines.on('line', (line) => line === 'go' && resolve()));
lines.close();
const sent: { message: string; began: number; accepted: number; result: Promise<{ result: { status: string } }> }[] =
  [];
for (let i = 0; i < count; i++) {
  const message = `${me}-m${i}`;
  const began = Date.now();
  const queued = await queue.enqueueSend({
    agent: 'ledger-keeper',
    sessionId: env('ORDER_SESSION'),
    key: message,
    message,
  });
  sent.push({ message, began, accepted: Date.now(), result: queued.result });
  // A short pause, so the three processes' sends interleave.
  await new Promise((resolve) => setTimeout(resolve, Number(process.env.ORDER_GAP_MS ?? 0)));
}
const done = await Promise.all(
  sent.map(async (s) => ({
    message: s.message,
    began: s.began,
    accepted: s.accepted,
    status: (await s.result).result.status,
  })),
);
process.stdout.write(`${JSON.stringify(done)}\n`);
await queue.close();
process.exit(0);
