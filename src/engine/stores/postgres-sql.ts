import { LEASE_CLOCK_TOLERANCE_MS, MAX_LEASE_TTL_MS } from './session-lease.js';

/**
 * Whether lease row `l` holds its session by the server's clock (`leaseState`'s rule): its
 * expiry is after now, and no further ahead than its TTL (the longest a store grants, for a
 * row written before the TTL was kept) plus the tolerance. Further ahead, the row was written
 * by a clock ahead of the server's as it is now (a server clock stepped back, a fail-over to
 * a server whose clock is behind, a row written by hand): it holds nothing.
 */
const heldBy = (l: string) =>
  `(${l}.expires_at > clock_timestamp() AND ${l}.expires_at <= clock_timestamp() + make_interval(secs => (COALESCE(${l}.ttl_ms, ${MAX_LEASE_TTL_MS}) + ${LEASE_CLOCK_TOLERANCE_MS})::double precision / 1000))`;

/**
 * The statements of {@link PostgresStore}, for one schema. `s` is the quoted schema name;
 * timestamps leave the database as ISO strings with milliseconds, in UTC, like the other
 * stores write them, and every clock reading is the server's (`clock_timestamp()`).
 */
export function postgresStatements(s: string) {
  const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  const now = `date_trunc('milliseconds', clock_timestamp())`;
  const ttl = `make_interval(secs => $3::double precision / 1000)`;
  const leaseColumns = (
    l: string,
  ) => `${l}.session_id, ${l}.holder, CASE WHEN isfinite(${l}.expires_at) THEN ${iso(`${l}.expires_at`)} END AS expires_at, ${l}.ttl_ms,
      CASE WHEN ${l}.expires_at <= clock_timestamp() THEN 'expired' WHEN ${heldBy(l)} THEN 'live' ELSE 'ahead' END AS state`;
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
    /*
     * What changed since a copy at revision $2 holding messages 0 … $3 - 1 and turns up to
     * $4 - 1, of the session created at $5 (null when the copy does not know): one row, whose
     * columns are read only when the session moved (a SubPlan inside CASE runs only when its
     * branch is taken). `message_count` and `created_at` let the caller check that the new
     * messages continue its copy (a session erased and created again under the same id does
     * not). $1 session.
     */
    loadSince: `
      SELECT s.agent, s.revision, ${iso('s.created_at')} AS created_at, NOT moved.yes AS unchanged,
             CASE WHEN moved.yes THEN s.state::text END AS state,
             CASE WHEN moved.yes THEN s.suspension::text END AS suspension,
             CASE WHEN moved.yes THEN ${iso('s.updated_at')} END AS updated_at,
             CASE WHEN moved.yes THEN (SELECT COALESCE(MAX(m.seq) + 1, 0)::integer FROM ${s}.messages m WHERE m.session_id = s.id) END AS message_count,
             CASE WHEN moved.yes THEN ARRAY(SELECT m.seq FROM ${s}.messages m WHERE m.session_id = s.id AND m.seq >= $3 ORDER BY m.seq) END AS seqs,
             CASE WHEN moved.yes THEN ARRAY(SELECT m.message::text FROM ${s}.messages m WHERE m.session_id = s.id AND m.seq >= $3 ORDER BY m.seq) END AS messages,
             CASE WHEN moved.yes THEN ARRAY(SELECT t.turn_index FROM ${s}.turns t WHERE t.session_id = s.id AND t.turn_index >= $4 - 1 ORDER BY t.turn_index) END AS turn_indexes,
             CASE WHEN moved.yes THEN ARRAY(SELECT t.record::text FROM ${s}.turns t WHERE t.session_id = s.id AND t.turn_index >= $4 - 1 ORDER BY t.turn_index) END AS turns,
             CASE WHEN moved.yes THEN ARRAY(SELECT st.steps::text FROM ${s}.turn_steps st WHERE st.session_id = s.id ORDER BY st.id) END AS steps
      FROM ${s}.sessions s,
           LATERAL (SELECT s.revision <> $2 OR ($5::text IS NOT NULL AND ${iso('s.created_at')} <> $5::text) AS yes) AS moved
      WHERE s.id = $1`,
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
    /*
     * A whole checkpoint in one statement, so one round trip and one commit: the fence, the
     * revision rule (the UPDATE of the row at the expected revision, or the INSERT of a new
     * session when it expects 0), and only if one of them wrote: the end of the turn's step
     * journal, the transcript's new messages, the turn record and, when asked, the release of
     * the lease. Concurrent writers on one revision: the row lock lets one UPDATE through and
     * the others find the revision moved (0 rows, nothing written); two creators of one
     * session: ON CONFLICT DO NOTHING leaves the second with 0 rows. The snapshot's revision
     * and agent come back (read only when nothing was written) so that a refusal is explained
     * by the shared revision rule.
     * $1 session, $2 agent, $3 expected revision, $4 state, $5 suspension, $6 messages (text[]),
     * $7 turn index, $8 turn record, $9 fence or null, $10 lease holder to release or null,
     * $11 and $12 the ids and bytes of the parts kept in part_blobs (content-addressed within
     * a session: the same bytes sent twice are stored once).
     */
    checkpoint: `
      WITH fence AS (
        SELECT $9::text IS NULL OR EXISTS (SELECT 1 FROM ${s}.session_leases WHERE session_id = $1 AND holder = $9::text) AS ok
      ), bumped AS (
        UPDATE ${s}.sessions SET revision = revision + 1, state = $4::json, suspension = $5::json, updated_at = ${now}
        WHERE id = $1 AND revision = $3 AND agent = $2 AND $3 > 0 AND (SELECT ok FROM fence)
        RETURNING revision
      ), created AS (
        INSERT INTO ${s}.sessions (id, agent, revision, state, suspension, created_at, updated_at)
        SELECT $1, $2, 1, $4::json, $5::json, t.now, t.now FROM (SELECT ${now} AS now) AS t
        WHERE $3 = 0 AND (SELECT ok FROM fence)
        ON CONFLICT (id) DO NOTHING
        RETURNING revision
      ), written AS (
        SELECT revision FROM bumped UNION ALL SELECT revision FROM created
      ), ended AS (
        DELETE FROM ${s}.turn_steps WHERE session_id = $1 AND EXISTS (SELECT 1 FROM written)
      ), appended AS (
        INSERT INTO ${s}.messages (session_id, seq, message)
        SELECT $1, base.next + u.ord - 1, u.message::json
        FROM unnest($6::text[]) WITH ORDINALITY AS u(message, ord),
             (SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM ${s}.messages WHERE session_id = $1) AS base
        WHERE EXISTS (SELECT 1 FROM written)
      ), recorded AS (
        INSERT INTO ${s}.turns (session_id, turn_index, record) SELECT $1, $7, $8::json WHERE EXISTS (SELECT 1 FROM written)
        ON CONFLICT (session_id, turn_index) DO UPDATE SET record = EXCLUDED.record
      ), blobs AS (
        INSERT INTO ${s}.part_blobs (session_id, id, data)
        SELECT $1, u.id, u.data FROM unnest($11::text[], $12::text[]) AS u(id, data) WHERE EXISTS (SELECT 1 FROM written)
        ON CONFLICT (session_id, id) DO NOTHING
      ), released AS (
        DELETE FROM ${s}.session_leases WHERE $10::text IS NOT NULL AND session_id = $1 AND holder = $10::text AND EXISTS (SELECT 1 FROM written)
      )
      SELECT w.revision, (SELECT ok FROM fence) AS fenced,
             CASE WHEN w.revision IS NULL THEN (SELECT revision FROM ${s}.sessions WHERE id = $1) END AS stored_revision,
             CASE WHEN w.revision IS NULL THEN (SELECT agent FROM ${s}.sessions WHERE id = $1) END AS stored_agent
      FROM (SELECT (SELECT revision FROM written) AS revision) AS w`,
    selectBlobs: `SELECT id, data FROM ${s}.part_blobs WHERE session_id = $1 AND id = ANY($2::text[])`,
    list: `
      SELECT s.id, s.agent, ${iso('s.updated_at')} AS updated_at, s.suspension::text <> 'null' AS suspended,
             (SELECT COUNT(*)::integer FROM ${s}.turns t WHERE t.session_id = s.id) AS turns
      FROM ${s}.sessions s ORDER BY s.updated_at DESC, s.id`,
    // The session's lease goes with it, whoever holds it: a turn still running there cannot
    // save (its fenced writes are refused `LeaseLost`), and the id is free for a new session.
    deleteSession: `WITH lease AS (DELETE FROM ${s}.session_leases WHERE session_id = $1) DELETE FROM ${s}.sessions WHERE id = $1`,
    // Sessions untouched for $1 days whose lease nobody holds (a turn running keeps its session), and lapsed leases.
    prune: `
      WITH pruned AS (
        DELETE FROM ${s}.sessions s WHERE s.updated_at < clock_timestamp() - make_interval(days => $1::integer)
          AND NOT EXISTS (SELECT 1 FROM ${s}.session_leases l WHERE l.session_id = s.id AND ${heldBy('l')})
        RETURNING s.id
      ), lapsed AS (
        DELETE FROM ${s}.session_leases WHERE expires_at < clock_timestamp() - make_interval(days => 1)
      )
      SELECT COUNT(*)::integer AS pruned FROM pruned`,
    // The upsert's WHERE decides: a lease of another holder that holds the session is left
    // alone (0 rows); an expired one, or one whose expiry lies beyond its TTL, is taken.
    acquireLease: `
      INSERT INTO ${s}.session_leases AS l (session_id, holder, expires_at, ttl_ms) VALUES ($1, $2, clock_timestamp() + ${ttl}, $3)
      ON CONFLICT (session_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at, ttl_ms = EXCLUDED.ttl_ms
      WHERE l.holder = EXCLUDED.holder OR NOT ${heldBy('l')}`,
    /*
     * The lease ($1 key, $2 holder, $3 ttl), then, if taken, the revision of session $4 in the
     * same round trip. The revision is a locking read (KEY SHARE, which blocks no writer): it
     * sees the newest committed row even when the lease was taken from a holder whose release
     * committed while this statement waited, after its snapshot.
     */
    acquireLeaseReadingRevision: `
      WITH taken AS (
        INSERT INTO ${s}.session_leases AS l (session_id, holder, expires_at, ttl_ms) VALUES ($1, $2, clock_timestamp() + ${ttl}, $3)
        ON CONFLICT (session_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at, ttl_ms = EXCLUDED.ttl_ms
        WHERE l.holder = EXCLUDED.holder OR NOT ${heldBy('l')}
        RETURNING 1
      )
      SELECT (SELECT COUNT(*) FROM taken) > 0 AS taken,
             CASE WHEN (SELECT COUNT(*) FROM taken) > 0 THEN COALESCE((SELECT revision FROM ${s}.sessions WHERE id = $4 FOR KEY SHARE), 0) END AS revision`,
    renewLease: `UPDATE ${s}.session_leases SET expires_at = clock_timestamp() + ${ttl}, ttl_ms = $3 WHERE session_id = $1 AND holder = $2`,
    // Every lease row as the server's clock judges it ('infinity' has no time to show).
    selectLeases: `SELECT ${leaseColumns('l')} FROM ${s}.session_leases l ORDER BY l.session_id`,
    // $1 session, $2 only while this holder has it, or null: whoever does.
    clearLease: `DELETE FROM ${s}.session_leases l WHERE l.session_id = $1 AND ($2::text IS NULL OR l.holder = $2::text) RETURNING ${leaseColumns('l')}`,
    releaseLease: `DELETE FROM ${s}.session_leases WHERE session_id = $1 AND holder = $2`,
  } as const;
}

/** The statements of one schema, by name. */
export type PostgresStatements = ReturnType<typeof postgresStatements>;
