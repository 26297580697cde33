--liquibase formatted sql logicalFilePath:db/packages/postgresql/0015_ctxasm_internal.sql

--changeset ctxasm:pg-internal-memory-table dbms:postgresql runOnChange:true splitStatements:false
--comment: memory type -> table name, or invalid_memory_type
CREATE OR REPLACE FUNCTION ctxasm.memory_table(in_memory_type varchar) RETURNS varchar
LANGUAGE plpgsql STABLE AS $$
DECLARE
    l_table varchar;
BEGIN
    SELECT m.table_name INTO l_table FROM ctxasm.memory_type m WHERE m.memory_type = in_memory_type;
    IF l_table IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_memory_type'), MESSAGE = format(
            'invalid_memory_type: %s is not one of %s', ctxasm.quoted(in_memory_type),
            (SELECT string_agg(m.memory_type, ', ' ORDER BY m.ordinal) FROM ctxasm.memory_type m));
    END IF;
    RETURN l_table;
END;
$$;
--rollback DROP FUNCTION ctxasm.memory_table(varchar);

--changeset ctxasm:pg-internal-require-session-limits dbms:postgresql runOnChange:true splitStatements:false
--comment: an application session may SET its own statement_timeout and idle_in_transaction_session_timeout
--comment: (PostgreSQL cannot forbid it, and a routine's own SET of them would not restart the statement's timer),
--comment: so a contract routine refuses to run for a session that turned one off or above the deployment's
--comment: value: the one stored on the group role ctxasm_app, which no member may alter. Sessions of roles that
--comment: are not its members (the owner, the admin) are the deployment's own and pass.
CREATE OR REPLACE FUNCTION ctxasm.require_session_limits() RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_limit  record;
    l_now_ms bigint;
BEGIN
    -- Every application login is a direct member of the group (a superuser is a member of no role here).
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members AS m
                    WHERE m.roleid = 'ctxasm_app'::regrole AND m.member = session_user::regrole) THEN
        RETURN;
    END IF;
    FOR l_limit IN
        SELECT g.name, g.value,
               CASE WHEN g.value ~ '^[0-9]+$' THEN g.value::bigint
                    ELSE (extract(EPOCH FROM g.value::interval) * 1000)::bigint END AS limit_ms
          FROM pg_catalog.pg_db_role_setting AS d,
               unnest(d.setconfig) AS c (setting),
               LATERAL (SELECT split_part(c.setting, '=', 1) AS name,
                               substr(c.setting, length(split_part(c.setting, '=', 1)) + 2) AS value) AS g
         WHERE d.setrole = 'ctxasm_app'::regrole AND d.setdatabase = 0
           AND g.name IN ('statement_timeout', 'idle_in_transaction_session_timeout')
    LOOP
        -- The session's value as SHOW gives it ('0', '500ms', '30s', '2min', ...), in milliseconds.
        l_now_ms := CASE WHEN current_setting(l_limit.name) ~ '^[0-9]+$' THEN current_setting(l_limit.name)::bigint
                         ELSE (extract(EPOCH FROM current_setting(l_limit.name)::interval) * 1000)::bigint END;
        IF l_now_ms = 0 OR l_now_ms > l_limit.limit_ms THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('session_limits_lifted'), MESSAGE = format(
                'session_limits_lifted: %s is %s in this session; the deployment allows at most %s (RESET it)',
                l_limit.name, CASE WHEN l_now_ms = 0 THEN 'off' ELSE current_setting(l_limit.name) END,
                l_limit.value);
        END IF;
    END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.require_session_limits() FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.require_session_limits();

--changeset ctxasm:pg-internal-require-tenant dbms:postgresql runOnChange:true splitStatements:false
--comment: the session's verified tenant, or tenant_not_set; every contract routine that reads or writes memory
--comment: starts here, so the session's limits are checked here too
CREATE OR REPLACE FUNCTION ctxasm.require_tenant() RETURNS varchar
LANGUAGE plpgsql STABLE AS $$
DECLARE
    l_tenant varchar := ctxasm.session_tenant();
BEGIN
    PERFORM ctxasm.require_session_limits();
    IF l_tenant IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('tenant_not_set'),
            MESSAGE = 'tenant_not_set: call ctx_session.set_tenant in this transaction first';
    END IF;
    RETURN l_tenant;
END;
$$;
--rollback DROP FUNCTION ctxasm.require_tenant();

--changeset ctxasm:pg-internal-quoted dbms:postgresql runOnChange:true splitStatements:false
--comment: a value quoted for an error message (quote_literal), cut to 200 characters: an error never echoes
--comment: a caller's 100,000-character argument back whole
CREATE OR REPLACE FUNCTION ctxasm.quoted(in_text text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN in_text IS NULL THEN 'NULL'
                WHEN length(in_text) <= 200 THEN quote_literal(in_text)
                ELSE quote_literal(left(in_text, 200)) || format('... (%s characters)', length(in_text)) END
$$;
--rollback DROP FUNCTION ctxasm.quoted(text);

--changeset ctxasm:pg-internal-require-scope dbms:postgresql runOnChange:true splitStatements:false
--comment: a routine that takes a scope may only act for the user and agent the session's claim names (when it
--comment: names them): any other value, NULL included, is refused. Returns the session tenant.
CREATE OR REPLACE FUNCTION ctxasm.require_scope(in_user_id varchar, in_agent_id varchar) RETURNS varchar
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := ctxasm.require_tenant();
    l_user   varchar := ctxasm.claim_scope('user');
    l_agent  varchar := ctxasm.claim_scope('agent');
BEGIN
    IF l_user IS NOT NULL AND in_user_id IS DISTINCT FROM l_user THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('scope_not_allowed'), MESSAGE = format(
            'scope_not_allowed: in_user_id %s is not the user the session''s claim names', ctxasm.quoted(in_user_id));
    END IF;
    IF l_agent IS NOT NULL AND in_agent_id IS DISTINCT FROM l_agent THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('scope_not_allowed'), MESSAGE = format(
            'scope_not_allowed: in_agent_id %s is not the agent the session''s claim names', ctxasm.quoted(in_agent_id));
    END IF;
    RETURN l_tenant;
END;
$$;
--rollback DROP FUNCTION ctxasm.require_scope(varchar, varchar);

--changeset ctxasm:pg-internal-require-row-scope dbms:postgresql runOnChange:true splitStatements:false
--comment: a row a session writes (a new record, a new version, or a row it deletes or erases) must carry the
--comment: user and agent the session's claim names, when it names them
CREATE OR REPLACE FUNCTION ctxasm.require_row_scope(in_memory_type varchar, in_row jsonb) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_user  varchar := ctxasm.claim_scope('user');
    l_agent varchar := ctxasm.claim_scope('agent');
BEGIN
    IF l_user IS NOT NULL AND in_row ->> 'user_id' IS DISTINCT FROM l_user THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('scope_not_allowed'), MESSAGE = format(
            'scope_not_allowed: %s.user_id %s is not the user the session''s claim names', in_memory_type,
            ctxasm.quoted(in_row ->> 'user_id'));
    END IF;
    IF l_agent IS NOT NULL AND in_row ->> 'agent_id' IS DISTINCT FROM l_agent THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('scope_not_allowed'), MESSAGE = format(
            'scope_not_allowed: %s.agent_id %s is not the agent the session''s claim names', in_memory_type,
            ctxasm.quoted(in_row ->> 'agent_id'));
    END IF;
END;
$$;
--rollback DROP FUNCTION ctxasm.require_row_scope(varchar, jsonb);

--changeset ctxasm:pg-internal-parse-snapshot dbms:postgresql runOnChange:true splitStatements:false
--comment: a snapshot text from capture_snapshot, or invalid_snapshot naming it
CREATE OR REPLACE FUNCTION ctxasm.parse_snapshot(in_snapshot varchar) RETURNS pg_snapshot
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_snapshot pg_snapshot;
BEGIN
    BEGIN
        l_snapshot := in_snapshot::pg_snapshot;
    EXCEPTION WHEN data_exception THEN
        l_snapshot := NULL;
    END;
    IF l_snapshot IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_snapshot'), MESSAGE = format(
            'invalid_snapshot: %s is not a snapshot from capture_snapshot', ctxasm.quoted(in_snapshot));
    END IF;
    RETURN l_snapshot;
END;
$$;
--rollback DROP FUNCTION ctxasm.parse_snapshot(varchar);

--changeset ctxasm:pg-internal-require-evaluation-time dbms:postgresql runOnChange:true splitStatements:false
--comment: every selection and tool routine reads at one evaluation time, which the caller must give
CREATE OR REPLACE FUNCTION ctxasm.require_evaluation_time(in_evaluation_time timestamptz) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF in_evaluation_time IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'),
            MESSAGE = 'invalid_argument: in_evaluation_time must be given';
    END IF;
END;
$$;
--rollback DROP FUNCTION ctxasm.require_evaluation_time(timestamptz);

--changeset ctxasm:pg-internal-require-limit dbms:postgresql runOnChange:true splitStatements:false
--comment: a routine's in_limit: a whole number 1..in_max, or invalid_argument naming the range
CREATE OR REPLACE FUNCTION ctxasm.require_limit(in_limit integer, in_max integer) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF in_limit IS NULL OR in_limit NOT BETWEEN 1 AND in_max THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'), MESSAGE = format(
            'invalid_argument: in_limit must be 1..%s', in_max);
    END IF;
END;
$$;
--rollback DROP FUNCTION ctxasm.require_limit(integer, integer);

--changeset ctxasm:pg-internal-check-record dbms:postgresql runOnChange:true splitStatements:false
--comment: reject what would otherwise vanish or be coerced silently (non-objects, unknown and system keys, an
--comment: empty user or agent id) and what is too large to store: every free text, JSON value and list of
--comment: source references has a limit (contract/constants.toml), a varchar its declared length, and a
--comment: context budget's token counts too (invalid_budget): a writer that skips the Python checks must not
--comment: store a budget whose arithmetic breaks every window of its scope
CREATE OR REPLACE FUNCTION ctxasm.check_record(in_memory_type varchar, in_table varchar,
                                               in_record jsonb, in_tenant_id varchar)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    co_max_text_chars     constant integer := 100000;
    co_max_document_chars constant integer := 2000000;
    co_max_json_chars     constant integer := 2000000;
    co_max_source_refs    constant integer := 1000;
    co_max_budget_tokens  constant integer := 10000000;
    co_budget_counts      constant text[] := ARRAY['usable_context', 'output_reserve', 'tool_reserve',
                                                   'request_overhead_reserve', 'max_rounds', 'max_tool_result_tokens'];
    l_key       text;
    l_type      text;
    l_generated boolean;
    l_limit     integer;
BEGIN
    IF in_record IS NULL OR jsonb_typeof(in_record) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'),
            MESSAGE = format('invalid_field: %s: in_record must be a JSON object', in_memory_type);
    END IF;
    FOR l_key IN SELECT jsonb_object_keys(in_record) LOOP
        SELECT t.typname, a.attgenerated <> '' INTO l_type, l_generated
          FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
         WHERE a.attrelid = format('ctxasm.%I', in_table)::regclass
           AND a.attname = l_key AND a.attnum > 0 AND NOT a.attisdropped;
        IF l_type IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'),
                MESSAGE = format('invalid_field: %s.%s: unknown field', in_memory_type, left(l_key, 200));
        ELSIF l_key = 'tenant_id' THEN
            IF in_record ->> 'tenant_id' IS DISTINCT FROM in_tenant_id THEN
                RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
                    'invalid_field: %s.tenant_id: %s is not the session tenant', in_memory_type,
                    ctxasm.quoted(in_record ->> 'tenant_id'));
            END IF;
        ELSIF l_key IN ('version', 'status', 'created_at', 'created_xid') OR l_generated THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
                'invalid_field: %s.%s: set by the database, not by the caller', in_memory_type, l_key);
        ELSIF l_type NOT IN ('jsonb', 'vector')
              AND jsonb_typeof(in_record -> l_key) IN ('object', 'array') THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
                'invalid_field: %s.%s: must be a %s, not a JSON %s', in_memory_type, l_key, l_type,
                jsonb_typeof(in_record -> l_key));
        ELSIF l_key IN ('user_id', 'agent_id') AND in_record ->> l_key = '' THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
                'invalid_field: %s.%s: must not be empty (leave it out, or null, for a row of the whole %s)',
                in_memory_type, l_key, CASE l_key WHEN 'user_id' THEN 'tenant' ELSE 'tenant or user' END);
        ELSIF l_type = 'text' THEN
            l_limit := CASE WHEN l_key = 'content' AND in_memory_type = 'kb_document' THEN co_max_document_chars
                            ELSE co_max_text_chars END;
            IF length(in_record ->> l_key) > l_limit THEN
                RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
                    'invalid_field: %s.%s: %s characters, more than the %s a %s may store', in_memory_type, l_key,
                    length(in_record ->> l_key), l_limit, in_memory_type);
            END IF;
        ELSIF l_type = 'jsonb' THEN
            IF octet_length((in_record -> l_key)::text) > co_max_json_chars THEN
                RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
                    'invalid_field: %s.%s: %s characters of JSON, more than the %s a field may store',
                    in_memory_type, l_key, octet_length((in_record -> l_key)::text), co_max_json_chars);
            END IF;
            IF l_key = 'source_refs' AND jsonb_typeof(in_record -> l_key) = 'array'
               AND jsonb_array_length(in_record -> l_key) > co_max_source_refs THEN
                RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
                    'invalid_field: %s.source_refs: %s references, more than the %s a row may cite', in_memory_type,
                    jsonb_array_length(in_record -> l_key), co_max_source_refs);
            END IF;
        END IF;
    END LOOP;
    IF in_record ? 'content'
       AND (jsonb_typeof(in_record -> 'content') <> 'string' OR in_record ->> 'content' = '') THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'),
            MESSAGE = format('invalid_field: %s.content: must be a non-empty string', in_memory_type);
    END IF;
    -- A budget: a guideline naming the key context_budget, or a guideline's new version that names no key (the
    -- key is the stored version's; a budget's new version sends only what changes). The Python layer checks
    -- every field of a budget; the database bounds the counts its own arithmetic reads (candidate_limits).
    IF in_memory_type = 'guideline' AND jsonb_typeof(in_record -> 'content_json') = 'object'
       AND coalesce(in_record ->> 'guideline_key', 'context_budget') = 'context_budget' THEN
        FOREACH l_key IN ARRAY co_budget_counts LOOP
            IF jsonb_typeof(in_record -> 'content_json' -> l_key) = 'number'
               AND (in_record -> 'content_json' ->> l_key)::numeric NOT BETWEEN 0 AND co_max_budget_tokens THEN
                RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
                    'invalid_budget: %s.content_json.%s: must be 0..%s, got %s', in_memory_type, l_key,
                    co_max_budget_tokens, left(in_record -> 'content_json' ->> l_key, 40));
            END IF;
        END LOOP;
    END IF;
END;
$$;
--rollback DROP FUNCTION ctxasm.check_record(varchar, varchar, jsonb, varchar);

--changeset ctxasm:pg-internal-insert-row-version dbms:postgresql runOnChange:true splitStatements:false
--comment: one INSERT of the record's columns (the others take their defaults); errors name the field
CREATE OR REPLACE FUNCTION ctxasm.insert_row_version(in_memory_type varchar, in_table varchar,
                                                     in_tenant_id varchar, in_version integer, in_row jsonb)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    l_row        jsonb;
    l_columns    text;
    l_key        text;
    l_column     text;
    l_constraint text;
BEGIN
    l_row := (in_row - 'tenant_id' - 'version' - 'status' - 'created_at' - 'created_xid')
             || jsonb_build_object('tenant_id', in_tenant_id, 'version', in_version, 'status', 'active');
    -- Generated columns (a previous version's search_text, say) are the database's to compute.
    l_row := l_row - coalesce((SELECT array_agg(a.attname::text) FROM pg_catalog.pg_attribute a
                                WHERE a.attrelid = format('ctxasm.%I', in_table)::regclass
                                  AND a.attgenerated <> ''), '{}'::text[]);
    SELECT string_agg(quote_ident(k), ', ') INTO l_columns FROM jsonb_object_keys(l_row) AS k;
    BEGIN
        EXECUTE format('INSERT INTO ctxasm.%I (%s) SELECT %s FROM jsonb_populate_record(NULL::ctxasm.%I, $1)',
                       in_table, l_columns, l_columns, in_table)
            USING l_row;
    EXCEPTION
        WHEN unique_violation THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('duplicate_memory'), MESSAGE = format(
                'duplicate_memory: %s %s version %s already exists for tenant %s',
                in_memory_type, ctxasm.quoted(l_row ->> 'id'), in_version, ctxasm.quoted(in_tenant_id));
        WHEN not_null_violation THEN
            GET STACKED DIAGNOSTICS l_column = COLUMN_NAME;
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'),
                MESSAGE = format('invalid_field: %s.%s: required', in_memory_type, l_column);
        WHEN check_violation THEN
            GET STACKED DIAGNOSTICS l_constraint = CONSTRAINT_NAME;
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
                'invalid_field: %s.%s: out of range (check %s)', in_memory_type,
                regexp_replace(l_constraint, '^(memory_common|' || in_table || ')_(.+)_check$', '\2'),
                l_constraint);
        WHEN data_exception THEN
            -- Find the field whose value does not convert, so the message can name it.
            FOR l_key IN SELECT jsonb_object_keys(l_row) LOOP
                BEGIN
                    EXECUTE format('SELECT (jsonb_populate_record(NULL::ctxasm.%I, $1)).%I', in_table, l_key)
                        USING jsonb_build_object(l_key, l_row -> l_key);
                EXCEPTION WHEN data_exception THEN
                    RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'),
                        MESSAGE = format('invalid_field: %s.%s: %s', in_memory_type, l_key, left(SQLERRM, 300));
                END;
            END LOOP;
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'),
                MESSAGE = format('invalid_field: %s: %s', in_memory_type, left(SQLERRM, 300));
    END;
END;
$$;
--rollback DROP FUNCTION ctxasm.insert_row_version(varchar, varchar, varchar, integer, jsonb);
