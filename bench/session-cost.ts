/**
 * What opening, readying and ending a session costs, without a turn: `agent.session(id, { context })`,
 * `pending()` (which loads it and runs `session.start`), `end()`. 5 blocks of 5,000 after a
 * warm-up; µs per session. `node dist/bench/session-cost.js`.
 */
import { createBenchApp } from './bench-app.js';
import { AUTH, AUTH_KEY } from './workload.js';

const bench = await createBenchApp();
let next = 0;
async function block(n: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const session = bench.agent.session(`s${next++}`, { context: { [AUTH_KEY]: AUTH } });
    await session.pending();
    await session.end();
  }
  return ((performance.now() - started) * 1000) / n;
}
await block(5000);
const blocks: number[] = [];
for (let k = 0; k < 5; k++) blocks.push(await block(5000));
console.log(`session open + ready + end: ${blocks.map((us) => us.toFixed(2)).join(' ')} µs (5 blocks of 5,000)`);
