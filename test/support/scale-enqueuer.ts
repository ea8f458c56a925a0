/**
 * An enqueuing process of the multi-process scale test (run as transpiled JavaScript).
 * It runs 3 turns on each of its sessions through the TurnQueue, records every result in
 * `turn_results`, and parks the suspended ones in `approvals` for the other enqueuer,
 * whose approvals it decides in turn: sessions n % 10 = 0 approved, n % 10 = 5 rejected.
 * An approved call cut off by a dying worker comes back as a retry/skip question, which it
 * answers from the ledger (skip when the call's line is there, retry when it is not).
 */
import pg from 'pg';
import { TurnQueue, type TurnJobResult } from '../../queue.js';

const env = (name: string) =>
  process.env[name] ??
  (() => {
    throw new Error(`${name} is not set`);
  })();
const schema = env('SCALE_SCHEMA');
const me = Number(env('SCALE_ENQUEUER'));
const [from, to] = env('SCALE_SESSIONS').split('-').map(Number) as [number, number];
const inFlight = Number(process.env.SCALE_IN_FLIGHT ?? 24);
const db = new pg.Pool({ connectionString: env('SCALE_PG_URL'), max: 4 });
const queue = new TurnQueue({
  url: env('SCALE_REDIS_URL'),
  prefix: env('SCALE_PREFIX'),
  queueName: 'turns',
  pollMs: 1000,
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Turn 1 of every fifth session asks for approval. */
const messageOf = (n: number, t: number) => (n % 5 === 0 && t === 1 ? `approve:s${n}-t${t}` : `s${n}-t${t}`);

async function record(n: number, t: number, done: TurnJobResult, via: string): Promise<void> {
  await db.query(
    `INSERT INTO "${schema}".turn_results (session, turn, via, status, recovered, worker) VALUES ($1, $2, $3, $4, $5, $6)`,
    [`s${n}`, t, via, done.result.status, done.recovered, done.worker],
  );
}

async function runSession(n: number): Promise<void> {
  for (let t = 0; t < 3; t++) {
    const done = await queue.send({
      agent: 'ledger-keeper',
      sessionId: `s${n}`,
      key: `t${t}`,
      message: messageOf(n, t),
    });
    await record(n, t, done, `send-by-${me}`);
    if (done.result.status !== 'suspended') continue;
    const callId = done.result.suspended![0]!.callId;
    await db.query(`INSERT INTO "${schema}".approvals (session, n, turn, call_id, owner) VALUES ($1, $2, $3, $4, $5)`, [
      `s${n}`,
      n,
      t,
      callId,
      me,
    ]);
    // The other enqueuer decides; the next message waits for it (a new message would cancel the call).
    while (
      (await db.query(`SELECT decided FROM "${schema}".approvals WHERE session = $1`, [`s${n}`])).rows[0].decided !==
      true
    )
      await sleep(100);
  }
}

async function approveOthers(): Promise<void> {
  for (;;) {
    const { rows } = await db.query(
      `SELECT session, n, turn, call_id FROM "${schema}".approvals WHERE owner <> $1 AND decided = false`,
      [me],
    );
    for (const row of rows) {
      const decision = row.n % 10 === 0 ? 'approve' : 'reject';
      let done = await queue.resume({
        agent: 'ledger-keeper',
        sessionId: row.session,
        key: `r-${row.call_id}`,
        decisions: [{ callId: row.call_id, decision }],
      });
      await record(row.n, row.turn, done, `resume-by-${me}`);
      // A worker died while the approved call ran: the call journal asks whether to retry or
      // skip it. Decided as an operator would, by looking for the call's effect in the ledger.
      for (let round = 1; done.result.status === 'suspended'; round++) {
        const cut = done.result.suspended?.find((p) => p.ticket.data?.['interrupted'] === true);
        if (!cut)
          throw new Error(
            `s${row.n}: a resume ended suspended without an interrupted call: ${JSON.stringify(done.result.suspended)}`,
          );
        const ran =
          ((await db.query(`SELECT 1 FROM "${schema}".tool_ledger WHERE line = $1`, [`approve:s${row.n}-t${row.turn}`]))
            .rowCount ?? 0) > 0;
        done = await queue.resume({
          agent: 'ledger-keeper',
          sessionId: row.session,
          key: `r${round}-${cut.callId}`,
          decisions: [{ callId: cut.callId, decision: ran ? 'skip' : 'retry' }],
        });
        await record(row.n, row.turn, done, `recover-by-${me}`);
      }
      await db.query(`UPDATE "${schema}".approvals SET decided = true, decision = $2 WHERE session = $1`, [
        row.session,
        decision,
      ]);
    }
    const finished = (await db.query(`SELECT COUNT(*)::int AS n FROM "${schema}".enqueuers_done`)).rows[0].n === 2;
    if (finished && rows.length === 0) return;
    await sleep(100);
  }
}

const approving = approveOthers();
let next = from;
await Promise.all(
  Array.from({ length: inFlight }, async () => {
    while (next < to) await runSession(next++);
  }),
);
await db.query(`INSERT INTO "${schema}".enqueuers_done (owner) VALUES ($1)`, [me]);
process.stdout.write(`sessions done ${from}-${to}\n`);
await approving;
await queue.close();
await db.end();
process.stdout.write('done\n');
