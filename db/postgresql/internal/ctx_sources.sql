--liquibase formatted sql logicalFilePath:db/packages/postgresql/0047_ctxasm_sources.sql
-- The candidate sources of one window. Selection never reads "every row in scope": it reads a bounded list of
-- sources (each a [type, id, version] reference with where it came from), then the rows those name, by primary
-- key, in the tenant's partitions. Live assembly makes the list (enumerated fixed slices, the thread's tail,
-- retrieval, the sources and claims of history); replay gets the list the manifest recorded and reads the same
-- rows as of the recorded snapshot.
--
-- Every statement here that reads a tenant-partitioned table with the tenant as a parameter is planned for each
-- call, for that tenant's partitions (made for the call, or plan_cache_mode = force_custom_plan). PostgreSQL's
-- plan cache otherwise turns a statement it ran five times in a session into a generic plan, and a generic plan
-- over a partitioned table opens and locks every tenant's partition, pruning only when it runs: with a few
-- tenants the cache prefers it, and an assembly then held about twenty relations per registered tenant (with 200
-- tenants such a plan of the rows a source list names took 60 ms instead of 7). The steps that only work on the
-- selection's own rows keep their cached plans: planning those again for every call, their arrays of rows as
-- constants, cost more than the statements themselves.

--changeset ctxasm:pg-internal-merged-sources dbms:postgresql runOnChange:true splitStatements:false
--comment: a source list with one entry per row version: the first origin by precedence (the thread's tail,
--comment: enumeration, retrieval, a turn next to a retrieved one, a claim, a citation), with the retrieval
--comment: figures of any entry for it
CREATE OR REPLACE FUNCTION ctxasm.merged_sources(in_sources jsonb)
RETURNS TABLE (memory_type varchar, id varchar, version integer, origin varchar, item jsonb)
LANGUAGE sql IMMUTABLE ROWS 300 AS $$
    -- One sort of the entries by reference and precedence serves the count per reference and the first entry
    -- (grouped, each reference's ordered aggregates sorted its few entries apart: half as slow again). A
    -- reference listed once (almost all) is its entry as it is; only a merged entry is rebuilt, with the figures
    -- of the retrieval entry of its reference, less that entry's origin and slice.
    SELECT DISTINCT ON (s.memory_type, s.id, s.version) s.memory_type, s.id, s.version, s.origin,
           CASE WHEN s.entries > 1 THEN s.item || coalesce(s.retrieved - 'origin' - 'slice', '{}') ELSE s.item END
      FROM (SELECT e.*, count(*) OVER same_ref AS entries,
                   (array_agg(e.item) FILTER (WHERE e.origin = 'retrieval') OVER same_ref)[1] AS retrieved
              FROM (SELECT (x.item -> 'ref' ->> 0)::varchar AS memory_type, (x.item -> 'ref' ->> 1)::varchar AS id,
                           (x.item -> 'ref' ->> 2)::integer AS version, (x.item ->> 'origin')::varchar AS origin,
                           x.item,
                           array_position(ARRAY['tail', 'scope', 'retrieval', 'adjacent', 'claim', 'cited'],
                                          x.item ->> 'origin') AS precedence
                      FROM jsonb_array_elements(in_sources) AS x(item)
                     WHERE jsonb_typeof(x.item -> 'ref') = 'array') AS e
            WINDOW same_ref AS (PARTITION BY e.memory_type, e.id, e.version)) AS s
     ORDER BY s.memory_type, s.id, s.version, s.precedence
$$;
--rollback DROP FUNCTION ctxasm.merged_sources(jsonb);

--changeset ctxasm:pg-internal-read-rows-dropped dbms:postgresql splitStatements:false
--comment: ctxasm.source_rows reads the rows of a source list together with where each came from
DROP FUNCTION IF EXISTS ctxasm.read_rows(varchar, pg_snapshot, jsonb);
--rollback SELECT 1;

--changeset ctxasm:pg-internal-tenant-relation dbms:postgresql runOnChange:true splitStatements:false
--comment: the relation a hot read of one tenant names, for each of in_tables: the tenant's own partition when
--comment: it exists, else the table itself (a deployment without tenant partitions, where the table's policy
--comment: applies). A statement over the partitioned table is planned over it and its policy on every call (a
--comment: generic plan would lock every tenant's partitions: see the head of this file), which cost more than
--comment: most of these reads. The partition holds the session tenant's rows and no other (its bound); the reads
--comment: name the tenant and the scope the session's claim allows as well (docs/security.md, item 5). The
--comment: tables are asked for together (ctxasm.tenant_partitions: one keyed hash); every reader asks for all
--comment: the tables of its statement at once.
DROP FUNCTION IF EXISTS ctxasm.tenant_relation(varchar, varchar);
CREATE OR REPLACE FUNCTION ctxasm.tenant_relations(in_tenant_id varchar, in_tables varchar[])
RETURNS TABLE (table_name varchar, relation varchar)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT p.table_name,
           CASE WHEN to_regclass(format('ctxasm.%I', p.partition_name)) IS NOT NULL THEN p.partition_name
                ELSE p.table_name END
      FROM ctxasm.tenant_partitions(in_tenant_id, in_tables) AS p
$$;
REVOKE ALL ON FUNCTION ctxasm.tenant_relations(varchar, varchar[]) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.tenant_relations(varchar, varchar[]);

--changeset ctxasm:pg-internal-live-source-rows dbms:postgresql runOnChange:true splitStatements:false
--comment: the live rows of a list of row versions (in_types, in_ids, in_versions side by side; at = position),
--comment: each read by primary key in the tenant's own partition of its type's table, in the shape of the view
--comment: ctxasm.memory_row_<type>; with a snapshot, only a row visible in it. The partition holds this tenant's
--comment: rows and no other (its bound), the read names the tenant too, and the user and agent a session's
--comment: claim names narrow it as row level security does on the parent: read through the parent, the
--comment: statement was planned over the partitioned table and its policy (about a millisecond more a window) and
--comment: tested the policy on every row. A type whose partition does not exist (a deployment without tenant
--comment: partitions) is read through its view. One statement made for the types the list holds and planned for
--comment: this call, with the tenant known: planned once for every type and kept, it would be a generic plan that
--comment: locks every tenant's partitions, and planned again for every type it cost several milliseconds a window.
CREATE OR REPLACE FUNCTION ctxasm.live_source_rows(in_tenant_id varchar, in_snapshot pg_snapshot,
                                                   in_types varchar[], in_ids varchar[], in_versions integer[])
RETURNS TABLE (at integer, memory ctxasm.memory_row)
LANGUAGE plpgsql STABLE ROWS 300 SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    -- generated: source row types from contract/memory_types.toml; edit the catalogue, then regenerate
    co_types constant varchar[] := ARRAY['guideline', 'persona', 'toolbox', 'entity', 'workflow', 'kb_document',
        'kb_chunk', 'conversation', 'summary']::varchar[];
    -- end generated: source row types
    -- generated: source row columns from contract/memory_types.toml; edit the catalogue, then regenerate
    co_columns constant text[] := ARRAY[
        $list$'guideline'::varchar AS memory_type, 'guideline_memory'::varchar AS table_name, tenant_id, id,
              version, user_id, agent_id, thread_id, status, valid_from, valid_until, deleted_at, content,
              content_json, source_refs, NULL::numeric AS confidence, guideline_key AS key_name, NULL::varchar AS
              subject, NULL::varchar AS predicate, NULL::varchar AS title, NULL::integer AS turn_index,
              NULL::varchar AS role, NULL::varchar AS event_type, NULL::jsonb AS extra, created_xid, content_tokens,
              NULL::vector AS embedding, NULL::tsvector AS search_text, NULL::char(32) AS text_key, NULL::text AS
              pointer_text$list$,
        $list$'persona'::varchar AS memory_type, 'persona_memory'::varchar AS table_name, tenant_id, id, version,
              user_id, agent_id, thread_id, status, valid_from, valid_until, deleted_at, content, content_json,
              source_refs, NULL::numeric AS confidence, persona_key AS key_name, NULL::varchar AS subject,
              NULL::varchar AS predicate, NULL::varchar AS title, NULL::integer AS turn_index, NULL::varchar AS
              role, NULL::varchar AS event_type, NULL::jsonb AS extra, created_xid, content_tokens, NULL::vector AS
              embedding, NULL::tsvector AS search_text, NULL::char(32) AS text_key, NULL::text AS
              pointer_text$list$,
        $list$'toolbox'::varchar AS memory_type, 'toolbox_memory'::varchar AS table_name, tenant_id, id, version,
              user_id, agent_id, thread_id, status, valid_from, valid_until, deleted_at, content, content_json,
              source_refs, NULL::numeric AS confidence, tool_name AS key_name, NULL::varchar AS subject,
              NULL::varchar AS predicate, NULL::varchar AS title, NULL::integer AS turn_index, NULL::varchar AS
              role, NULL::varchar AS event_type, jsonb_build_object('tool_schema', tool_schema, 'usage_notes',
              usage_notes, 'tool_handler', tool_handler, 'access_policy', access_policy) AS extra, created_xid,
              content_tokens, NULL::vector AS embedding, NULL::tsvector AS search_text, NULL::char(32) AS text_key,
              NULL::text AS pointer_text$list$,
        $list$'entity'::varchar AS memory_type, 'entity_memory'::varchar AS table_name, tenant_id, id, version,
              user_id, agent_id, thread_id, status, valid_from, valid_until, deleted_at, content, content_json,
              source_refs, confidence, NULL::varchar AS key_name, subject, predicate, NULL::varchar AS title,
              NULL::integer AS turn_index, NULL::varchar AS role, NULL::varchar AS event_type, NULL::jsonb AS extra,
              created_xid, content_tokens, embedding, search_text, text_key, pointer_text$list$,
        $list$'workflow'::varchar AS memory_type, 'workflow_memory'::varchar AS table_name, tenant_id, id, version,
              user_id, agent_id, thread_id, status, valid_from, valid_until, deleted_at, content, content_json,
              source_refs, NULL::numeric AS confidence, workflow_key AS key_name, NULL::varchar AS subject,
              NULL::varchar AS predicate, NULL::varchar AS title, NULL::integer AS turn_index, NULL::varchar AS
              role, NULL::varchar AS event_type, NULL::jsonb AS extra, created_xid, content_tokens, embedding,
              search_text, text_key, pointer_text$list$,
        $list$'kb_document'::varchar AS memory_type, 'knowledge_base_document'::varchar AS table_name, tenant_id,
              id, version, user_id, agent_id, thread_id, status, valid_from, valid_until, deleted_at, content,
              content_json, source_refs, NULL::numeric AS confidence, collection AS key_name, NULL::varchar AS
              subject, NULL::varchar AS predicate, title, NULL::integer AS turn_index, NULL::varchar AS role,
              NULL::varchar AS event_type, jsonb_build_object('source_uri', source_uri, 'published_at',
              published_at) AS extra, created_xid, content_tokens, NULL::vector AS embedding, search_text, text_key,
              pointer_text$list$,
        $list$'kb_chunk'::varchar AS memory_type, 'knowledge_base_chunk'::varchar AS table_name, tenant_id, id,
              version, user_id, agent_id, thread_id, status, valid_from, valid_until, deleted_at, content,
              content_json, source_refs, NULL::numeric AS confidence, document_id AS key_name, NULL::varchar AS
              subject, NULL::varchar AS predicate, title, chunk_index AS turn_index, NULL::varchar AS role,
              NULL::varchar AS event_type, jsonb_build_object('document_version', document_version) AS extra,
              created_xid, content_tokens, embedding, search_text, text_key, pointer_text$list$,
        $list$'conversation'::varchar AS memory_type, 'conversation_memory'::varchar AS table_name, tenant_id, id,
              version, user_id, agent_id, thread_id, status, valid_from, valid_until, deleted_at, content,
              content_json, source_refs, NULL::numeric AS confidence, NULL::varchar AS key_name, NULL::varchar AS
              subject, NULL::varchar AS predicate, NULL::varchar AS title, turn_index, role, event_type,
              jsonb_build_object('speaker', speaker) AS extra, created_xid, content_tokens, embedding, search_text,
              text_key, pointer_text$list$,
        $list$'summary'::varchar AS memory_type, 'summarization_memory'::varchar AS table_name, tenant_id, id,
              version, user_id, agent_id, thread_id, status, valid_from, valid_until, deleted_at, content,
              content_json, source_refs, NULL::numeric AS confidence, summary_key AS key_name, NULL::varchar AS
              subject, NULL::varchar AS predicate, NULL::varchar AS title, NULL::integer AS turn_index,
              NULL::varchar AS role, NULL::varchar AS event_type, jsonb_build_object('period_start', period_start,
              'period_end', period_end) AS extra, created_xid, content_tokens, embedding, search_text, text_key,
              pointer_text$list$];
    -- end generated: source row columns
    l_branches text[];
BEGIN
    SELECT array_agg(CASE WHEN r.relation <> r.table_name
                          THEN format('SELECT f.at, ROW(r.*)::ctxasm.memory_row FROM refs AS f '
                                      'JOIN (SELECT %s FROM ctxasm.%I) AS r ON f.memory_type = %L '
                                      'AND r.tenant_id = $1 AND r.id = f.id AND r.version = f.version '
                                      'AND ($6 IS NULL OR r.user_id IS NULL OR r.user_id = $6) '
                                      'AND ($7 IS NULL OR r.agent_id IS NULL OR r.agent_id = $7)',
                                      co_columns[t.ord], r.relation, t.memory_type)
                          ELSE format('SELECT f.at, ROW(r.*)::ctxasm.memory_row FROM refs AS f '
                                      'JOIN ctxasm.%I AS r ON f.memory_type = %L AND r.tenant_id = $1 '
                                      'AND r.id = f.id AND r.version = f.version',
                                      'memory_row_' || t.memory_type, t.memory_type) END
                     || CASE WHEN in_snapshot IS NOT NULL THEN ' AND pg_visible_in_snapshot(r.created_xid, $5)'
                             ELSE '' END
                     ORDER BY t.ord)
      INTO l_branches
      FROM unnest(co_types) WITH ORDINALITY AS t(memory_type, ord)
      JOIN ctxasm.memory_type AS m ON m.memory_type = t.memory_type
      -- the partitions of the types the list holds, named in one call (one keyed hash)
      JOIN ctxasm.tenant_relations(in_tenant_id, ARRAY(SELECT k.table_name FROM ctxasm.memory_type AS k
                                                       WHERE k.memory_type = ANY (in_types))) AS r
        ON r.table_name = m.table_name
     WHERE t.memory_type = ANY (in_types);
    IF l_branches IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format(
        'WITH refs AS MATERIALIZED (SELECT f.memory_type, f.id, f.version, f.at::integer AS at '
        '                             FROM unnest($2, $3, $4) WITH ORDINALITY AS f(memory_type, id, version, at)) '
        '%s', array_to_string(l_branches, ' UNION ALL '))
        USING in_tenant_id, in_types, in_ids, in_versions, in_snapshot, ctxasm.claim_scope('user'),
              ctxasm.claim_scope('agent');
END;
$$;
--rollback DROP FUNCTION ctxasm.live_source_rows(varchar, pg_snapshot, varchar[], varchar[], integer[]);

--changeset ctxasm:pg-internal-history-source-rows dbms:postgresql runOnChange:true splitStatements:false
--comment: the retired versions of a list of row versions (as live_source_rows) that were visible in a recorded
--comment: snapshot and retired after it: what the history kept, read for a replay, in the tenant's partitions
--comment: (planned for each call, as live_source_rows)
CREATE OR REPLACE FUNCTION ctxasm.history_source_rows(in_tenant_id varchar, in_snapshot pg_snapshot,
                                                      in_types varchar[], in_ids varchar[], in_versions integer[])
RETURNS TABLE (at integer, memory ctxasm.memory_row)
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp SET plan_cache_mode = force_custom_plan AS $$
    -- generated: history source row from contract/memory_types.toml; edit the catalogue, then regenerate
    SELECT f.at, ROW(h.memory_type, h.table_name, h.tenant_id, h.id, h.version, h.user_id, h.agent_id, h.thread_id,
           h.status, h.valid_from, h.valid_until, h.deleted_at, h.content, h.content_json, h.source_refs,
           h.confidence, h.key_name, h.subject, h.predicate, h.title, h.turn_index, h.role, h.event_type, h.extra,
           h.created_xid, h.content_tokens, h.embedding, h.search_text, h.text_key,
           h.pointer_text)::ctxasm.memory_row
    -- end generated: history source row
      FROM unnest(in_types, in_ids, in_versions) WITH ORDINALITY AS f(memory_type, id, version, at)
      JOIN ctxasm.memory_row_history AS h ON h.memory_type = f.memory_type AND h.id = f.id AND h.version = f.version
     WHERE h.tenant_id = in_tenant_id
       AND pg_visible_in_snapshot(h.created_xid, in_snapshot)
       AND NOT pg_visible_in_snapshot(h.retired_xid, in_snapshot)
$$;
--rollback DROP FUNCTION ctxasm.history_source_rows(varchar, pg_snapshot, varchar[], varchar[], integer[]);

--changeset ctxasm:pg-internal-source-rows dbms:postgresql runOnChange:true splitStatements:false
--comment: the rows a source list names, each with its origin and source entry (one per row version: see
--comment: merged_sources), now (NULL snapshot: the live tables) or exactly as they were visible in a recorded
--comment: snapshot (the live row if it was visible then, else the retired version the history kept). Every
--comment: read names the tenant and goes by primary key (live_source_rows, history_source_rows).
CREATE OR REPLACE FUNCTION ctxasm.source_rows(in_tenant_id varchar, in_snapshot pg_snapshot, in_sources jsonb)
RETURNS TABLE (memory ctxasm.memory_row, origin varchar, source jsonb)
LANGUAGE sql STABLE ROWS 300 SET search_path = pg_catalog, public, pg_temp AS $$
    WITH refs AS MATERIALIZED (
        SELECT m.*, (row_number() OVER ())::integer AS at FROM ctxasm.merged_sources(in_sources) AS m
    ),
    listed AS MATERIALIZED (
        SELECT array_agg(f.memory_type ORDER BY f.at) AS types, array_agg(f.id ORDER BY f.at) AS ids,
               array_agg(f.version ORDER BY f.at) AS versions
          FROM refs AS f
    )
    SELECT s.memory, f.origin, f.item
      FROM listed AS l
     CROSS JOIN LATERAL ctxasm.live_source_rows(in_tenant_id, in_snapshot, l.types, l.ids, l.versions) AS s
      JOIN refs AS f ON f.at = s.at
    UNION ALL
    SELECT s.memory, f.origin, f.item
      FROM listed AS l
     CROSS JOIN LATERAL ctxasm.history_source_rows(in_tenant_id, in_snapshot, l.types, l.ids, l.versions) AS s
      JOIN refs AS f ON f.at = s.at
     WHERE in_snapshot IS NOT NULL
$$;
--rollback DROP FUNCTION ctxasm.source_rows(varchar, pg_snapshot, jsonb);

--changeset ctxasm:pg-internal-candidate-rows dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SOURCES.candidate_rows: the rows a source list names (ctxasm.source_rows: live, or as of a recorded
--comment: snapshot) as the selection's candidate rows, each with its origin and source entry; the steps' columns
--comment: are empty but two: required is false (required_step marks the rows it finds required), and similarity
--comment: holds the row's cosine similarity to in_embedding (NULL without one), which score_step reads; the
--comment: embedding itself is left out. A vector is the widest column of a row (1.5 kB), and every step copies the
--comment: rows it passes on: compared here once, it travels no further (as Oracle's CTX_SOURCES compares it in the
--comment: union branch). The row's columns are read one by one, the embedding's NULL (rebuilding each row without
--comment: it, by jsonb_populate_record, cost a tenth of the call).
DROP FUNCTION IF EXISTS ctxasm.candidate_rows(varchar, pg_snapshot, jsonb);
CREATE OR REPLACE FUNCTION ctxasm.candidate_rows(in_tenant_id varchar, in_snapshot pg_snapshot, in_sources jsonb,
                                                 in_embedding public.vector)
RETURNS ctxasm.selection_candidate[]
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT coalesce(array_agg(ROW(
               x.origin, x.source,
               -- the steps' columns, scope_level .. cut: all empty but required (false until required_step
               -- finds the row required) and similarity; the late step columns (length_logit) end the row
               NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, FALSE, NULL, NULL,
               CASE WHEN in_embedding IS NOT NULL AND (x.memory).embedding IS NOT NULL
                    THEN 1 - ((x.memory).embedding OPERATOR(public.<=>) in_embedding) END,
               NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
               -- generated: candidate row columns from contract/memory_types.toml; edit the catalogue, then regenerate
               (x.memory).memory_type, (x.memory).table_name, (x.memory).tenant_id, (x.memory).id,
               (x.memory).version, (x.memory).user_id, (x.memory).agent_id, (x.memory).thread_id, (x.memory).status,
               (x.memory).valid_from, (x.memory).valid_until, (x.memory).deleted_at, (x.memory).content,
               (x.memory).content_json, (x.memory).source_refs, (x.memory).confidence, (x.memory).key_name,
               (x.memory).subject, (x.memory).predicate, (x.memory).title, (x.memory).turn_index, (x.memory).role,
               (x.memory).event_type, (x.memory).extra, (x.memory).created_xid, (x.memory).content_tokens, NULL,
               (x.memory).search_text, (x.memory).text_key, (x.memory).pointer_text,
               NULL)::ctxasm.selection_candidate), '{}')
               -- end generated: candidate row columns
      FROM ctxasm.source_rows(in_tenant_id, in_snapshot, in_sources) AS x
$$;
--rollback DROP FUNCTION ctxasm.candidate_rows(varchar, pg_snapshot, jsonb, public.vector);

--changeset ctxasm:pg-internal-source-item dbms:postgresql runOnChange:true splitStatements:false
--comment: one entry of a source list
CREATE OR REPLACE FUNCTION ctxasm.source_item(in_memory_type varchar, in_id varchar, in_version integer,
                                              in_origin varchar, in_slice varchar)
RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('ref', jsonb_build_array(in_memory_type, in_id, in_version), 'origin', in_origin,
                              'slice', in_slice)
$$;
--rollback DROP FUNCTION ctxasm.source_item(varchar, varchar, integer, varchar, varchar);

--changeset ctxasm:pg-internal-facts-enumerable dbms:postgresql runOnChange:true splitStatements:false
--comment: whether the durable facts in scope are few enough (at most in_limit row versions) to enumerate them
--comment: all; beyond that they are retrieved like evidence. Counts at most in_limit + 1 rows, by index.
CREATE OR REPLACE FUNCTION ctxasm.facts_enumerable(in_tenant_id varchar, in_user_id varchar, in_agent_id varchar,
                                                   in_thread_id varchar, in_limit integer)
RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- generated: facts counted from contract/memory_types.toml; edit the catalogue, then regenerate
    co_facts constant varchar[] := ARRAY['entity', 'entity_memory', 'durable_facts', 'workflow', 'workflow_memory',
        'durable_facts']::varchar[];
    -- end generated: facts counted
    l_branches text[];
    l_count    bigint;
BEGIN
    -- Each type's rows in scope, read from the tenant's own partition (ctxasm.tenant_relations).
    SELECT array_agg(format('SELECT 1 FROM ctxasm.%I AS r WHERE r.tenant_id = $1 '
                            'AND (r.user_id IS NULL OR r.user_id = $2) AND (r.agent_id IS NULL OR r.agent_id = $3) '
                            'AND (r.thread_id IS NULL OR r.thread_id = $4)', r.relation) ORDER BY f.n)
      INTO l_branches
      FROM generate_series(1, cardinality(co_facts) / 3) AS f(n)
      JOIN ctxasm.tenant_relations(in_tenant_id, ARRAY(SELECT co_facts[3 * g - 1]
                                                         FROM generate_series(1, cardinality(co_facts) / 3) AS g))
           AS r ON r.table_name = co_facts[3 * f.n - 1];
    EXECUTE format('SELECT count(*) FROM (%s LIMIT $5) AS counted', array_to_string(l_branches, ' UNION ALL '))
        INTO l_count
        USING in_tenant_id, in_user_id, in_agent_id, in_thread_id, in_limit + 1;
    RETURN l_count <= in_limit;
END;
$$;
--rollback DROP FUNCTION ctxasm.facts_enumerable(varchar, varchar, varchar, varchar, integer);

--changeset ctxasm:pg-internal-enumerated-sources dbms:postgresql runOnChange:true splitStatements:false
--comment: the sources a window enumerates rather than retrieves, on the live tables of one tenant: every version
--comment: in scope of the guidelines, persona and tools (small by nature; the lifecycle step decides), the
--comment: thread's latest in_tail_limit messages by turn index, and, when in_with_facts, every version of the
--comment: durable facts in scope
CREATE OR REPLACE FUNCTION ctxasm.enumerated_sources(
    in_tenant_id  varchar,
    in_user_id    varchar,
    in_agent_id   varchar,
    in_thread_id  varchar,
    in_tail_limit integer,
    in_with_facts boolean
)
RETURNS SETOF jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- (type, table, slice) of the types enumerated by scope, then of the durable facts
    -- generated: enumerated by scope from contract/memory_types.toml; edit the catalogue, then regenerate
    co_scope constant varchar[] := ARRAY['guideline', 'guideline_memory', 'guidelines', 'persona', 'persona_memory',
        'persona', 'toolbox', 'toolbox_memory', 'tools']::varchar[];
    -- end generated: enumerated by scope
    -- generated: enumerated facts from contract/memory_types.toml; edit the catalogue, then regenerate
    co_facts constant varchar[] := ARRAY['entity', 'entity_memory', 'durable_facts', 'workflow', 'workflow_memory',
        'durable_facts']::varchar[];
    -- end generated: enumerated facts
    l_types    varchar[] := co_scope || CASE WHEN in_with_facts THEN co_facts ELSE '{}' END;
    l_branches text[];
    l_turns    varchar;
BEGIN
    -- Every version in scope of each type, read from the tenant's own partition (ctxasm.tenant_relations); the
    -- thread's tail after the types enumerated by scope, as before the facts.
    SELECT array_agg(format('SELECT ctxasm.source_item(%L, r.id, r.version, ''scope'', %L) FROM ctxasm.%I AS r '
                            'WHERE r.tenant_id = $1 AND (r.user_id IS NULL OR r.user_id = $2) '
                            'AND (r.agent_id IS NULL OR r.agent_id = $3) '
                            'AND (r.thread_id IS NULL OR r.thread_id = $4)',
                            l_types[3 * e.n - 2], l_types[3 * e.n], r.relation) ORDER BY e.n)
               FILTER (WHERE e.n IS NOT NULL),
           max(r.relation) FILTER (WHERE r.table_name = 'conversation_memory')
      INTO l_branches, l_turns
      FROM ctxasm.tenant_relations(in_tenant_id, ARRAY(SELECT l_types[3 * g - 1]
                                                         FROM generate_series(1, cardinality(l_types) / 3) AS g)
                                                 || 'conversation_memory'::varchar) AS r
      LEFT JOIN generate_series(1, cardinality(l_types) / 3) AS e(n) ON r.table_name = l_types[3 * e.n - 1];
    l_branches := l_branches[1:cardinality(co_scope) / 3] || format(
        'SELECT ctxasm.source_item(''conversation'', c.id, c.version, ''tail'', ''volatile_tail'') '
        'FROM (SELECT c.id, c.version FROM ctxasm.%I AS c '
        'WHERE c.tenant_id = $1 AND c.thread_id = $4 AND c.event_type = ''message'' '
        'AND (c.user_id IS NULL OR c.user_id = $2) AND (c.agent_id IS NULL OR c.agent_id = $3) '
        'ORDER BY c.turn_index DESC NULLS LAST, c.valid_from DESC, c.id DESC LIMIT $5) AS c', l_turns)
        || l_branches[cardinality(co_scope) / 3 + 1:];
    RETURN QUERY EXECUTE array_to_string(l_branches, ' UNION ALL ')
        USING in_tenant_id, in_user_id, in_agent_id, in_thread_id, in_tail_limit;
END;
$$;
--rollback DROP FUNCTION ctxasm.enumerated_sources(varchar, varchar, varchar, varchar, integer, boolean);

--changeset ctxasm:pg-internal-claim-sources dbms:postgresql runOnChange:true splitStatements:false
--comment: what history depends on: the rows the recalled summaries and turns cite (their source_refs), and,
--comment: for a cited row that makes a claim, every canonical fact of that claim in scope, so the conflict
--comment: step can name the claim's current winner whatever its row id: a JSON array of source entries, or NULL
--comment: when the history cites nothing. The citations are read from the window's candidate rows (in_rows, as
--comment: candidate_rows read them: reading them again by primary key cost about a millisecond a window); the
--comment: cited rows and claims from the live tables of one tenant.
DROP FUNCTION IF EXISTS ctxasm.claim_sources(varchar, varchar, varchar, varchar, jsonb);
CREATE OR REPLACE FUNCTION ctxasm.claim_sources(
    in_tenant_id varchar,
    in_user_id   varchar,
    in_agent_id  varchar,
    in_thread_id varchar,
    in_rows      ctxasm.selection_candidate[]
)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public, pg_temp SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    l_cited  jsonb;
    l_result jsonb;
BEGIN
    -- The citations first, in a statement of their own: most windows' history cites nothing, and those windows
    -- end here, without planning the reads of cited rows and claims.
    WITH history AS (
        SELECT s.source_refs
          FROM (SELECT r.source AS item, r.source_refs FROM unnest(in_rows) AS r) AS s
         -- generated: history types from contract/memory_types.toml; edit the catalogue, then regenerate
         WHERE s.item -> 'ref' ->> 0 IN ('conversation', 'summary')
         -- end generated: history types
           AND s.source_refs <> '[]'::jsonb
    ),
    cited AS (
        SELECT DISTINCT ref.value ->> 'type' AS memory_type, ref.value ->> 'id' AS id,
               (ref.value ->> 'version')::integer AS version
          FROM history AS x
          CROSS JOIN LATERAL jsonb_array_elements(x.source_refs) AS ref(value)
         WHERE jsonb_typeof(ref.value) = 'object' AND ref.value ->> 'type' IS NOT NULL
           AND ref.value ->> 'id' IS NOT NULL AND ref.value ->> 'version' ~ '^[0-9]{1,9}$'
    )
    SELECT jsonb_agg(jsonb_build_object('ref', jsonb_build_array(c.memory_type, c.id, c.version), 'origin', 'cited'))
      INTO l_cited
      FROM cited AS c;
    IF l_cited IS NULL THEN
        RETURN NULL;
    END IF;
    WITH cited_rows AS (
        SELECT (x.memory).* FROM ctxasm.source_rows(in_tenant_id, NULL, l_cited) AS x
    )
    SELECT jsonb_agg(d.item) INTO l_result
      -- A cited row is a source of the recalled history that cites it: recorded under that slice (it may be in no
      -- slice of its own: a superseded fact retrieval did not find, an erased row).
      FROM (SELECT ctxasm.source_item(r.memory_type, r.id, r.version, 'cited', 'recalled_history') AS item
              FROM cited_rows AS r
            UNION
            SELECT ctxasm.source_item('entity', e.id, e.version, 'claim', 'durable_facts')
              FROM cited_rows AS r
              JOIN ctxasm.entity_memory AS e
                ON e.tenant_id = in_tenant_id
               AND e.subject = coalesce(r.subject, r.content_json -> 'claim' ->> 'subject')
               AND e.predicate = coalesce(r.predicate, r.content_json -> 'claim' ->> 'predicate')
             WHERE (e.user_id IS NULL OR e.user_id = in_user_id) AND (e.agent_id IS NULL OR e.agent_id = in_agent_id)
               AND (e.thread_id IS NULL OR e.thread_id = in_thread_id) AND e.status = 'active') AS d;
    RETURN l_result;
END;
$$;
--rollback DROP FUNCTION ctxasm.claim_sources(varchar, varchar, varchar, varchar, ctxasm.selection_candidate[]);

--changeset ctxasm:pg-internal-window-sources dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SOURCES.window_sources: the source list of a live window, on the live tables of one tenant: what
--comment: the window enumerates (fixed slices, the thread's tail, few durable facts), what retrieval finds for
--comment: each retrieved slice and the turns next to the best recalled ones (what the recalled history cites, and
--comment: the claims of those citations, select_window adds from the rows it reads: ctxasm.claim_sources). The
--comment: question's terms come from ctxasm.question_terms (computed once per window: scoring reads them too).
CREATE OR REPLACE FUNCTION ctxasm.window_sources(
    in_tenant_id       varchar,
    in_user_id         varchar,
    in_agent_id        varchar,
    in_thread_id       varchar,
    in_evaluation_time timestamptz,
    in_embedding       public.vector,
    in_limits          jsonb,
    in_depth           integer,
    in_term_types      varchar[],
    in_term_lexemes    text[],
    in_term_idf        double precision[],
    in_term_df         double precision[],
    in_term_rows       double precision[]
)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- How many estimated rows the lexical probe may visit.
    co_probe_rows      constant integer := 500;
    -- Durable facts are enumerated while the scope holds at most this many row versions of them.
    co_facts_enumerated constant integer := 100;
    l_facts_enumerated boolean := ctxasm.facts_enumerable(in_tenant_id, in_user_id, in_agent_id, in_thread_id,
                                                          co_facts_enumerated);
    l_sources jsonb;
BEGIN
    -- Each enumerated entry with its reference as columns: the retrieved and adjacent rows are matched against
    -- them by a hashed anti-join (comparing built JSON arrays pair by pair grew with both lists).
    WITH enumerated AS MATERIALIZED (
        SELECT e AS item, e -> 'ref' ->> 0 AS memory_type, e -> 'ref' ->> 1 AS id,
               (e -> 'ref' ->> 2)::integer AS version
          FROM ctxasm.enumerated_sources(in_tenant_id, in_user_id, in_agent_id, in_thread_id,
                                         (in_limits ->> 'volatile_tail')::integer, l_facts_enumerated) AS e
    ),
    retrieved AS (
        SELECT x.slice, r.*
          FROM unnest(CASE WHEN l_facts_enumerated THEN ARRAY['evidence', 'recalled_history']
                           ELSE ARRAY['evidence', 'recalled_history', 'durable_facts'] END) AS x(slice)
          CROSS JOIN LATERAL ctxasm.retrieve(
              in_tenant_id, x.slice, in_user_id, in_agent_id, in_thread_id, in_evaluation_time,
              in_term_types, in_term_lexemes, in_term_idf,
              ctxasm.probe_query(
                  (SELECT array_agg(t.lexeme) FROM unnest(in_term_types, in_term_lexemes) AS t(kind, lexeme)
                    WHERE t.kind = ANY (ctxasm.slice_types(x.slice))),
                  (SELECT array_agg(t.df) FROM unnest(in_term_types, in_term_df) AS t(kind, df)
                    WHERE t.kind = ANY (ctxasm.slice_types(x.slice))),
                  (SELECT max(t.row_count) FROM unnest(in_term_types, in_term_rows) AS t(kind, row_count)
                    WHERE t.kind = ANY (ctxasm.slice_types(x.slice))),
                  co_probe_rows),
              -- Each retriever ranks at least in_depth rows; fused, twice the slice's limit is kept: a small
              -- slice does not carry rows it cannot seat through every step (ranking deep and keeping what the
              -- limit can use; the conversation set's recall was the same at every budget).
              in_embedding, greatest(in_depth, (in_limits ->> x.slice)::integer),
              2 * (in_limits ->> x.slice)::integer) AS r
    ),
    -- The turns next to the best recalled turns (as many as the slice may keep), in their threads.
    adjacent AS (
        SELECT a.*
          FROM ctxasm.adjacent_turns(
              in_tenant_id, in_user_id, in_agent_id, in_thread_id, in_evaluation_time,
              ARRAY(SELECT r.id FROM retrieved AS r
                     WHERE r.slice = 'recalled_history' AND r.memory_type = 'conversation'
                     ORDER BY r.fused DESC, r.id
                     LIMIT (in_limits ->> 'recalled_history')::integer)) AS a
    )
    SELECT coalesce(jsonb_agg(s.item), '[]'::jsonb) INTO l_sources
      FROM (SELECT e.item FROM enumerated AS e
            UNION ALL
            -- Each entry built in one piece (ctxasm.source_item's keys, then the figures): joining two built
            -- documents encodes the entry again.
            SELECT jsonb_build_object('ref', jsonb_build_array(r.memory_type, r.id, r.version), 'origin', 'retrieval',
                                      'slice', r.slice, 'lexical_rank', r.lexical_rank, 'vector_rank', r.vector_rank,
                                      'lexical_score', r.lexical_score, 'vector_distance', r.vector_distance,
                                      'fused', r.fused)
              FROM retrieved AS r
             -- The thread's tail is shown as turns; retrieval recalls the rest of the history.
             WHERE NOT EXISTS (SELECT 1 FROM enumerated AS e
                                WHERE e.memory_type = r.memory_type AND e.id = r.id AND e.version = r.version)
            UNION ALL
            SELECT jsonb_build_object('ref', jsonb_build_array('conversation', a.id, a.version), 'origin', 'adjacent',
                                      'slice', 'recalled_history', 'next_to', a.next_to)
              FROM adjacent AS a
             WHERE NOT EXISTS (SELECT 1 FROM enumerated AS e
                                WHERE e.memory_type = 'conversation' AND e.id = a.id AND e.version = a.version)) AS s;
    RETURN l_sources;
END;
$$;
--rollback DROP FUNCTION ctxasm.window_sources(varchar, varchar, varchar, varchar, timestamptz, public.vector, jsonb, integer, varchar[], text[], double precision[], double precision[], double precision[]);
