--liquibase formatted sql logicalFilePath:db/packages/postgresql/0035_ctx_memory_erase.sql

--changeset ctxasm:pg-internal-scrub-row dbms:postgresql runOnChange:true splitStatements:false
--comment: remove the content of every version of one row, in the table and in its history; returns the row
--comment: versions scrubbed and the history copies removed
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
    EXECUTE format('UPDATE ctxasm.%I SET %s, status = ''erased'', deleted_at = coalesce(deleted_at, now()) '
                   'WHERE tenant_id = $1 AND id = $2', in_table, l_sets)
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

--changeset ctxasm:pg-ctx-memory-erase-report dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.erase_report: erase one memory and every copy of its text the database keeps, and say
--comment: what went. Followed, until nothing new turns up: compressions of an erased row; conversation events
--comment: (tool results, model responses, recorded requests, ...) whose source_refs name an erased row; the
--comment: windows (manifests) that rendered an erased row, and every event recorded for such a window (each
--comment: round's provider request, the model's responses, its tool results). Manifests keep their references
--comment: (no text), get erased_dependencies, lose the question when it held the erased text, and lose their
--comment: history copies. The result: {"erased": [[type, id], ...], "tables": {table: {"rows", "history_rows"}},
--comment: "manifests_marked": n, "total": row versions erased}.
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
        l_done := l_done || jsonb_build_array(l_item);
        l_table := ctxasm.memory_table(l_item ->> 0);
        -- References and texts first: after the scrub there is nothing left to follow.
        EXECUTE format('SELECT array_agg(content) FROM (SELECT content FROM ctxasm.%I WHERE tenant_id = $1 AND id = $2 '
                       'UNION SELECT content FROM ctxasm.%I WHERE tenant_id = $1 AND id = $2) AS v',
                       l_table, l_table || '_history')
            INTO l_new USING l_tenant, l_item ->> 1;
        l_contents := l_contents || coalesce(l_new, '{}');
        SELECT coalesce(array_agg(DISTINCT r.derived_id), '{}') INTO l_new
          FROM ctxasm.context_source_ref AS r
         WHERE r.tenant_id = l_tenant AND r.derived_type = 'manifest'
           AND r.source_type = l_item ->> 0 AND r.source_id = l_item ->> 1
           AND r.derived_id <> ALL (l_manifests);
        l_manifests := l_manifests || l_new;
        -- What was made from this row: its compressions; events that cite it; every event of a window that
        -- rendered it (the window's text reached the model in those requests, responses and tool results).
        SELECT l_queue || coalesce(jsonb_agg(DISTINCT d.item), '[]'::jsonb) INTO l_queue
          FROM (
              SELECT jsonb_build_array('compression', c.id) AS item
                FROM ctxasm.context_compression AS c
               WHERE c.tenant_id = l_tenant AND c.source_type = l_item ->> 0 AND c.source_id = l_item ->> 1
                 AND c.status <> 'erased'
              UNION ALL
              SELECT jsonb_build_array('conversation', m.id)
                FROM ctxasm.conversation_memory AS m
               WHERE m.tenant_id = l_tenant AND m.role = 'event' AND m.event_type <> 'context_manifest'
                 AND m.status <> 'erased'
                 AND (m.source_refs @> jsonb_build_array(jsonb_build_object('type', l_item ->> 0, 'id', l_item ->> 1))
                      OR m.content_json ->> 'manifest_id' = ANY (l_manifests)
                      OR EXISTS (SELECT 1 FROM unnest(l_manifests) AS w (id)
                                  WHERE m.source_refs @> jsonb_build_array(
                                            jsonb_build_object('type', 'manifest', 'id', w.id))))
          ) AS d;
        l_counts := ctxasm.scrub_row(l_table, l_tenant, l_item ->> 1);
        l_total := l_total + l_counts.out_rows;
        l_tables := jsonb_set(l_tables, ARRAY[l_table], jsonb_build_object(
            'rows', coalesce((l_tables -> l_table ->> 'rows')::integer, 0) + l_counts.out_rows,
            'history_rows', coalesce((l_tables -> l_table ->> 'history_rows')::integer, 0) + l_counts.out_history_rows));
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
                              'total', l_total);
END;
$$;
--rollback DROP FUNCTION ctx_memory.erase_report(varchar, varchar);

--changeset ctxasm:pg-ctx-memory-erase dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.erase: erase_report, returning only the number of row versions erased
CREATE OR REPLACE FUNCTION ctx_memory.erase(in_memory_type varchar, in_id varchar) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT (ctx_memory.erase_report(in_memory_type, in_id) ->> 'total')::integer
$$;
--rollback DROP FUNCTION ctx_memory.erase(varchar, varchar);
