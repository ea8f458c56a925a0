/**
 * The statements of {@link PostgresStore}, for one schema. `s` is the quoted schema name;
 * timestamps leave the database as ISO strings with milliseconds, in UTC, like the other
 * stores write them, and every clock reading is the server's (`clock_timestamp()`).
 */
export function postgresStatements(s: string) {
  const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  const now = `date_trunc('milliseconds', clock_timestamp())`;
  const ttl = `make_interval(secs => $3::double precision / 1000)`;
  return {
    lastAudit: `SELECT seq, hash FROM ${s}.audit_log ORDER BY seq DESC LIMIT 1`,
    insertAudit: `INSERT INTO ${s}.audit_log (seq, prev_hash, hash, entry)
      SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::json[])`,
    selectAudit: `SELECT seq, prev_hash, hash, entry::text AS entry FROM ${s}.audit_log WHERE seq > $1 ORDER BY seq LIMIT $2`,
    selectCredential: `SELECT value FROM ${s}.credentials WHERE owner = $1 AND name = $2`,
    upsertCredential: `INSERT INTO ${s}.credentials (owner, name, value) VALUES ($1, $2, $3)
      ON CONFLICT (owner, name) DO UPDATE SET value = excluded.value, updated_at = clock_timestamp()`,
    deleteCredential: `DELETE FROM ${s}.credentials WHERE owner = $1 AND name = $2`,
    // One statement, so one snapshot: a load never mixes two checkpoints.
    load: `
      SELECT s.id, s.agent, s.revision, s.state::text AS state, s.suspension::text AS suspension,
             ${iso('s.created_at')} AS created_at, ${iso('s.updated_at')} AS updated_at,
             ARRAY(SELECT m.seq FROM ${s}.messages m WHERE m.session_id = s.id ORDER BY m.seq) AS seqs,
             ARRAY(SELECT m.message::text FROM ${s}.messages m WHERE m.session_id = s.id ORDER BY m.seq) AS messages,
             ARRAY(SELECT t.turn_index FROM ${s}.turns t WHERE t.session_id = s.id ORDER BY t.turn_index) AS turn_indexes,
             ARRAY(SELECT t.record::text FROM ${s}.turns t WHERE t.session_id = s.id ORDER BY t.turn_index) AS turns,
             ARRAY(SELECT st.steps::text FROM ${s}.turn_steps st WHERE st.session_id = s.id ORDER BY st.id) AS steps
      FROM ${s}.sessions s WHERE s.id = $1`,
    revision: `SELECT revision FROM ${s}.sessions WHERE id = $1`,
    lockHead: `SELECT agent, revision FROM ${s}.sessions WHERE id = $1 FOR UPDATE`,
    // The lease row's holder, read in the checkpoint's transaction when it is fenced.
    leaseHolder: `SELECT holder FROM ${s}.session_leases WHERE session_id = $1`,
    deleteSteps: `DELETE FROM ${s}.turn_steps WHERE session_id = $1`,
    /*
     * One statement, so one round trip: the fence, the revision rule (an UPDATE of the row at
     * the expected revision, or the INSERT of a new session at revision 0, whichever applies),
     * then the steps' row only if one of them wrote. Concurrent appenders on one revision: the
     * row lock lets one UPDATE through, the others find the revision moved (0 rows).
     * $1 session, $2 agent, $3 expected revision, $4 steps (JSON array), $5 fence or null.
     */
    appendSteps: `
      WITH fence AS (
        SELECT $5::text IS NULL OR EXISTS (SELECT 1 FROM ${s}.session_leases WHERE session_id = $1 AND holder = $5::text) AS ok
      ), bumped AS (
        UPDATE ${s}.sessions SET revision = revision + 1, updated_at = ${now}
        WHERE id = $1 AND revision = $3 AND agent = $2 AND $3 > 0 AND (SELECT ok FROM fence)
        RETURNING revision
      ), created AS (
        INSERT INTO ${s}.sessions (id, agent, revision, state, suspension, created_at, updated_at)
        SELECT $1, $2, 1, '{}'::json, 'null'::json, t.now, t.now FROM (SELECT ${now} AS now) AS t
        WHERE $3 = 0 AND (SELECT ok FROM fence)
        ON CONFLICT (id) DO NOTHING
        RETURNING revision
      ), written AS (
        SELECT revision FROM bumped UNION ALL SELECT revision FROM created
      ), appended AS (
        INSERT INTO ${s}.turn_steps (session_id, steps) SELECT $1, $4::json FROM written
      )
      SELECT (SELECT revision FROM written) AS revision, (SELECT ok FROM fence) AS fenced,
             (SELECT revision FROM ${s}.sessions WHERE id = $1) AS stored_revision,
             (SELECT agent FROM ${s}.sessions WHERE id = $1) AS stored_agent`,
    // DO NOTHING: a concurrent creator that committed first leaves 0 rows, read as StaleState.
    insertSession: `
      INSERT INTO ${s}.sessions (id, agent, revision, state, suspension, created_at, updated_at)
      SELECT $1, $2, $3, $4::json, $5::json, t.now, t.now FROM (SELECT ${now} AS now) AS t
      ON CONFLICT (id) DO NOTHING`,
    updateSession: `UPDATE ${s}.sessions SET revision = $2, state = $3::json, suspension = $4::json, updated_at = ${now} WHERE id = $1`,
    // The same, ending the turn's step journal in the same statement.
    updateSessionEndingSteps: `
      WITH ended AS (DELETE FROM ${s}.turn_steps WHERE session_id = $1)
      UPDATE ${s}.sessions SET revision = $2, state = $3::json, suspension = $4::json, updated_at = ${now} WHERE id = $1`,
    appendMessages: `
      INSERT INTO ${s}.messages (session_id, seq, message)
      SELECT $1, base.next + u.ord - 1, u.message::json
      FROM unnest($2::text[]) WITH ORDINALITY AS u(message, ord),
           (SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM ${s}.messages WHERE session_id = $1) AS base`,
    // Content-addressed within a session: the same bytes sent twice are stored once.
    insertBlobs: `
      INSERT INTO ${s}.part_blobs (session_id, id, data)
      SELECT $1, u.id, u.data FROM unnest($2::text[], $3::text[]) AS u(id, data)
      ON CONFLICT (session_id, id) DO NOTHING`,
    selectBlobs: `SELECT id, data FROM ${s}.part_blobs WHERE session_id = $1 AND id = ANY($2::text[])`,
    upsertTurn: `
      INSERT INTO ${s}.turns (session_id, turn_index, record) VALUES ($1, $2, $3::json)
      ON CONFLICT (session_id, turn_index) DO UPDATE SET record = EXCLUDED.record`,
    list: `
      SELECT s.id, s.agent, ${iso('s.updated_at')} AS updated_at, s.suspension::text <> 'null' AS suspended,
             (SELECT COUNT(*)::integer FROM ${s}.turns t WHERE t.session_id = s.id) AS turns
      FROM ${s}.sessions s ORDER BY s.updated_at DESC, s.id`,
    deleteSession: `DELETE FROM ${s}.sessions WHERE id = $1`,
    // The upsert's WHERE decides: a live lease of another holder is left alone (0 rows).
    acquireLease: `
      INSERT INTO ${s}.session_leases AS l (session_id, holder, expires_at) VALUES ($1, $2, clock_timestamp() + ${ttl})
      ON CONFLICT (session_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
      WHERE l.holder = EXCLUDED.holder OR l.expires_at <= clock_timestamp()`,
    renewLease: `UPDATE ${s}.session_leases SET expires_at = clock_timestamp() + ${ttl} WHERE session_id = $1 AND holder = $2`,
    releaseLease: `DELETE FROM ${s}.session_leases WHERE session_id = $1 AND holder = $2`,
  } as const;
}

/** The statements of one schema, by name. */
export type PostgresStatements = ReturnType<typeof postgresStatements>;
