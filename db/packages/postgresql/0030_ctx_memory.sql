--liquibase formatted sql

--changeset ctxasm:pg-ctx-memory-put-memory dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_MEMORY.put_memory: version 1 of a new memory, in the session tenant
CREATE OR REPLACE FUNCTION ctx_memory.put_memory(in_memory_type varchar, in_record jsonb) RETURNS varchar
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := ctxasm.require_tenant();
    l_table  varchar := ctxasm.memory_table(in_memory_type);
BEGIN
    PERFORM ctxasm.check_record(in_memory_type, l_table, in_record, l_tenant);
    IF coalesce(in_record ->> 'id', '') = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'CX104',
            MESSAGE = format('invalid_field: %s.id: required', in_memory_type);
    END IF;
    PERFORM ctxasm.insert_row_version(in_memory_type, l_table, l_tenant, 1, in_record);
    RETURN in_record ->> 'id';
END;
$$;
--rollback DROP FUNCTION ctx_memory.put_memory(varchar, jsonb);

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
        RAISE EXCEPTION USING ERRCODE = 'CX104', MESSAGE = format(
            'invalid_field: %s.id: a new version keeps the id %s', in_memory_type, quote_literal(in_id));
    END IF;
    EXECUTE format('SELECT to_jsonb(t) FROM ctxasm.%I t WHERE t.tenant_id = $1 AND t.id = $2 '
                   'AND t.status = ''active'' FOR UPDATE', l_table)
        INTO l_current USING l_tenant, in_id;
    IF l_current IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'CX106', MESSAGE = format(
            'memory_not_found: no active %s %s', in_memory_type, coalesce(quote_literal(in_id), 'NULL'));
    END IF;
    l_version := (l_current ->> 'version')::integer;
    BEGIN
        l_from := coalesce((in_record ->> 'valid_from')::timestamptz, now());
    EXCEPTION WHEN data_exception THEN
        RAISE EXCEPTION USING ERRCODE = 'CX104',
            MESSAGE = format('invalid_field: %s.valid_from: %s', in_memory_type, SQLERRM);
    END;
    IF l_from < (l_current ->> 'valid_from')::timestamptz THEN
        RAISE EXCEPTION USING ERRCODE = 'CX104', MESSAGE = format(
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
    l_rows   integer;
BEGIN
    EXECUTE format('UPDATE ctxasm.%I SET status = ''deleted'', deleted_at = $3 '
                   'WHERE tenant_id = $1 AND id = $2 AND status = ''active''', l_table)
        USING l_tenant, in_id, coalesce(in_deleted_at, now());
    GET DIAGNOSTICS l_rows = ROW_COUNT;
    IF l_rows = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'CX106', MESSAGE = format(
            'memory_not_found: no active %s %s', in_memory_type, coalesce(quote_literal(in_id), 'NULL'));
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
    l_snapshot pg_snapshot;
BEGIN
    BEGIN
        l_snapshot := in_snapshot::pg_snapshot;
    EXCEPTION WHEN data_exception THEN
        l_snapshot := NULL;
    END;
    IF l_snapshot IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'CX107', MESSAGE = format(
            'invalid_snapshot: %s is not a snapshot from capture_snapshot', coalesce(quote_literal(in_snapshot), 'NULL'));
    END IF;
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
