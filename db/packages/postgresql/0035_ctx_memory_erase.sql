--liquibase formatted sql

--changeset ctxasm:pg-internal-scrub-row dbms:postgresql runOnChange:true splitStatements:false
--comment: remove the content of every version of one row, in the table and in its history
CREATE OR REPLACE FUNCTION ctxasm.scrub_row(in_table varchar, in_tenant_id varchar, in_id varchar)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    l_sets text;
    l_rows integer;
BEGIN
    -- Every free-text and payload column: '[erased]' where the column must hold a value, NULL otherwise.
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
                             'document_id', 'source_hash')
       AND (t.typname IN ('text', 'varchar', 'bpchar', 'jsonb', 'vector') OR a.attname = 'confidence');
    EXECUTE format('UPDATE ctxasm.%I SET %s, status = ''erased'', deleted_at = coalesce(deleted_at, now()) '
                   'WHERE tenant_id = $1 AND id = $2', in_table, l_sets)
        USING in_tenant_id, in_id;
    GET DIAGNOSTICS l_rows = ROW_COUNT;
    -- The history holds the earlier versions, and the copies the UPDATE above just made: all of it goes.
    EXECUTE format('DELETE FROM ctxasm.%I WHERE tenant_id = $1 AND id = $2', in_table || '_history')
        USING in_tenant_id, in_id;
    RETURN l_rows;
END;
$$;
--rollback DROP FUNCTION ctxasm.scrub_row(varchar, varchar, varchar);

--changeset ctxasm:pg-ctx-memory-erase dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.erase: erase one memory everywhere it went, following the references captured before
--comment: erasure: compressions of it, provider requests of windows that rendered it; manifests keep their
--comment: references (no text) and are marked. Returns the number of row versions erased.
CREATE OR REPLACE FUNCTION ctx_memory.erase(in_memory_type varchar, in_id varchar) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant    varchar := ctxasm.require_tenant();
    l_table     varchar := ctxasm.memory_table(in_memory_type);
    l_manifests varchar[];
    l_contents  text[];
    l_derived   record;
    l_total     integer;
BEGIN
    -- References first: after the scrub there is nothing left to follow.
    SELECT array_agg(DISTINCT r.derived_id) INTO l_manifests
      FROM ctxasm.context_source_ref r
     WHERE r.source_type = in_memory_type AND r.source_id = in_id AND r.derived_type = 'manifest';
    EXECUTE format('SELECT array_agg(content) FROM (SELECT content FROM ctxasm.%I WHERE tenant_id = $1 AND id = $2 '
                   'UNION SELECT content FROM ctxasm.%I WHERE tenant_id = $1 AND id = $2) AS v',
                   l_table, l_table || '_history')
        INTO l_contents USING l_tenant, in_id;
    l_total := ctxasm.scrub_row(l_table, l_tenant, in_id);
    IF l_total = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'CX106', MESSAGE = format(
            'memory_not_found: no %s %s to erase', in_memory_type, coalesce(quote_literal(in_id), 'NULL'));
    END IF;
    -- Derived text: compressions of this memory, and recorded provider requests of the affected windows.
    FOR l_derived IN
        SELECT 'context_compression' AS tab, c.id FROM ctxasm.context_compression c
         WHERE c.source_type = in_memory_type AND c.source_id = in_id
        UNION
        SELECT 'conversation_memory', m.id FROM ctxasm.conversation_memory m
         WHERE m.event_type = 'provider_request' AND m.content_json ->> 'manifest_id' = ANY(l_manifests)
    LOOP
        l_total := l_total + ctxasm.scrub_row(l_derived.tab, l_tenant, l_derived.id);
    END LOOP;
    -- Manifests hold references, not text, except the question: mark them, and drop the question when it
    -- is the erased text. Their history copies go too.
    UPDATE ctxasm.conversation_memory m
       SET content_json = jsonb_set(
               CASE WHEN EXISTS (SELECT 1 FROM unnest(l_contents) AS c(text)
                                  WHERE position(c.text IN m.content_json ->> 'question') > 0)
                    THEN jsonb_set(m.content_json, '{question}', '"[erased]"') ELSE m.content_json END,
               '{erased_dependencies}',
               coalesce(m.content_json -> 'erased_dependencies', '[]'::jsonb)
               || jsonb_build_array(jsonb_build_array(in_memory_type, in_id)))
     WHERE m.event_type = 'context_manifest' AND m.id = ANY(l_manifests);
    DELETE FROM ctxasm.conversation_memory_history h
     WHERE h.event_type = 'context_manifest' AND h.id = ANY(l_manifests);
    RETURN l_total;
END;
$$;
--rollback DROP FUNCTION ctx_memory.erase(varchar, varchar);
