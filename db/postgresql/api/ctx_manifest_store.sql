--liquibase formatted sql
-- How a manifest is stored and read: CTX_ASSEMBLY's record_manifest, read_manifest and latest_manifest_id and the
-- internal ctxasm.manifest_refs, in schema ctx_assembly as before (the same names, signatures and grants: the
-- application role has EXECUTE on every function of the schema, security/grants.sql). They are kept out of
-- api/ctx_assembly.sql because that file is part of the selection version's digest (contract/selection.toml):
-- the digest versions the selection, so a change to how manifests are stored does not retire every recorded
-- manifest. Oracle: internal/ctx_manifest_store.* (CTX_MANIFEST_STORE), to which CTX_ASSEMBLY delegates.
-- The changesets came from api/ctx_assembly.sql and keep their first path (logicalFilePath on each line), so a
-- database deployed before the move runs none of them again for it.

--changeset ctxasm:pg-internal-manifest-refs dbms:postgresql runOnChange:true splitStatements:false logicalFilePath:db/packages/postgresql/0050_ctx_assembly.sql
--comment: the rows a manifest depends on, in the order they are recorded: rendered memories, their persisted
--comment: compressions, the sources of their annotations, the excluded rows, the budget
CREATE OR REPLACE FUNCTION ctxasm.manifest_refs(in_manifest jsonb)
RETURNS TABLE (ref jsonb, relation varchar, ord bigint)
LANGUAGE sql IMMUTABLE AS $$
    -- The memories are read out of the manifest once (a large budget's manifest is a few hundred kB).
    WITH memories AS MATERIALIZED (
        SELECT e.m, e.o FROM jsonb_array_elements(in_manifest -> 'memories') WITH ORDINALITY AS e(m, o)
    )
    SELECT d.ref, d.relation, row_number() OVER (ORDER BY d.part, d.ord)
      FROM (
          SELECT m -> 'ref' AS ref, 'rendered'::varchar AS relation, 1 AS part, o AS ord
            FROM memories
          UNION ALL
          SELECT m -> 'summary_ref', 'compression', 2, o
            FROM memories
           WHERE jsonb_typeof(m -> 'summary_ref') = 'array'
          UNION ALL
          SELECT a -> 'source', 'annotation_source', 3, o * 1000 + p
            FROM memories,
                 jsonb_array_elements(coalesce(m -> 'annotation_refs', '[]'::jsonb)) WITH ORDINALITY AS n(a, p)
          UNION ALL
          SELECT x -> 'ref', 'excluded', 4, o
            FROM jsonb_array_elements(in_manifest -> 'excluded') WITH ORDINALITY AS e(x, o)
          UNION ALL
          SELECT in_manifest -> 'budget_ref', 'budget', 5, 1
      ) AS d
$$;
--rollback DROP FUNCTION ctxasm.manifest_refs(jsonb);

--changeset ctxasm:pg-ctx-assembly-record-manifest dbms:postgresql runOnChange:true splitStatements:false logicalFilePath:db/packages/postgresql/0050_ctx_assembly.sql
--comment: CTX_ASSEMBLY.record_manifest: the context_manifest event in conversation_memory plus one
--comment: context_source_ref row per dependency, one static statement per table, in the caller's transaction;
--comment: returns the manifest id
CREATE OR REPLACE FUNCTION ctx_assembly.record_manifest(in_manifest jsonb) RETURNS varchar
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := ctxasm.require_scope(in_manifest -> 'scope' ->> 'user_id', in_manifest -> 'scope' ->> 'agent_id');
    l_id     varchar := 'manifest_' || replace(gen_random_uuid()::text, '-', '');
    l_scope  jsonb := in_manifest -> 'scope';
    l_field  text;
    l_bad    record;
    -- the manifest's references and their relations, in manifest order (ctxasm.manifest_refs, read once)
    l_refs      jsonb[];
    l_relations varchar[];
    -- the widths of conversation_memory's user_id, agent_id and thread_id, and of context_source_ref's
    -- source_type and source_id
    co_scope_length CONSTANT integer := 64;
    co_type_length  CONSTANT integer := 32;
    co_id_length    CONSTANT integer := 128;
    -- the longest manifest, in characters of its JSON text: the catalogue's max_json_chars, what put_memory
    -- stores in one JSON field (contract/constants.toml; ctxasm.check_record), since the manifest is the event
    -- row's content_json
    co_max_json_chars    CONSTANT integer := 2000000;
    -- the most dependency references one manifest writes (one context_source_ref row each): a window of the
    -- largest budgets depends on some thousands of rows (at most max_candidate_limit, 1000, candidates per dynamic
    -- slice, rendered or excluded, with their compressions and annotation sources); the bound leaves room for that
    -- and keeps one call from writing hundreds of thousands of rows (the catalogue's max_manifest_refs,
    -- written here by the contract generator, as max_json_chars above)
    co_max_manifest_refs CONSTANT integer := 20000;
    l_length integer;
BEGIN
    IF in_manifest IS NULL OR jsonb_typeof(in_manifest) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_manifest'),
            MESSAGE = 'invalid_manifest: the manifest must be a JSON object';
    END IF;
    -- jsonb's own text form, as ctxasm.check_record measures a JSON field. Writing it out costs about 1 ms for a
    -- 4,000-token window's manifest, so it is written out only when it could be too long: its text is at most six
    -- characters per byte of the stored value (a control character's \uXXXX escape), unless that value is
    -- compressed (then its size says nothing, and the text is measured).
    IF pg_column_compression(in_manifest) IS NOT NULL OR pg_column_size(in_manifest)::bigint * 6 > co_max_json_chars
    THEN
        l_length := length(in_manifest::text);
        IF l_length > co_max_json_chars THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_manifest'), MESSAGE = format(
                'invalid_manifest: the manifest is %s characters of JSON, more than %s', l_length, co_max_json_chars);
        END IF;
    END IF;
    FOREACH l_field IN ARRAY ARRAY['memories', 'excluded', 'required_refs'] LOOP
        IF jsonb_typeof(in_manifest -> l_field) IS DISTINCT FROM 'array' THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_manifest'),
                MESSAGE = format('invalid_manifest: %s must be an array', l_field);
        END IF;
    END LOOP;
    IF coalesce(in_manifest ->> 'request_hash', '') !~ '^[0-9a-f]{64}$' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_manifest'),
            MESSAGE = 'invalid_manifest: request_hash must be 64 lower-case hex digits';
    END IF;
    IF jsonb_typeof(in_manifest -> 'budget_ref') IS DISTINCT FROM 'array'
       OR jsonb_array_length(in_manifest -> 'budget_ref') <> 3 THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_manifest'),
            MESSAGE = 'invalid_manifest: budget_ref must be [type, id, version]';
    END IF;
    -- The manifest's references and their relations, in manifest order, counted before anything is written.
    SELECT array_agg(r.ref ORDER BY r.ord), array_agg(r.relation ORDER BY r.ord) INTO l_refs, l_relations
      FROM ctxasm.manifest_refs(in_manifest) AS r;
    IF cardinality(l_refs) > co_max_manifest_refs THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_manifest'), MESSAGE = format(
            'invalid_manifest: the manifest has %s dependency references, more than %s', cardinality(l_refs),
            co_max_manifest_refs);
    END IF;
    -- The event row by one static INSERT, not through insert_row_version: that rebuilds the record (the whole
    -- manifest, about 100 kB) once per key it strips and plans a dynamic statement per call, which cost most of
    -- the manifest write. Every column is set here, so only the scope's lengths can be wrong; they are checked
    -- first, so the error names the field as insert_row_version's would.
    FOREACH l_field IN ARRAY ARRAY['user_id', 'agent_id', 'thread_id'] LOOP
        IF length(l_scope ->> l_field) > co_scope_length THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
                'invalid_field: conversation.%s: longer than %s characters', l_field, co_scope_length);
        END IF;
    END LOOP;
    INSERT INTO ctxasm.conversation_memory (tenant_id, id, version, status, user_id, agent_id, thread_id, role,
                                            event_type, content, content_json)
    VALUES (l_tenant, l_id, 1, 'active', l_scope ->> 'user_id', l_scope ->> 'agent_id', l_scope ->> 'thread_id',
            'event', 'context_manifest',
            format('context manifest: %s memories rendered, %s excluded, request %s',
                   jsonb_array_length(in_manifest -> 'memories'), jsonb_array_length(in_manifest -> 'excluded'),
                   in_manifest ->> 'request_hash'),
            in_manifest);
    -- Every row the window depended on, so retention and erasure can follow the sources: all checked first
    -- (the first bad one in manifest order is named), then written in one statement.
    SELECT b.ref, b.relation, b.problem INTO l_bad
      FROM (SELECT r.ref, r.relation, r.ord,
                   CASE WHEN jsonb_typeof(r.ref) IS DISTINCT FROM 'array' THEN 'shape'
                        WHEN jsonb_array_length(r.ref) <> 3 OR jsonb_typeof(r.ref -> 0) <> 'string'
                             OR jsonb_typeof(r.ref -> 1) <> 'string'
                             OR coalesce(r.ref ->> 2, '') !~ '^[0-9]{1,9}$' THEN 'shape'
                        WHEN length(r.ref ->> 0) > co_type_length THEN 'source_type'
                        WHEN length(r.ref ->> 1) > co_id_length THEN 'source_id' END AS problem
              FROM unnest(l_refs, l_relations) WITH ORDINALITY AS r(ref, relation, ord)) AS b
     WHERE b.problem IS NOT NULL
     ORDER BY b.ord
     LIMIT 1;
    IF l_bad.problem = 'shape' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_manifest'), MESSAGE = format(
            'invalid_manifest: a %s reference must be [type, id, version], not %s', l_bad.relation,
            left(coalesce(l_bad.ref::text, 'null'), 200));
    ELSIF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_field'), MESSAGE = format(
            'invalid_field: source_ref.%s: longer than %s characters', l_bad.problem,
            CASE l_bad.problem WHEN 'source_type' THEN co_type_length ELSE co_id_length END);
    END IF;
    INSERT INTO ctxasm.context_source_ref (tenant_id, id, version, status, user_id, agent_id, thread_id,
                                           derived_type, derived_id, derived_version, source_type, source_id,
                                           source_version, relation, content)
    SELECT l_tenant, l_id || ':' || r.ord, 1, 'active', l_scope ->> 'user_id', l_scope ->> 'agent_id',
           l_scope ->> 'thread_id', 'manifest', l_id, 1,
           r.ref ->> 0, r.ref ->> 1, (r.ref ->> 2)::integer, r.relation,
           format('manifest %s %s %s:%s@%s', l_id, r.relation, r.ref ->> 0, r.ref ->> 1, r.ref ->> 2)
      FROM unnest(l_refs, l_relations) WITH ORDINALITY AS r(ref, relation, ord);
    RETURN l_id;
END;
$$;
--rollback DROP FUNCTION ctx_assembly.record_manifest(jsonb);

--changeset ctxasm:pg-ctx-assembly-read-manifest dbms:postgresql runOnChange:true splitStatements:false logicalFilePath:db/packages/postgresql/0050_ctx_assembly.sql
--comment: CTX_ASSEMBLY.read_manifest: a recorded manifest of the session's tenant, or NULL (another tenant's
--comment: manifest is as unknown as one that never existed)
CREATE OR REPLACE FUNCTION ctx_assembly.read_manifest(in_manifest_id varchar) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := ctxasm.require_tenant();
    l_result jsonb;
BEGIN
    SELECT m.content_json INTO l_result
      FROM ctxasm.conversation_memory AS m
     WHERE m.tenant_id = l_tenant AND m.id = in_manifest_id AND m.event_type = 'context_manifest'
       AND m.status = 'active';
    RETURN l_result;
END;
$$;
--rollback DROP FUNCTION ctx_assembly.read_manifest(varchar);

--changeset ctxasm:pg-ctx-assembly-latest-manifest-id dbms:postgresql runOnChange:true splitStatements:false logicalFilePath:db/packages/postgresql/0050_ctx_assembly.sql
--comment: CTX_ASSEMBLY.latest_manifest_id: the scope's most recent window (what expand may open when no
--comment: manifest is named), or NULL
CREATE OR REPLACE FUNCTION ctx_assembly.latest_manifest_id(in_user_id varchar, in_agent_id varchar,
                                                          in_thread_id varchar)
RETURNS varchar
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := ctxasm.require_scope(in_user_id, in_agent_id);
    l_result varchar;
BEGIN
    SELECT m.id INTO l_result
      FROM ctxasm.conversation_memory AS m
     WHERE m.tenant_id = l_tenant AND m.event_type = 'context_manifest' AND m.status = 'active'
       AND m.user_id IS NOT DISTINCT FROM in_user_id AND m.agent_id IS NOT DISTINCT FROM in_agent_id
       AND m.thread_id IS NOT DISTINCT FROM in_thread_id
     ORDER BY m.created_at DESC, m.id DESC
     LIMIT 1;
    RETURN l_result;
END;
$$;
--rollback DROP FUNCTION ctx_assembly.latest_manifest_id(varchar, varchar, varchar);
