"""A write batch of many subjects as one statement, each subject still under its own row-level security
(issue #17).

The memory service commits concurrent writes together (`cairn_servicekit.batching.Coalescer`). Row-level
security (migration 0014) admits a row only when the transaction's settings name its (tenant, subject), so
a batch of 64 agents' writes used to be 64 `set_config` round trips and 64 quota-checked inserts, each
walked, bound and sent by the service: at 64 agents that was half the writes/s of one agent writing as
fast (docs/performance.md).

`cairn_remember_batch(rows, default_quota)` and `cairn_append_batch(rows, max_turns, max_bytes)` take the
batch as one jsonb array and run, inside PostgreSQL, exactly what the service ran per subject (per session
for appends): set the subject's scope (transaction-local), then the one quota-checked statement for its
rows. They are SECURITY INVOKER: every row is read and written as `cairn_service` under the policies, with
the scope set to that row's own (tenant, subject), so a row can land only in the subject it names, which
the service took from the verified scope. The `SET` clauses blank the scope on entry and put the caller's
settings back on exit, so the calling transaction's scope (and the engine hook's record of it) is as it was.

Subjects are locked in (tenant, subject) order, bytewise (`COLLATE "C"`: Python's order of the same
strings), the order every batch takes, so two batches never deadlock on two count rows.

Memories: a row counts against the quota only if it would be written (its project is the tenant's, its id
is not taken yet), so the k-th such row is written exactly when live + k <= quota: the rows a sequence of
single writes would write. The id probe reads the statement's snapshot, taken before the count row's lock
was granted, so a retry of the same write committed meanwhile by another batch passes it, is counted, and
then inserts nothing (ON CONFLICT): a later row could be refused one short. So the rows a first statement
left out run once more, with the lock held, where the answer is exact. The probe is a scalar subquery (a
primary-key lookup per row): as NOT EXISTS the planner made it a hash anti-join over the subject's rows.
Ids must be distinct within one call (the caller splits repeats into rounds).

Appends: under the session's upper-bound counts the rows that fit are a prefix in submission order; the
rest come back without a seq and go to the service's exact check. Each turn takes its seq before the
insert, in submission order.

Revision ID: 0017
Revises: 0016
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

SERVICE_ROLE = "cairn_service"
REMEMBER = "cairn_remember_batch(jsonb, integer)"
APPEND = "cairn_append_batch(jsonb, integer, integer)"

# Entry blanks every scope setting; exit restores the caller's (a SET clause's effect ends with the call).
_FUNCTION_SETTINGS = """
    SET search_path = pg_catalog, public
    SET cairn.tenant_id = '' SET cairn.subject_id = '' SET cairn.all_subjects = '' SET cairn.maintenance = ''
"""

REMEMBER_BATCH = f"""
CREATE FUNCTION {REMEMBER.replace("(jsonb, integer)", "(batch jsonb, default_quota integer)")}
RETURNS TABLE (row_n integer, row_id uuid, row_created_at timestamptz)
LANGUAGE plpgsql VOLATILE {_FUNCTION_SETTINGS}
AS $$
DECLARE
    subject record;
    pending jsonb;
    written integer[];
BEGIN
    FOR subject IN
        SELECT g.tenant_id, g.subject_id, jsonb_agg(g.r ORDER BY g.n) AS rows
        FROM (
            SELECT r->>'tenant_id' AS tenant_id, r->>'subject_id' AS subject_id, (r->>'n')::integer AS n, r
            FROM jsonb_array_elements(batch) AS r
        ) g
        GROUP BY g.tenant_id, g.subject_id
        ORDER BY g.tenant_id COLLATE "C", g.subject_id COLLATE "C"
    LOOP
        PERFORM set_config('cairn.tenant_id', subject.tenant_id, true),
            set_config('cairn.subject_id', subject.subject_id, true);
        pending := subject.rows;
        FOR attempt IN 1..2 LOOP  -- the second pass is exact (see the module's docstring)
            written := '{{}}';
            FOR row_n, row_id, row_created_at IN
                WITH counter AS (
                    INSERT INTO memory_live_counts AS c (tenant_id, subject_id, live)
                    VALUES (subject.tenant_id::uuid, subject.subject_id, 0)
                    ON CONFLICT (tenant_id, subject_id) DO UPDATE SET live = c.live
                    RETURNING c.live
                ),
                wanted AS (
                    SELECT r.*, row_number() OVER (ORDER BY r.n) AS k
                    FROM jsonb_to_recordset(pending) AS r(
                        n integer, id uuid, project_id uuid, text text, confidence float8, source text,
                        source_session_id text, tags text[], metadata jsonb
                    )
                    WHERE (r.project_id IS NULL
                           OR EXISTS (SELECT 1 FROM projects p
                                      WHERE p.id = r.project_id AND p.tenant_id = subject.tenant_id::uuid))
                        AND (SELECT m.id FROM memories m WHERE m.id = r.id) IS NULL
                ),
                inserted AS (
                    INSERT INTO memories AS m (
                        id, tenant_id, subject_id, project_id, text, confidence, source, source_session_id,
                        tags, metadata, recall_count
                    )
                    SELECT w.id, subject.tenant_id::uuid, subject.subject_id, w.project_id, w.text,
                        w.confidence, w.source, w.source_session_id, w.tags, w.metadata, 0
                    FROM wanted w, counter
                    WHERE counter.live + w.k <= COALESCE(
                        (SELECT t.memory_quota FROM tenants t WHERE t.id = subject.tenant_id::uuid), default_quota)
                    ORDER BY w.n
                    ON CONFLICT (id) DO NOTHING
                    RETURNING m.id, m.created_at
                )
                SELECT w.n, i.id, i.created_at FROM inserted i JOIN wanted w ON w.id = i.id
            LOOP
                written := written || row_n;
                RETURN NEXT;
            END LOOP;
            SELECT jsonb_agg(r) INTO pending
            FROM jsonb_array_elements(pending) AS r WHERE (r->>'n')::integer <> ALL (written);
            EXIT WHEN pending IS NULL;
        END LOOP;
    END LOOP;
END $$
"""

APPEND_BATCH = f"""
CREATE FUNCTION {APPEND.replace("(jsonb, integer, integer)", "(batch jsonb, max_turns integer, max_bytes integer)")}
RETURNS TABLE (row_n integer, row_seq bigint, row_created_at timestamptz)
LANGUAGE plpgsql VOLATILE {_FUNCTION_SETTINGS}
AS $$
DECLARE
    session record;
BEGIN
    FOR session IN
        SELECT g.tenant_id, g.subject_id, g.session_id, jsonb_agg(g.r ORDER BY g.n) AS rows
        FROM (
            SELECT r->>'tenant_id' AS tenant_id, r->>'subject_id' AS subject_id,
                r->>'session_id' AS session_id, (r->>'n')::integer AS n, r
            FROM jsonb_array_elements(batch) AS r
        ) g
        GROUP BY g.tenant_id, g.subject_id, g.session_id
        ORDER BY g.tenant_id COLLATE "C", g.subject_id COLLATE "C", g.session_id COLLATE "C"
    LOOP
        PERFORM set_config('cairn.tenant_id', session.tenant_id, true),
            set_config('cairn.subject_id', session.subject_id, true);
        RETURN QUERY
            WITH counter AS (
                INSERT INTO session_turn_counts AS c (tenant_id, subject_id, session_id, turns, bytes)
                VALUES (session.tenant_id::uuid, session.subject_id, session.session_id, 0, 0)
                ON CONFLICT (tenant_id, subject_id, session_id) DO UPDATE SET turns = c.turns
                RETURNING c.turns, c.bytes
            ),
            wanted AS (
                SELECT r.*, nextval('session_memories_seq_seq') AS seq
                FROM (
                    SELECT r.*, row_number() OVER (ORDER BY r.n) AS k,
                        sum(octet_length(r.content)) OVER (ORDER BY r.n) AS total
                    FROM jsonb_to_recordset(session.rows) AS r(
                        n integer, role text, content text, metadata jsonb, expires_at timestamptz,
                        write_id uuid
                    )
                    ORDER BY r.n
                ) r, counter
                WHERE counter.turns + r.k <= max_turns AND counter.bytes + r.total <= max_bytes
            ),
            written AS (
                INSERT INTO session_memories AS s (
                    seq, tenant_id, subject_id, session_id, role, content, metadata, expires_at, write_id
                )
                SELECT w.seq, session.tenant_id::uuid, session.subject_id, session.session_id, w.role,
                    w.content, w.metadata, w.expires_at, w.write_id
                FROM wanted w
                ORDER BY w.n
                ON CONFLICT (tenant_id, subject_id, write_id) WHERE write_id IS NOT NULL DO NOTHING
                RETURNING s.seq, s.created_at
            )
            SELECT w.n, x.seq, x.created_at FROM written x JOIN wanted w ON w.seq = x.seq;
    END LOOP;
END $$
"""


def upgrade() -> None:
    op.execute(REMEMBER_BATCH)
    op.execute(APPEND_BATCH)
    for function in (REMEMBER, APPEND):
        op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {SERVICE_ROLE}")


def downgrade() -> None:
    for function in (APPEND, REMEMBER):
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
