--liquibase formatted sql logicalFilePath:db/packages/postgresql/0060_ctx_tools.sql

--changeset ctxasm:pg-ctx-tools-schema dbms:postgresql
CREATE SCHEMA ctx_tools;
--rollback DROP SCHEMA ctx_tools CASCADE;

--changeset ctxasm:pg-ctx-tools-active-tools dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_TOOLS.active_tools: the toolbox rows in effect for a user and agent at one time, by the rules
--comment: select_window applies to the tools slice (lifecycle at the evaluation time, narrowest scope per tool)
CREATE OR REPLACE FUNCTION ctx_tools.active_tools(
    in_user_id         varchar,
    in_agent_id        varchar,
    in_evaluation_time timestamptz
)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := ctxasm.require_scope(in_user_id, in_agent_id);
    l_result jsonb;
BEGIN
    PERFORM ctxasm.require_evaluation_time(in_evaluation_time);
    -- No thread is given: thread-scoped tool rows are out of scope here.
    WITH in_effect AS (
        SELECT DISTINCT ON (t.tool_name) t.id, t.version, t.tool_name, t.tool_handler, t.tool_schema,
                                         t.usage_notes, t.access_policy
          FROM ctxasm.toolbox_memory AS t
         WHERE t.tenant_id = l_tenant
           AND (t.user_id IS NULL OR t.user_id = in_user_id)
           AND (t.agent_id IS NULL OR t.agent_id = in_agent_id)
           AND t.thread_id IS NULL
           AND t.status <> 'erased' AND t.deleted_at IS NULL
           AND t.valid_from <= in_evaluation_time
           AND (t.valid_until IS NULL OR t.valid_until > in_evaluation_time)
         ORDER BY t.tool_name, (t.user_id IS NOT NULL)::int + (t.agent_id IS NOT NULL)::int DESC,
                  t.valid_from DESC, t.id
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'ref', jsonb_build_array('toolbox', e.id, e.version),
               'tool_name', e.tool_name,
               'tool_handler', e.tool_handler,
               'tool_schema', e.tool_schema,
               'usage_notes', e.usage_notes,
               'access_policy', e.access_policy)
               ORDER BY e.tool_name), '[]'::jsonb)
      INTO l_result
      FROM in_effect AS e;
    RETURN l_result;
END;
$$;
--rollback DROP FUNCTION ctx_tools.active_tools(varchar, varchar, timestamptz);

--changeset ctxasm:pg-ctx-tools-search-memory dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_TOOLS.search_memory: bounded hybrid retrieval (ctxasm.retrieve, the retrieval step of
--comment: select_window) for the search_memory tool, with the text and provenance of every item
CREATE OR REPLACE FUNCTION ctx_tools.search_memory(
    in_user_id         varchar,
    in_agent_id        varchar,
    in_thread_id       varchar,
    in_evaluation_time timestamptz,
    in_query           text,
    in_query_embedding varchar,
    in_limit           integer
)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_retrieval_depth constant integer := 50;
    co_max_limit       constant integer := 20;
    co_max_query       constant integer := 500;
    co_dimensions      constant integer := 384;
    -- pgvector's text form: '[x,y,...]', each number plain or with an exponent.
    co_vector_pattern  constant text :=
        '^\[[[:space:]]*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?'
        '([[:space:]]*,[[:space:]]*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?)*[[:space:]]*\]$';
    l_tenant varchar := ctxasm.require_scope(in_user_id, in_agent_id);
    l_result jsonb;
BEGIN
    PERFORM ctxasm.require_evaluation_time(in_evaluation_time);
    IF in_query IS NULL OR btrim(in_query) = '' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'),
            MESSAGE = 'invalid_argument: in_query must not be empty';
    END IF;
    IF length(in_query) > co_max_query THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'), MESSAGE = format(
            'invalid_argument: in_query is %s characters long, at most %s are allowed', length(in_query),
            co_max_query);
    END IF;
    -- Out of range is refused, not clamped: a caller asking for 100 should learn that it gets at most 20.
    IF in_limit IS NULL OR in_limit < 1 OR in_limit > co_max_limit THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'), MESSAGE = format(
            'invalid_argument: in_limit must be between 1 and %s, not %s', co_max_limit,
            coalesce(in_limit::text, 'NULL'));
    END IF;
    IF in_query_embedding IS NOT NULL
       AND (in_query_embedding !~ co_vector_pattern
            OR length(in_query_embedding) - length(replace(in_query_embedding, ',', '')) <> co_dimensions - 1) THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'), MESSAGE = format(
            'invalid_argument: in_query_embedding must be vector text [x, y, ...] of %s numbers', co_dimensions);
    END IF;

    WITH hits AS (
        SELECT e.memory_type, e.id, e.version, e.lexical_rank, e.vector_rank, e.fused
          FROM ctxasm.retrieve_for_question(l_tenant, 'evidence', in_user_id, in_agent_id, in_thread_id,
                                            in_evaluation_time, in_query, in_query_embedding::public.vector,
                                            co_retrieval_depth, in_limit) AS e
    ),
    -- The text and provenance of each hit; a chunk's collection and source are its document's.
    items AS (
        SELECT h.*, coalesce(c.title, d.title) AS title, c.content, d.collection, d.source_uri
          FROM hits AS h
          JOIN ctxasm.knowledge_base_chunk AS c
            ON h.memory_type = 'kb_chunk' AND c.tenant_id = l_tenant AND c.id = h.id AND c.version = h.version
          LEFT JOIN ctxasm.knowledge_base_document AS d
            ON d.tenant_id = c.tenant_id AND d.id = c.document_id AND d.version = c.document_version
        UNION ALL
        SELECT h.*, d.title, d.content, d.collection, d.source_uri
          FROM hits AS h
          JOIN ctxasm.knowledge_base_document AS d
            ON h.memory_type = 'kb_document' AND d.tenant_id = l_tenant AND d.id = h.id AND d.version = h.version
    )
    SELECT jsonb_build_object(
               'retrieval', CASE WHEN in_query_embedding IS NULL THEN 'lexical-bm25' ELSE 'hybrid-bm25-hnsw-rrf-60' END,
               'items', coalesce(jsonb_agg(jsonb_build_object(
                            'ref', jsonb_build_array(i.memory_type, i.id, i.version),
                            'title', i.title,
                            'content', i.content,
                            'collection', i.collection,
                            'source', i.source_uri,
                            'scores', jsonb_build_object('lexical_rank', i.lexical_rank,
                                                         'vector_rank', i.vector_rank, 'fused', i.fused))
                            ORDER BY i.fused DESC, i.memory_type, i.id, i.version), '[]'::jsonb))
      INTO l_result
      FROM items AS i;
    RETURN l_result;
END;
$$;
--rollback DROP FUNCTION ctx_tools.search_memory(varchar, varchar, varchar, timestamptz, text, varchar, integer);

--changeset ctxasm:pg-ctx-tools-lookup-entity dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_TOOLS.lookup_entity: the version of a claim (subject, predicate) in effect at one time, and
--comment: its earlier versions, newest first
CREATE OR REPLACE FUNCTION ctx_tools.lookup_entity(
    in_user_id         varchar,
    in_agent_id        varchar,
    in_evaluation_time timestamptz,
    in_subject         varchar,
    in_predicate       varchar
)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_max_length constant integer := 256;  -- entity_memory.subject and .predicate are varchar(256)
    l_tenant varchar := ctxasm.require_scope(in_user_id, in_agent_id);
    l_result jsonb;
BEGIN
    PERFORM ctxasm.require_evaluation_time(in_evaluation_time);
    IF in_subject IS NULL OR btrim(in_subject) = '' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'),
            MESSAGE = 'invalid_argument: in_subject must not be empty';
    END IF;
    IF in_predicate IS NULL OR btrim(in_predicate) = '' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'),
            MESSAGE = 'invalid_argument: in_predicate must not be empty';
    END IF;
    IF length(in_subject) > co_max_length OR length(in_predicate) > co_max_length THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'), MESSAGE = format(
            'invalid_argument: %s is %s characters long, at most %s are allowed',
            CASE WHEN length(in_subject) > co_max_length THEN 'in_subject' ELSE 'in_predicate' END,
            CASE WHEN length(in_subject) > co_max_length THEN length(in_subject) ELSE length(in_predicate) END,
            co_max_length);
    END IF;
    -- supersede and delete_memory keep the retired version in the table with its status, so the table
    -- holds every version; <table>_history only keeps earlier images of the same versions. Erased rows have
    -- no content left and are not shown; rows not yet in effect at the evaluation time do not exist yet.
    WITH claim AS (
        SELECT e.id, e.version, e.content, e.content_json, e.confidence, e.valid_from,
               (e.user_id IS NOT NULL)::int + (e.agent_id IS NOT NULL)::int AS scope_depth,
               CASE WHEN e.deleted_at IS NOT NULL THEN 'deleted'
                    WHEN e.valid_until IS NOT NULL AND e.valid_until <= in_evaluation_time THEN
                        CASE WHEN e.status = 'superseded' THEN 'superseded' ELSE 'expired' END
               END AS retired,
               CASE WHEN e.deleted_at IS NOT NULL AND (e.valid_until IS NULL OR e.deleted_at < e.valid_until)
                    THEN e.deleted_at ELSE e.valid_until END AS valid_to
          FROM ctxasm.entity_memory AS e
         WHERE e.tenant_id = l_tenant AND e.subject = in_subject AND e.predicate = in_predicate
           AND (e.user_id IS NULL OR e.user_id = in_user_id)
           AND (e.agent_id IS NULL OR e.agent_id = in_agent_id)
           AND e.thread_id IS NULL
           AND e.status <> 'erased'
           AND e.valid_from <= in_evaluation_time
    ),
    -- As the conflict step: within a claim the narrowest scope wins, then the latest, then the row id.
    current_version AS (
        SELECT c.* FROM claim AS c
         WHERE c.retired IS NULL
         ORDER BY c.scope_depth DESC, c.valid_from DESC, c.id
         LIMIT 1
    )
    SELECT jsonb_build_object(
               'current', (SELECT jsonb_build_object(
                                      'ref', jsonb_build_array('entity', v.id, v.version),
                                      'content', v.content,
                                      'content_json', v.content_json,
                                      'confidence', v.confidence,
                                      'valid_from', v.valid_from)
                             FROM current_version AS v),
               'history', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                              'ref', jsonb_build_array('entity', h.id, h.version),
                                              'content', h.content,
                                              'content_json', h.content_json,
                                              'status', h.retired,
                                              'valid_from', h.valid_from,
                                              'valid_to', h.valid_to)
                                              ORDER BY h.valid_from DESC, h.version DESC, h.id)
                                      FROM claim AS h
                                     WHERE h.retired IS NOT NULL), '[]'::jsonb))
      INTO l_result;
    RETURN l_result;
END;
$$;
--rollback DROP FUNCTION ctx_tools.lookup_entity(varchar, varchar, timestamptz, varchar, varchar);

--changeset ctxasm:pg-ctx-tools-expand dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_TOOLS.expand: the full text of a memory a recorded window issued, while its source row version
--comment: is still the current one and in effect
CREATE OR REPLACE FUNCTION ctx_tools.expand(
    in_manifest_id     varchar,
    in_memory_id       varchar,
    in_evaluation_time timestamptz
)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant   varchar := ctxasm.require_tenant();
    l_manifest jsonb;
    l_entry    jsonb;
    l_row      record;
    l_reason   text;
BEGIN
    PERFORM ctxasm.require_evaluation_time(in_evaluation_time);
    IF in_manifest_id IS NULL OR in_manifest_id = '' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'),
            MESSAGE = 'invalid_argument: in_manifest_id must not be empty';
    END IF;
    IF in_memory_id IS NULL OR in_memory_id = '' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'),
            MESSAGE = 'invalid_argument: in_memory_id must not be empty';
    END IF;
    -- Another tenant's manifest is invisible (RLS): it is as unknown as one that never existed.
    SELECT m.content_json INTO l_manifest
      FROM ctxasm.conversation_memory AS m
     WHERE m.tenant_id = l_tenant AND m.id = in_manifest_id AND m.event_type = 'context_manifest'
       AND m.status = 'active' AND m.deleted_at IS NULL;
    IF l_manifest IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('not_in_window'), MESSAGE = format(
            'not_in_window: memory %s: no manifest %s for this tenant', left(in_memory_id, 200), ctxasm.quoted(in_manifest_id));
    END IF;
    SELECT e.entry INTO l_entry
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(l_manifest -> 'memories') = 'array'
                                     THEN l_manifest -> 'memories' ELSE '[]'::jsonb END) AS e(entry)
     WHERE e.entry ->> 'id' = in_memory_id
     LIMIT 1;
    IF l_entry IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('not_in_window'), MESSAGE = format(
            'not_in_window: memory %s was not issued in manifest %s', left(in_memory_id, 200), left(in_manifest_id, 200));
    END IF;

    SELECT r.memory_type, r.id, r.version, r.status, r.deleted_at, r.valid_from, r.valid_until, r.content,
           coalesce(r.title, r.subject, r.key_name) AS title
      INTO l_row
      FROM ctxasm.memory_row AS r
     WHERE r.tenant_id = l_tenant AND r.memory_type = l_entry -> 'ref' ->> 0 AND r.id = l_entry -> 'ref' ->> 1
       AND r.version = (l_entry -> 'ref' ->> 2)::integer;
    l_reason := CASE WHEN NOT FOUND THEN 'is gone'
                     WHEN l_row.status = 'erased' THEN 'was erased'
                     WHEN l_row.deleted_at IS NOT NULL OR l_row.status = 'deleted' THEN 'was deleted'
                     WHEN l_row.status = 'superseded' THEN 'was superseded'
                     WHEN l_row.valid_from > in_evaluation_time THEN 'is not yet in effect'
                     WHEN l_row.valid_until IS NOT NULL AND l_row.valid_until <= in_evaluation_time THEN 'has expired'
                END;
    IF l_reason IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('source_unavailable'), MESSAGE = format(
            'source_unavailable: memory %s: its source %s %s version %s %s', left(in_memory_id, 200),
            l_entry -> 'ref' ->> 0, l_entry -> 'ref' ->> 1, l_entry -> 'ref' ->> 2, l_reason);
    END IF;
    RETURN jsonb_build_object(
        'memory_id', in_memory_id,
        'ref', jsonb_build_array(l_row.memory_type, l_row.id, l_row.version),
        'type', l_row.memory_type,
        'title', l_row.title,
        'content', l_row.content,
        'tier_in_window', l_entry ->> 'tier');
END;
$$;
--rollback DROP FUNCTION ctx_tools.expand(varchar, varchar, timestamptz);
