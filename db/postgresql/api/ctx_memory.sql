--liquibase formatted sql logicalFilePath:db/packages/postgresql/0030_ctx_memory.sql

--changeset ctxasm:pg-ctx-memory-put-memory dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.put_memory: version 1 of a new memory, in the session tenant
CREATE OR REPLACE FUNCTION ctx_memory.put_memory(in_memory_type varchar, in_record jsonb) RETURNS varchar
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := ctxasm.require_tenant();
    l_table  varchar := ctxasm.memory_table(in_memory_type);
BEGIN
    PERFORM ctxasm.check_record(in_memory_type, l_table, in_record, l_tenant);
    PERFORM ctxasm.require_row_scope(in_memory_type, in_record);
    IF coalesce(in_record ->> 'id', '') = '' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'),
            MESSAGE = format('invalid_field: %s.id: required', in_memory_type);
    END IF;
    PERFORM ctxasm.insert_row_version(in_memory_type, l_table, l_tenant, 1, in_record);
    RETURN in_record ->> 'id';
END;
$$;
--rollback DROP FUNCTION ctx_memory.put_memory(varchar, jsonb);

--changeset ctxasm:pg-ctx-memory-add-turn dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.add_turn: the thread's next turn (turn_index = the highest message's + 1), written as
--comment: put_memory writes; the tenant's registry row is locked so two turns of a thread never share an index
CREATE OR REPLACE FUNCTION ctx_memory.add_turn(in_record jsonb) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_max_turn constant integer := 8000;  -- characters: a question's cap, as a question becomes a turn
    l_tenant varchar := ctxasm.require_tenant();
    l_thread varchar := in_record ->> 'thread_id';
    l_next   integer;
BEGIN
    IF coalesce(l_thread, '') = '' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'),
            MESSAGE = 'invalid_field: conversation.thread_id: required';
    END IF;
    -- A longer turn could never be seated in a window: refused, not stored to be left out of every window.
    IF length(in_record ->> 'content') > co_max_turn THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
            'invalid_field: conversation.content: the turn is %s characters long, at most %s are allowed',
            length(in_record ->> 'content'), co_max_turn);
    END IF;
    IF coalesce(in_record ->> 'role', '') NOT IN ('user', 'assistant') THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
            'invalid_field: conversation.role: a turn is user or assistant, not %s', ctxasm.quoted(in_record ->> 'role'));
    END IF;
    IF in_record ? 'turn_index' OR in_record ? 'event_type' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
            'invalid_field: conversation.%s: add_turn assigns it',
            CASE WHEN in_record ? 'turn_index' THEN 'turn_index' ELSE 'event_type' END);
    END IF;
    PERFORM 1 FROM ctxasm.ctx_tenant WHERE tenant_id = l_tenant FOR UPDATE;
    SELECT coalesce(max(c.turn_index), 0) + 1 INTO l_next
      FROM ctxasm.conversation_memory AS c
     WHERE c.tenant_id = l_tenant AND c.thread_id = l_thread AND c.event_type = 'message';
    PERFORM ctx_memory.put_memory('conversation', in_record || jsonb_build_object('turn_index', l_next));
    RETURN l_next;
END;
$$;
--rollback DROP FUNCTION ctx_memory.add_turn(jsonb);

--changeset ctxasm:pg-ctx-memory-supersede dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.supersede: retire the active version and insert the next, in the caller's transaction
CREATE OR REPLACE FUNCTION ctx_memory.supersede(in_memory_type varchar, in_id varchar, in_record jsonb)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant  varchar := ctxasm.require_tenant();
    l_table   varchar := ctxasm.memory_table(in_memory_type);
    l_current jsonb;
    l_version integer;
    l_from    timestamptz;
BEGIN
    PERFORM ctxasm.check_record(in_memory_type, l_table, in_record, l_tenant);
    IF in_record ? 'id' AND in_record ->> 'id' IS DISTINCT FROM in_id THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
            'invalid_field: %s.id: a new version keeps the id %s', in_memory_type, ctxasm.quoted(in_id));
    END IF;
    EXECUTE format('SELECT to_jsonb(t) FROM ctxasm.%I t WHERE t.tenant_id = $1 AND t.id = $2 '
                   'AND t.status = ''active'' FOR UPDATE', l_table)
        INTO l_current USING l_tenant, in_id;
    IF l_current IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('memory_not_found'), MESSAGE = format(
            'memory_not_found: no active %s %s', in_memory_type, ctxasm.quoted(in_id));
    END IF;
    -- Both the version it retires and the one it writes must be the session's to write.
    PERFORM ctxasm.require_row_scope(in_memory_type, l_current);
    PERFORM ctxasm.require_row_scope(in_memory_type, l_current || in_record);
    l_version := (l_current ->> 'version')::integer;
    BEGIN
        -- By default the new version starts now: the transaction's start, unless a version committed since (a
        -- concurrent writer of the same row, whose lock this call waited for) starts later; then the moment it is
        -- written, as Oracle's systimestamp is read after the lock too.
        l_from := coalesce((in_record ->> 'valid_from')::timestamptz,
                           CASE WHEN now() >= (l_current ->> 'valid_from')::timestamptz THEN now()
                                ELSE clock_timestamp() END);
    EXCEPTION WHEN data_exception THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'),
            MESSAGE = format('invalid_field: %s.valid_from: %s', in_memory_type, left(SQLERRM, 300));
    END;
    IF l_from < (l_current ->> 'valid_from')::timestamptz THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
            'invalid_field: %s.valid_from: %s is earlier than version %s''s valid_from %s',
            in_memory_type, l_from, l_version, l_current ->> 'valid_from');
    END IF;
    EXECUTE format('UPDATE ctxasm.%I SET status = ''superseded'', valid_until = $4 '
                   'WHERE tenant_id = $1 AND id = $2 AND version = $3', l_table)
        USING l_tenant, in_id, l_version, l_from;
    -- A stored token count counts one text: a new text without its own count gets none (the fitter counts it).
    IF in_record ? 'content' AND NOT in_record ? 'content_tokens' THEN
        l_current := l_current - 'content_tokens';
    END IF;
    -- Lifecycle fields are not inherited: the new version starts its own validity.
    PERFORM ctxasm.insert_row_version(
        in_memory_type, l_table, l_tenant, l_version + 1,
        (l_current - 'valid_until' - 'deleted_at' - 'created_at' - 'created_xid')
        || in_record || jsonb_build_object('valid_from', l_from));
    RETURN l_version + 1;
END;
$$;
--rollback DROP FUNCTION ctx_memory.supersede(varchar, varchar, jsonb);

--changeset ctxasm:pg-ctx-memory-delete-memory dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.delete_memory: soft deletion; the row version stays for provenance and replay
CREATE OR REPLACE FUNCTION ctx_memory.delete_memory(in_memory_type varchar, in_id varchar,
                                                    in_deleted_at timestamptz DEFAULT now())
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := ctxasm.require_tenant();
    l_table  varchar := ctxasm.memory_table(in_memory_type);
    l_row    jsonb;
BEGIN
    EXECUTE format('UPDATE ctxasm.%I AS t SET status = ''deleted'', deleted_at = $3 '
                   'WHERE t.tenant_id = $1 AND t.id = $2 AND t.status = ''active'' RETURNING to_jsonb(t)', l_table)
        INTO l_row USING l_tenant, in_id, coalesce(in_deleted_at, now());
    IF l_row IS NOT NULL THEN
        PERFORM ctxasm.require_row_scope(in_memory_type, l_row);  -- raising undoes the UPDATE
    ELSE
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('memory_not_found'), MESSAGE = format(
            'memory_not_found: no active %s %s', in_memory_type, ctxasm.quoted(in_id));
    END IF;
END;
$$;
--rollback DROP FUNCTION ctx_memory.delete_memory(varchar, varchar, timestamptz);

--changeset ctxasm:pg-ctx-memory-capture-snapshot dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.capture_snapshot: the PostgreSQL counterpart of DBMS_FLASHBACK.GET_SYSTEM_CHANGE_NUMBER
CREATE OR REPLACE FUNCTION ctx_memory.capture_snapshot() RETURNS varchar
LANGUAGE sql STABLE AS $$
    SELECT pg_current_snapshot()::text
$$;
--rollback DROP FUNCTION ctx_memory.capture_snapshot();

--changeset ctxasm:pg-ctx-memory-rows-as-of dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.rows_as_of: every row version visible in a recorded snapshot (Oracle: AS OF SCN)
CREATE OR REPLACE FUNCTION ctx_memory.rows_as_of(in_memory_type varchar, in_snapshot varchar)
RETURNS TABLE (row_json jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant   varchar := ctxasm.require_tenant();
    l_table    varchar := ctxasm.memory_table(in_memory_type);
    l_snapshot pg_snapshot := ctxasm.parse_snapshot(in_snapshot);
BEGIN
    -- A row version was visible in the snapshot if the transaction that wrote it was, and the one that
    -- retired it (history only) was not. RLS keeps both reads inside the session tenant. search_text is
    -- the database's own index of the text, not part of the row's state.
    RETURN QUERY EXECUTE format(
        'SELECT v.r FROM ('
        '  SELECT to_jsonb(t) - ''created_xid'' - ''search_text'' FROM ctxasm.%I t '
        '   WHERE t.tenant_id = $1 AND pg_visible_in_snapshot(t.created_xid, $2) '
        '  UNION ALL '
        '  SELECT to_jsonb(h) - ''created_xid'' - ''retired_xid'' - ''search_text'' FROM ctxasm.%I h '
        '   WHERE h.tenant_id = $1 AND pg_visible_in_snapshot(h.created_xid, $2) '
        '     AND NOT pg_visible_in_snapshot(h.retired_xid, $2)'
        ') AS v(r) ORDER BY v.r ->> ''id'', (v.r ->> ''version'')::integer', l_table, l_table || '_history')
        USING l_tenant, l_snapshot;
END;
$$;
--rollback DROP FUNCTION ctx_memory.rows_as_of(varchar, varchar);

--changeset ctxasm:pg-ctx-memory-read-event dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.read_event: one active conversation event of the session's tenant (a tool result, a
--comment: recorded request) as {"event_type", "content", "content_json"}, or NULL when there is none
CREATE OR REPLACE FUNCTION ctx_memory.read_event(in_event_id varchar) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := ctxasm.require_tenant();
    l_result jsonb;
BEGIN
    SELECT jsonb_build_object('event_type', m.event_type, 'content', m.content, 'content_json', m.content_json)
      INTO l_result
      FROM ctxasm.conversation_memory AS m
     WHERE m.tenant_id = l_tenant AND m.id = in_event_id AND m.role = 'event' AND m.status = 'active';
    RETURN l_result;
END;
$$;
--rollback DROP FUNCTION ctx_memory.read_event(varchar);

--changeset ctxasm:pg-ctx-memory-row-states dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.row_states: for each [type, id, version] of in_refs the row version's status now and in
--comment: the recorded snapshot: {"type:id:version": [now, then or null]}; versions the session cannot see now
--comment: are absent. Replay asks this before it selects again.
CREATE OR REPLACE FUNCTION ctx_memory.row_states(in_refs jsonb, in_snapshot varchar) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_max_refs constant integer := 10000;
    l_tenant    varchar := ctxasm.require_tenant();
    l_snapshot  pg_snapshot := ctxasm.parse_snapshot(in_snapshot);
    l_result    jsonb;
BEGIN
    IF jsonb_typeof(in_refs) IS DISTINCT FROM 'array' OR jsonb_array_length(in_refs) > co_max_refs
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(in_refs) AS r (ref)
                   WHERE jsonb_typeof(r.ref) <> 'array' OR jsonb_array_length(r.ref) <> 3
                      OR jsonb_typeof(r.ref -> 2) <> 'number') THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'), MESSAGE = format(
            'invalid_argument: in_refs must be a JSON array of at most %s [type, id, version] references',
            co_max_refs);
    END IF;
    WITH wanted AS (
        SELECT DISTINCT r.ref ->> 0 AS memory_type, r.ref ->> 1 AS id, (r.ref ->> 2)::numeric AS version
          FROM jsonb_array_elements(in_refs) AS r (ref)
    )
    SELECT jsonb_object_agg(
               now_row.memory_type || ':' || now_row.id || ':' || now_row.version,
               jsonb_build_array(now_row.status,
                                 (SELECT was.status FROM ctxasm.memory_rows(l_snapshot) AS was
                                   WHERE was.tenant_id = l_tenant AND was.memory_type = now_row.memory_type
                                     AND was.id = now_row.id AND was.version = now_row.version)))
      INTO l_result
      FROM wanted AS w
      JOIN ctxasm.memory_row AS now_row
        ON now_row.tenant_id = l_tenant AND now_row.memory_type = w.memory_type AND now_row.id = w.id
       AND now_row.version = w.version;
    RETURN coalesce(l_result, '{}'::jsonb);
END;
$$;
--rollback DROP FUNCTION ctx_memory.row_states(jsonb, varchar);

--changeset ctxasm:pg-ctx-memory-inventory dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.inventory: the session's row versions counted per memory type, event type and status:
--comment: [{"memory_type", "event_type", "status", "rows"}], by type (the order of the memory types), event type
--comment: and status. event_type is null except for conversation rows: a turn is 'message'; a recorded window
--comment: ('context_manifest'), provider request, model response or tool result is an event, not a turn
CREATE OR REPLACE FUNCTION ctx_memory.inventory() RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := ctxasm.require_tenant();
    l_type   record;
    l_counts jsonb;
    l_result jsonb := '[]'::jsonb;
BEGIN
    FOR l_type IN SELECT m.memory_type, m.table_name FROM ctxasm.memory_type AS m ORDER BY m.ordinal LOOP
        EXECUTE format('SELECT jsonb_agg(jsonb_build_object(''memory_type'', $2, ''event_type'', s.event_type, '
                       '''status'', s.status, ''rows'', s.n) ORDER BY s.event_type, s.status) '
                       'FROM (SELECT %s AS event_type, t.status, count(*) AS n FROM ctxasm.%I AS t '
                       'WHERE t.tenant_id = $1 GROUP BY 1, 2) AS s',
                       CASE WHEN l_type.memory_type = 'conversation' THEN 't.event_type' ELSE 'NULL::varchar' END,
                       l_type.table_name)
            INTO l_counts USING l_tenant, l_type.memory_type;
        l_result := l_result || coalesce(l_counts, '[]'::jsonb);
    END LOOP;
    RETURN l_result;
END;
$$;
--rollback DROP FUNCTION ctx_memory.inventory();

--changeset ctxasm:pg-ctx-memory-thread-activity dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.thread_activity: the threads of the session's tenant (of one user and agent when given) that
--comment: have message turns their episode summary does not cover yet, most such turns first, at most in_limit:
--comment: [{"thread_id", "user_id", "agent_id", "turns", "new_turns", "last_turn_index", "last_turn_at",
--comment: "summarized_through", "summary": null or {"ref", "content", "episode", "valid_from"}}]. A thread's
--comment: episode summary is the active summary row keyed summary_key 'thread:<thread_id>'; it covers the turns up
--comment: to its content_json.episode.last_turn. What summarize-threads reads to pick the threads it summarizes
--comment: and the summary it continues.
CREATE OR REPLACE FUNCTION ctx_memory.thread_activity(in_user_id varchar, in_agent_id varchar, in_limit integer)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_max_limit constant integer := 10000;
    l_tenant     varchar := ctxasm.require_scope(in_user_id, in_agent_id);
    l_result     jsonb;
BEGIN
    PERFORM ctxasm.require_limit(in_limit, co_max_limit);
    WITH episodes AS (
        SELECT s.summary_key, s.id, s.version,
               CASE WHEN jsonb_typeof(s.content_json -> 'episode' -> 'last_turn') = 'number'
                    THEN (s.content_json -> 'episode' ->> 'last_turn')::numeric END AS through,
               jsonb_build_object('ref', jsonb_build_array('summary', s.id, s.version), 'content', s.content,
                                  'episode', s.content_json -> 'episode', 'valid_from', s.valid_from) AS summary
          FROM ctxasm.summarization_memory AS s
         WHERE s.tenant_id = l_tenant AND s.status = 'active' AND s.summary_key LIKE 'thread:%'
    ),
    threads AS (
        SELECT c.thread_id, c.user_id, c.agent_id, count(*) AS turns,
               count(*) FILTER (WHERE c.turn_index > coalesce(e.through, 0)) AS new_turns,
               max(c.turn_index) AS last_turn_index, max(c.valid_from) AS last_turn_at, e.through, e.summary
          FROM ctxasm.conversation_memory AS c
          LEFT JOIN episodes AS e ON e.summary_key = 'thread:' || c.thread_id
         WHERE c.tenant_id = l_tenant AND c.event_type = 'message' AND c.status = 'active'
           AND c.thread_id IS NOT NULL
           AND (in_user_id IS NULL OR c.user_id = in_user_id) AND (in_agent_id IS NULL OR c.agent_id = in_agent_id)
         GROUP BY c.thread_id, c.user_id, c.agent_id, e.id, e.version, e.through, e.summary
    )
    SELECT jsonb_agg(jsonb_build_object(
               'thread_id', t.thread_id, 'user_id', t.user_id, 'agent_id', t.agent_id, 'turns', t.turns,
               'new_turns', t.new_turns, 'last_turn_index', t.last_turn_index, 'last_turn_at', t.last_turn_at,
               'summarized_through', t.through, 'summary', t.summary)
               ORDER BY t.new_turns DESC, t.thread_id, t.user_id, t.agent_id)
      INTO l_result
      FROM (SELECT * FROM threads AS x WHERE x.new_turns > 0
             ORDER BY x.new_turns DESC, x.thread_id, x.user_id, x.agent_id LIMIT in_limit) AS t;
    RETURN coalesce(l_result, '[]'::jsonb);
END;
$$;
--rollback DROP FUNCTION ctx_memory.thread_activity(varchar, varchar, integer);

--changeset ctxasm:pg-ctx-memory-thread-turns dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.thread_turns: a thread's active message turns after turn in_after_turn, in turn order, at most
--comment: in_limit; a claim that names a user (an agent) reads that user's (agent's) turns only:
--comment: [{"ref", "turn_index", "role", "speaker", "content", "valid_from", "user_id", "agent_id"}]
CREATE OR REPLACE FUNCTION ctx_memory.thread_turns(in_thread_id varchar, in_after_turn integer, in_limit integer)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_max_limit constant integer := 10000;
    l_tenant     varchar := ctxasm.require_tenant();
    l_user       varchar := ctxasm.claim_scope('user');
    l_agent      varchar := ctxasm.claim_scope('agent');
    l_result     jsonb;
BEGIN
    PERFORM ctxasm.require_limit(in_limit, co_max_limit);
    SELECT jsonb_agg(jsonb_build_object(
               'ref', jsonb_build_array('conversation', t.id, t.version), 'turn_index', t.turn_index,
               'role', t.role, 'speaker', t.speaker, 'content', t.content, 'valid_from', t.valid_from,
               'user_id', t.user_id, 'agent_id', t.agent_id) ORDER BY t.turn_index, t.id)
      INTO l_result
      FROM (SELECT c.id, c.version, c.turn_index, c.role, c.speaker, c.content, c.valid_from, c.user_id,
                   c.agent_id
              FROM ctxasm.conversation_memory AS c
             WHERE c.tenant_id = l_tenant AND c.thread_id = in_thread_id AND c.event_type = 'message'
               AND c.status = 'active' AND c.turn_index > coalesce(in_after_turn, 0)
               AND (l_user IS NULL OR c.user_id = l_user) AND (l_agent IS NULL OR c.agent_id = l_agent)
             ORDER BY c.turn_index, c.id
             LIMIT in_limit) AS t;
    RETURN coalesce(l_result, '[]'::jsonb);
END;
$$;
--rollback DROP FUNCTION ctx_memory.thread_turns(varchar, integer, integer);

--changeset ctxasm:pg-ctx-memory-read-facts dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.read_facts: facts (entity rows) whose subject starts with in_subject_prefix, of the claim's user
--comment: and agent when it names them, at most in_limit row versions: without in_id the active ones, newest first;
--comment: with in_id every version of that fact (erased ones left out), oldest first. The read an adapter lists,
--comment: gets and versions its own facts through, on the tenant's partition by a tenant-leading index:
--comment: [{"ref", "subject", "predicate", "content", "content_json", "status", "valid_from", "first_valid_from",
--comment: "deleted_at", "user_id", "agent_id"}]
CREATE OR REPLACE FUNCTION ctx_memory.read_facts(in_subject_prefix varchar, in_predicate varchar, in_id varchar,
                                                 in_limit integer)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_max_facts constant integer := 1000;
    l_tenant     varchar := ctxasm.require_tenant();
    l_user       varchar := ctxasm.claim_scope('user');
    l_agent      varchar := ctxasm.claim_scope('agent');
    l_result     jsonb;
BEGIN
    PERFORM ctxasm.require_limit(in_limit, co_max_facts);
    -- An empty prefix is refused as NULL is, as on Oracle, where '' is NULL.
    IF coalesce(in_subject_prefix, '') = '' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'),
            MESSAGE = 'invalid_argument: in_subject_prefix is required';
    END IF;
    SELECT jsonb_agg(jsonb_build_object(
               'ref', jsonb_build_array('entity', f.id, f.version), 'subject', f.subject, 'predicate', f.predicate,
               'content', f.content, 'content_json', f.content_json, 'status', f.status,
               'valid_from', f.valid_from, 'first_valid_from', o.valid_from, 'deleted_at', f.deleted_at,
               'user_id', f.user_id, 'agent_id', f.agent_id)
               ORDER BY f.newest DESC, f.version, f.id)
      INTO l_result
      FROM (SELECT e.id, e.version, e.subject, e.predicate, e.content, e.content_json, e.status, e.valid_from,
                   e.deleted_at, e.user_id, e.agent_id, CASE WHEN in_id IS NULL THEN e.valid_from END AS newest
              FROM ctxasm.entity_memory AS e
             WHERE e.tenant_id = l_tenant
               AND starts_with(e.subject, in_subject_prefix)
               AND (in_predicate IS NULL OR e.predicate = in_predicate)
               AND (CASE WHEN in_id IS NULL THEN e.status = 'active' ELSE e.id = in_id AND e.status <> 'erased' END)
               AND (l_user IS NULL OR e.user_id = l_user) AND (l_agent IS NULL OR e.agent_id = l_agent)
             ORDER BY newest DESC, e.version, e.id
             LIMIT in_limit) AS f
      -- when the fact was first written: its first version, by the primary key
      LEFT JOIN ctxasm.entity_memory AS o ON o.tenant_id = l_tenant AND o.id = f.id AND o.version = 1;
    RETURN coalesce(l_result, '[]'::jsonb);
END;
$$;
--rollback DROP FUNCTION ctx_memory.read_facts(varchar, varchar, varchar, integer);

--changeset ctxasm:pg-ctx-memory-read-compressions dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.read_compressions: the stored compressions in_refs names ([["compression", id, version], ...]),
--comment: as they are now: {"compression:id:version": {"status", "content", "content_tokens", "source",
--comment: "source_hash", "generating_model", "prompt_version"}}; versions the session cannot see are absent. Replay
--comment: reads the compressions a window wrote after its snapshot through this (never through a model).
CREATE OR REPLACE FUNCTION ctx_memory.read_compressions(in_refs jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_max_refs constant integer := 10000;
    l_tenant    varchar := ctxasm.require_tenant();
    l_result    jsonb;
BEGIN
    IF jsonb_typeof(in_refs) IS DISTINCT FROM 'array' OR jsonb_array_length(in_refs) > co_max_refs
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(in_refs) AS r (ref)
                   WHERE jsonb_typeof(r.ref) <> 'array' OR jsonb_array_length(r.ref) <> 3
                      OR r.ref ->> 0 IS DISTINCT FROM 'compression' OR jsonb_typeof(r.ref -> 1) <> 'string'
                      OR coalesce(r.ref ->> 2, '') !~ '^[0-9]{1,9}$') THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'), MESSAGE = format(
            'invalid_argument: in_refs must be a JSON array of at most %s ["compression", id, version] references',
            co_max_refs);
    END IF;
    SELECT jsonb_object_agg('compression:' || k.id || ':' || k.version, jsonb_build_object(
               'status', k.status, 'content', k.content, 'content_tokens', k.content_tokens,
               'source', jsonb_build_array(k.source_type, k.source_id, k.source_version),
               'source_hash', k.source_hash, 'generating_model', k.generating_model,
               'prompt_version', k.prompt_version))
      INTO l_result
      FROM (SELECT DISTINCT r.ref ->> 1 AS id, (r.ref ->> 2)::integer AS version
              FROM jsonb_array_elements(in_refs) AS r (ref)) AS w
      JOIN ctxasm.context_compression AS k ON k.tenant_id = l_tenant AND k.id = w.id AND k.version = w.version;
    RETURN coalesce(l_result, '{}'::jsonb);
END;
$$;
--rollback DROP FUNCTION ctx_memory.read_compressions(jsonb);

-- Erasure. These changesets were first deployed from a file of their own; each names that file's path with
-- logicalFilePath, so a deployment that ran them there runs nothing again.

--changeset ctxasm:pg-internal-scrub-row dbms:postgresql runOnChange:true splitStatements:false logicalFilePath:db/packages/postgresql/0035_ctx_memory_erase.sql
--comment: remove the content of every version of one row not erased yet, in the table and in its history; returns
--comment: the row versions scrubbed and the history copies removed
DROP FUNCTION IF EXISTS ctxasm.scrub_row(varchar, varchar, varchar);
CREATE OR REPLACE FUNCTION ctxasm.scrub_row(in_table varchar, in_tenant_id varchar, in_id varchar,
                                            OUT out_rows integer, OUT out_history_rows integer)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_sets text;
BEGIN
    -- Every free-text and payload column: '[erased]' where the column must hold a value, NULL otherwise
    -- (source_hash too: the hash of an erased text would confirm a guess of it).
    SELECT string_agg(format('%I = %s', a.attname,
               CASE WHEN t.typname IN ('text', 'varchar', 'bpchar') AND a.attnotnull THEN '''[erased]'''
                    WHEN t.typname = 'jsonb' AND a.attnotnull THEN
                        CASE WHEN a.attname = 'source_refs' THEN '''[]''::jsonb' ELSE '''{}''::jsonb' END
                    ELSE 'NULL' END), ', ')
      INTO l_sets
      FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
     WHERE a.attrelid = format('ctxasm.%I', in_table)::regclass AND a.attnum > 0 AND NOT a.attisdropped
       AND a.attgenerated = ''  -- generated columns (search_text) follow the scrubbed content by themselves
       AND a.attname NOT IN ('tenant_id', 'id', 'version', 'user_id', 'agent_id', 'thread_id', 'status', 'role',
                             'event_type', 'source_type', 'source_id', 'derived_type', 'derived_id', 'relation',
                             'document_id')
       AND (t.typname IN ('text', 'varchar', 'bpchar', 'jsonb', 'vector') OR a.attname = 'confidence');
    -- A version erased before has nothing left to scrub: it is not counted again (a second erase reports none).
    EXECUTE format('UPDATE ctxasm.%I SET %s, status = ''erased'', deleted_at = coalesce(deleted_at, now()) '
                   'WHERE tenant_id = $1 AND id = $2 AND status <> ''erased''', in_table, l_sets)
        USING in_tenant_id, in_id;
    GET DIAGNOSTICS out_rows = ROW_COUNT;
    -- The history holds the earlier versions, and the copies the UPDATE above just made: all of it goes.
    EXECUTE format('DELETE FROM ctxasm.%I WHERE tenant_id = $1 AND id = $2', in_table || '_history')
        USING in_tenant_id, in_id;
    GET DIAGNOSTICS out_history_rows = ROW_COUNT;
    -- The UPDATE itself put one copy per version there: those are not earlier history of the caller's.
    out_history_rows := out_history_rows - out_rows;
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.scrub_row(varchar, varchar, varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.scrub_row(varchar, varchar, varchar);

--changeset ctxasm:pg-internal-derived-rows dbms:postgresql runOnChange:true splitStatements:false logicalFilePath:db/packages/postgresql/0035_ctx_memory_erase.sql
--comment: what the stored provenance says was made from one memory ([type, id]) or from a window in
--comment: in_manifests (windows that showed it): every row of any memory table whose source_refs cite either
--comment: (a user's own turn excepted where it cites a window: it is the window's question, not made from it),
--comment: every row a context_source_ref names as derived from the memory when that reference's own user and agent
--comment: could have written the derived row, its compressions, the chunks of a kb_document, and every event
--comment: recorded for such a window (requests, responses, tool results). Rows already erased are left out.
--comment: Nothing here lists today's writers: a new kind of derived row is followed as soon as it records its
--comment: sources in source_refs or in context_source_ref.
CREATE OR REPLACE FUNCTION ctxasm.derived_rows(in_tenant_id varchar, in_memory_type varchar, in_id varchar,
                                               in_manifests varchar[])
RETURNS TABLE (memory_type varchar, id varchar)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_cites   jsonb := jsonb_build_array(jsonb_build_object('type', in_memory_type, 'id', in_id));
    -- One containment test per window: each can use the partial GIN index (the planner ORs their bitmaps).
    l_windows text := coalesce((SELECT string_agg(format('t.source_refs @> %L::jsonb', jsonb_build_array(
                                           jsonb_build_object('type', 'manifest', 'id', w.id))), ' OR ')
                                  FROM unnest(in_manifests) AS w (id)), 'FALSE');
    l_branches text;
BEGIN
    -- One branch per memory table, each by the table's partial GIN index over non-empty source_refs.
    SELECT string_agg(format(
               'SELECT %L::varchar, t.id FROM ctxasm.%I AS t WHERE t.tenant_id = $1 AND t.status <> ''erased'' '
               'AND t.source_refs <> ''[]''::jsonb AND (t.source_refs @> $2 OR (%s AND (%s)))',
               m.memory_type, m.table_name,
               CASE WHEN m.table_name = 'conversation_memory' THEN 't.role <> ''user''' ELSE 'TRUE' END,
               l_windows),
               ' UNION ' ORDER BY m.ordinal)
      INTO l_branches
      FROM ctxasm.memory_type AS m;
    -- A context_source_ref row is a row of its own, which a claim of its scope may write naming any row it can
    -- see: it is followed only to a derived row its own scope could have written too (every version of it of
    -- that user, when the reference names one, and of that agent, when it names one), so a claim for one user
    -- cannot make the erasure of its own row reach a row of the whole tenant or of another user. A row's own
    -- source_refs, a compression's source and a chunk's document_id were written by whoever could write that
    -- row: they are followed whatever its scope (a tenant summary of Jane's turn goes with her turn).
    SELECT l_branches || string_agg(format(
               ' UNION SELECT r.derived_type, r.derived_id FROM ctxasm.context_source_ref AS r'
               ' WHERE r.tenant_id = $1 AND r.source_type = $4 AND r.source_id = $5 AND r.derived_type = %L'
               ' AND r.status <> ''erased'''
               ' AND EXISTS (SELECT 1 FROM ctxasm.%I AS d WHERE d.tenant_id = $1 AND d.id = r.derived_id'
               ' AND d.status <> ''erased'')'
               ' AND NOT EXISTS (SELECT 1 FROM ctxasm.%I AS d WHERE d.tenant_id = $1 AND d.id = r.derived_id'
               ' AND ((r.user_id IS NOT NULL AND d.user_id IS DISTINCT FROM r.user_id)'
               ' OR (r.agent_id IS NOT NULL AND d.agent_id IS DISTINCT FROM r.agent_id)))',
               m.memory_type, m.table_name, m.table_name), '' ORDER BY m.ordinal)
      INTO l_branches
      FROM ctxasm.memory_type AS m;
    -- A chunk names its document by document_id, not by source_refs: it goes with the document.
    RETURN QUERY EXECUTE l_branches
        || ' UNION SELECT ''compression'', c.id FROM ctxasm.context_compression AS c'
           ' WHERE c.tenant_id = $1 AND c.source_type = $4 AND c.source_id = $5 AND c.status <> ''erased'''
           ' UNION SELECT ''kb_chunk'', k.id FROM ctxasm.knowledge_base_chunk AS k'
           ' WHERE k.tenant_id = $1 AND $4 = ''kb_document'' AND k.document_id = $5 AND k.status <> ''erased'''
           ' UNION SELECT ''conversation'', e.id FROM ctxasm.conversation_memory AS e'
           ' WHERE e.tenant_id = $1 AND e.role = ''event'' AND e.event_type <> ''context_manifest'''
           '   AND e.status <> ''erased'' AND e.content_json ->> ''manifest_id'' = ANY ($3)'
        USING in_tenant_id, l_cites, in_manifests, in_memory_type, in_id;
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.derived_rows(varchar, varchar, varchar, varchar[]) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.derived_rows(varchar, varchar, varchar, varchar[]);

--changeset ctxasm:pg-ctx-memory-erase-report dbms:postgresql runOnChange:true splitStatements:false logicalFilePath:db/packages/postgresql/0035_ctx_memory_erase.sql
--comment: CTX_MEMORY.erase_report: erase one memory and everything made from it, and say what went. Erasure
--comment: follows derivation, by the stored provenance (ctxasm.derived_rows), until nothing new turns up: rows
--comment: whose source_refs cite an erased row, or that a context_source_ref whose own scope could have written
--comment: them names as made from one, its compressions, a document's chunks, and the windows
--comment: (manifests) that showed an erased row's text (rendered it, or its compression) with everything made from
--comment: them: the model's answers recorded as turns, each round's provider request, the model's responses, the
--comment: tool results. A summary or an answer made from an erased row is erased whole (the database cannot write
--comment: it again without that row; the one who made it may). Manifests keep their references (no text), get
--comment: erased_dependencies, lose the question when it held the erased text, and lose their history copies.
--comment: The result: {"erased": [[type, id], ...], "tables": {table: {"rows", "history_rows"}},
--comment: "manifests_marked": n, "total": row versions erased, "erased_xid": the erasing transaction}; "erased" and
--comment: "tables" name only rows it erased, not those the session's row level security hides.
CREATE OR REPLACE FUNCTION ctx_memory.erase_report(in_memory_type varchar, in_id varchar) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant    varchar := ctxasm.require_tenant();
    l_table     varchar := ctxasm.memory_table(in_memory_type);
    l_row       jsonb;
    l_queue     jsonb := jsonb_build_array(jsonb_build_array(in_memory_type, in_id));
    l_done      jsonb := '[]'::jsonb;
    l_done_keys text[] := '{}';
    l_item      jsonb;
    l_manifests varchar[] := '{}';
    l_new       varchar[];
    l_contents  text[] := '{}';
    l_tables    jsonb := '{}'::jsonb;
    l_counts    record;
    l_total     integer := 0;
    l_marked    integer;
BEGIN
    -- Every version must be the session's to write: a claim for one user cannot erase a row of another or of
    -- the whole tenant.
    FOR l_row IN EXECUTE format('SELECT to_jsonb(t) FROM ctxasm.%I AS t WHERE t.tenant_id = $1 AND t.id = $2',
                                l_table) USING l_tenant, in_id LOOP
        PERFORM ctxasm.require_row_scope(in_memory_type, l_row);
    END LOOP;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('memory_not_found'), MESSAGE = format(
            'memory_not_found: no %s %s to erase', in_memory_type, ctxasm.quoted(in_id));
    END IF;
    WHILE jsonb_array_length(l_queue) > 0 LOOP
        l_item := l_queue -> 0;
        l_queue := l_queue - 0;
        CONTINUE WHEN l_item::text = ANY (l_done_keys);
        l_done_keys := l_done_keys || l_item::text;
        l_table := ctxasm.memory_table(l_item ->> 0);
        -- References and texts first: after the scrub there is nothing left to follow.
        EXECUTE format('SELECT array_agg(content) FROM (SELECT content FROM ctxasm.%I WHERE tenant_id = $1 AND id = $2 '
                       'UNION SELECT content FROM ctxasm.%I WHERE tenant_id = $1 AND id = $2) AS v',
                       l_table, l_table || '_history')
            INTO l_new USING l_tenant, l_item ->> 1;
        l_contents := l_contents || coalesce(l_new, '{}');
        -- The windows that showed its text: rendered it, or its compression. (A window that only excluded it, or
        -- cited it for an annotation, showed the model none of its text.) As in derived_rows, a reference is
        -- followed only to a manifest its own user and agent could have recorded: one of theirs, which the
        -- session sees, when it names a user or an agent; any, when it names neither (a tenant-wide writer's).
        SELECT coalesce(array_agg(DISTINCT r.derived_id), '{}') INTO l_new
          FROM ctxasm.context_source_ref AS r
         WHERE r.tenant_id = l_tenant AND r.derived_type = 'manifest' AND r.relation IN ('rendered', 'compression')
           AND r.source_type = l_item ->> 0 AND r.source_id = l_item ->> 1
           AND r.derived_id <> ALL (l_manifests)
           AND ((r.user_id IS NULL AND r.agent_id IS NULL)
                OR EXISTS (SELECT 1 FROM ctxasm.conversation_memory AS m
                            WHERE m.tenant_id = l_tenant AND m.id = r.derived_id
                              AND m.event_type = 'context_manifest'))
           AND NOT EXISTS (SELECT 1 FROM ctxasm.conversation_memory AS m
                            WHERE m.tenant_id = l_tenant AND m.id = r.derived_id
                              AND ((r.user_id IS NOT NULL AND m.user_id IS DISTINCT FROM r.user_id)
                                   OR (r.agent_id IS NOT NULL AND m.agent_id IS DISTINCT FROM r.agent_id)));
        l_manifests := l_manifests || l_new;
        SELECT l_queue || coalesce(jsonb_agg(DISTINCT jsonb_build_array(d.memory_type, d.id)), '[]'::jsonb)
          INTO l_queue
          FROM ctxasm.derived_rows(l_tenant, l_item ->> 0, l_item ->> 1, l_manifests) AS d;
        l_counts := ctxasm.scrub_row(l_table, l_tenant, l_item ->> 1);
        -- The report lists what went: a row the session cannot see (row level security) was not touched.
        IF l_counts.out_rows > 0 THEN
            l_done := l_done || jsonb_build_array(l_item);
            l_total := l_total + l_counts.out_rows;
            l_tables := jsonb_set(l_tables, ARRAY[l_table], jsonb_build_object(
                'rows', coalesce((l_tables -> l_table ->> 'rows')::integer, 0) + l_counts.out_rows,
                'history_rows', coalesce((l_tables -> l_table ->> 'history_rows')::integer, 0)
                                + l_counts.out_history_rows));
        END IF;
    END LOOP;
    -- Manifests hold references, not text, except the question: mark them, and drop the question when it
    -- holds an erased text. Their history copies go too.
    UPDATE ctxasm.conversation_memory AS m
       SET content_json = jsonb_set(
               CASE WHEN EXISTS (SELECT 1 FROM unnest(l_contents) AS c (text)
                                  WHERE position(c.text IN m.content_json ->> 'question') > 0)
                    THEN jsonb_set(m.content_json, '{question}', '"[erased]"') ELSE m.content_json END,
               '{erased_dependencies}',
               coalesce(m.content_json -> 'erased_dependencies', '[]'::jsonb)
               || jsonb_build_array(jsonb_build_array(in_memory_type, in_id)))
     WHERE m.tenant_id = l_tenant AND m.event_type = 'context_manifest' AND m.id = ANY (l_manifests);
    GET DIAGNOSTICS l_marked = ROW_COUNT;
    DELETE FROM ctxasm.conversation_memory_history AS h
     WHERE h.tenant_id = l_tenant AND h.event_type = 'context_manifest' AND h.id = ANY (l_manifests);
    RETURN jsonb_build_object('erased', l_done, 'tables', l_tables, 'manifests_marked', l_marked,
                              'total', l_total, 'erased_xid', pg_current_xact_id()::text);
END;
$$;
--rollback DROP FUNCTION ctx_memory.erase_report(varchar, varchar);

--changeset ctxasm:pg-ctx-memory-erase dbms:postgresql runOnChange:true splitStatements:false logicalFilePath:db/packages/postgresql/0035_ctx_memory_erase.sql
--comment: CTX_MEMORY.erase: erase_report, returning only the number of row versions erased
CREATE OR REPLACE FUNCTION ctx_memory.erase(in_memory_type varchar, in_id varchar) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT (ctx_memory.erase_report(in_memory_type, in_id) ->> 'total')::integer
$$;
--rollback DROP FUNCTION ctx_memory.erase(varchar, varchar);
