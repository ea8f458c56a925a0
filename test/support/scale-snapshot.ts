/**
 * The journal's view at a worker's death, for the multi-process scale test (run as transpiled
 * JavaScript, by a dying scale-worker with its own event loop blocked, so nothing of that
 * worker lands while it runs). One statement, so one consistent view of the database: the
 * step journals of the turns in flight, the turns that had landed, and the ledger rows (tool
 * runs, model calls) written so far — written to `journal_at_kill` under the worker's id.
 */
import pg from 'pg';

const env = (name: string) =>
  process.env[name] ??
  (() => {
    throw new Error(`${name} is not set`);
  })();
const schema = env('SCALE_SCHEMA');
const client = new pg.Client({ connectionString: env('SCALE_PG_URL') });
await client.connect();
await client.query(
  `INSERT INTO "${schema}".journal_at_kill (worker, steps, landed, ledger_ids, model_ids)
   SELECT $1,
     COALESCE((SELECT json_agg(json_build_object('session', session_id, 'steps', steps) ORDER BY id) FROM "${schema}".turn_steps), '[]'),
     COALESCE((SELECT json_agg(json_build_object('session', session_id, 'turn', turn_index, 'input', record->>'input', 'status', record->>'status', 'rounds', (record->>'rounds')::int)) FROM "${schema}".turns), '[]'),
     ARRAY(SELECT id FROM "${schema}".tool_ledger),
     ARRAY(SELECT id FROM "${schema}".model_calls)`,
  [env('SCALE_WORKER_ID')],
);
await client.end();
