--liquibase formatted sql

--changeset ctxasm:pg-ctx-assembly-schema dbms:postgresql
CREATE SCHEMA ctx_assembly;
--rollback DROP SCHEMA ctx_assembly CASCADE;

--changeset ctxasm:pg-ctx-assembly-select-window dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_ASSEMBLY.select_window: one evaluation time, one snapshot (a STABLE function reads with the
--comment: snapshot of the calling statement), the selection rules in order, one JSON document back.
-- Earlier deployments had fewer parameters: drop those signatures so the call stays unambiguous.
DROP FUNCTION IF EXISTS ctx_assembly.select_window(varchar, varchar, varchar, varchar, timestamptz, text, jsonb);
DROP FUNCTION IF EXISTS ctx_assembly.select_window(varchar, varchar, varchar, varchar, timestamptz, text, jsonb,
                                                    varchar);
CREATE OR REPLACE FUNCTION ctx_assembly.select_window(
    in_user_id         varchar,
    in_agent_id        varchar,
    in_thread_id       varchar,
    in_intent          varchar,
    in_evaluation_time timestamptz,
    in_question        text,
    in_scores          jsonb DEFAULT NULL,
    in_snapshot        varchar DEFAULT NULL,
    in_query_embedding varchar DEFAULT NULL,
    in_evidence        jsonb DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_selection_version constant varchar := 'context-selection-1';
    co_lexical_scorer    constant varchar := 'lexical-overlap-1';
    -- Retrieval: how many rows each retriever returns, and how many fused rows become evidence candidates.
    co_retrieval_depth   constant integer := 50;
    co_evidence_limit    constant integer := 20;
    co_max_question      constant integer := 8000;  -- characters; bounds the work one call can ask for
    l_tenant   varchar := ctxasm.require_scope(in_user_id, in_agent_id);
    l_budget   record;
    l_weights  jsonb;
    l_field    text;
    l_require  boolean;
    l_snapshot pg_snapshot;
    l_result   jsonb;
BEGIN
    IF in_question IS NULL OR btrim(in_question) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'CX113', MESSAGE = 'invalid_question: the question must not be empty';
    END IF;
    IF length(in_question) > co_max_question THEN
        RAISE EXCEPTION USING ERRCODE = 'CX113', MESSAGE = format(
            'invalid_question: in_question is %s characters long, at most %s are allowed', length(in_question),
            co_max_question);
    END IF;
    PERFORM ctxasm.require_evaluation_time(in_evaluation_time);
    IF in_evidence IS NOT NULL AND jsonb_typeof(in_evidence) <> 'array' THEN
        RAISE EXCEPTION USING ERRCODE = 'CX108',
            MESSAGE = 'invalid_argument: in_evidence must be a JSON array of retrieval items';
    END IF;
    IF in_scores IS NOT NULL AND jsonb_typeof(in_scores) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'CX108',
            MESSAGE = 'invalid_argument: in_scores must be a JSON object of "type:id:version" -> logit';
    END IF;

    -- Replay reads the rows exactly as they were visible in the recorded snapshot.
    IF in_snapshot IS NOT NULL THEN
        BEGIN
            l_snapshot := in_snapshot::pg_snapshot;
        EXCEPTION WHEN data_exception THEN
            RAISE EXCEPTION USING ERRCODE = 'CX107', MESSAGE = format(
                'invalid_snapshot: %s is not a snapshot from capture_snapshot', ctxasm.quoted(in_snapshot));
        END;
    END IF;

    -- Step: budget. The narrowest context_budget guideline in effect for this scope at the evaluation time.
    SELECT r.memory_type, r.id, r.version, r.content_json INTO l_budget
      FROM ctxasm.memory_rows(l_snapshot) AS r
     WHERE r.memory_type = 'guideline' AND r.key_name = 'context_budget'
       AND (r.user_id IS NULL OR r.user_id = in_user_id)
       AND (r.agent_id IS NULL OR r.agent_id = in_agent_id)
       AND (r.thread_id IS NULL OR r.thread_id = in_thread_id)
       AND r.deleted_at IS NULL AND r.valid_from <= in_evaluation_time
       AND (r.valid_until IS NULL OR r.valid_until > in_evaluation_time)
     ORDER BY (r.user_id IS NOT NULL)::int + (r.agent_id IS NOT NULL)::int + (r.thread_id IS NOT NULL)::int DESC,
              r.valid_from DESC, r.id
     LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'CX111', MESSAGE = format(
            'budget_missing: no context_budget guideline is in effect for agent %s at %s',
            ctxasm.quoted(in_agent_id), in_evaluation_time);
    END IF;
    -- The database checks only the budget fields it uses itself; the Python layer validates the rest.
    IF jsonb_typeof(l_budget.content_json) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'CX112', MESSAGE = format(
            'invalid_budget: guideline %s version %s: content_json must be a JSON object', l_budget.id, l_budget.version);
    END IF;
    l_weights := l_budget.content_json -> 'weights';
    FOREACH l_field IN ARRAY ARRAY['rerank', 'confidence', 'recency'] LOOP
        IF jsonb_typeof(l_weights -> l_field) IS DISTINCT FROM 'number' OR (l_weights ->> l_field)::numeric < 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'CX112', MESSAGE = format(
                'invalid_budget: guideline %s version %s: weights.%s must be a number >= 0',
                l_budget.id, l_budget.version, l_field);
        END IF;
    END LOOP;
    IF jsonb_typeof(l_budget.content_json -> 'recency_days') IS DISTINCT FROM 'number'
       OR (l_budget.content_json ->> 'recency_days')::numeric <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'CX112', MESSAGE = format(
            'invalid_budget: guideline %s version %s: recency_days must be a number > 0', l_budget.id, l_budget.version);
    END IF;
    IF jsonb_typeof(l_budget.content_json -> 'shares') IS DISTINCT FROM 'object'
       OR NOT (l_budget.content_json -> 'shares') ? in_intent THEN
        RAISE EXCEPTION USING ERRCODE = 'CX110', MESSAGE = format(
            'unknown_intent: %s is not one of the intents of budget %s version %s (%s)',
            ctxasm.quoted(in_intent), l_budget.id, l_budget.version,
            coalesce((SELECT string_agg(k, ', ' ORDER BY k)
                        FROM jsonb_object_keys(CASE WHEN jsonb_typeof(l_budget.content_json -> 'shares') = 'object'
                                                    THEN l_budget.content_json -> 'shares' END) AS k), 'none'));
    END IF;
    IF jsonb_typeof(l_budget.content_json -> 'require_current_facts') = 'boolean' THEN
        l_require := (l_budget.content_json ->> 'require_current_facts')::boolean;
    ELSIF l_budget.content_json ? 'require_current_facts' THEN
        RAISE EXCEPTION USING ERRCODE = 'CX112', MESSAGE = format(
            'invalid_budget: guideline %s version %s: require_current_facts must be true or false',
            l_budget.id, l_budget.version);
    ELSE
        l_require := TRUE;
    END IF;

    WITH
    -- Step: retrieval. Evidence candidates are a bounded set: hybrid retrieval on the live tables, or, on
    -- replay, exactly the items the manifest recorded.
    retrieved AS (
        SELECT e.memory_type, e.id, e.version, e.lexical_rank, e.vector_rank, e.fused
          FROM ctxasm.retrieve_evidence(in_user_id, in_agent_id, in_thread_id, in_evaluation_time, in_question,
                                        in_query_embedding::public.vector, co_retrieval_depth,
                                        co_evidence_limit) AS e
         WHERE in_evidence IS NULL
        UNION ALL
        SELECT x.item -> 'ref' ->> 0, x.item -> 'ref' ->> 1, (x.item -> 'ref' ->> 2)::integer,
               (x.item ->> 'lexical_rank')::bigint, (x.item ->> 'vector_rank')::bigint, (x.item ->> 'fused')::numeric
          FROM jsonb_array_elements(in_evidence) AS x(item)
         WHERE in_evidence IS NOT NULL
    ),
    -- Step: scope. Other tenants are invisible (RLS); user, agent and thread must match or be NULL (wider).
    -- A user's turns in other threads are recalled history; events (manifests, tool calls) are not memory.
    step_scope AS (
        SELECT r.*,
               (r.user_id IS NOT NULL)::int + (r.agent_id IS NOT NULL)::int + (r.thread_id IS NOT NULL)::int
                   AS scope_depth,
               ctxasm.authority(r.memory_type) AS authority,
               CASE r.memory_type
                   WHEN 'guideline' THEN 'guidelines' WHEN 'persona' THEN 'persona' WHEN 'toolbox' THEN 'tools'
                   WHEN 'entity' THEN 'durable_facts' WHEN 'workflow' THEN 'durable_facts'
                   WHEN 'kb_document' THEN 'evidence' WHEN 'kb_chunk' THEN 'evidence'
                   WHEN 'summary' THEN 'recalled_history'
                   WHEN 'conversation' THEN CASE WHEN r.thread_id = in_thread_id THEN 'volatile_tail'
                                                 ELSE 'recalled_history' END
               END AS slice
          FROM ctxasm.memory_rows(l_snapshot) AS r
         WHERE (r.user_id IS NULL OR r.user_id = in_user_id)
           AND (r.agent_id IS NULL OR r.agent_id = in_agent_id)
           AND (r.thread_id IS NULL OR r.thread_id = in_thread_id
                OR (r.memory_type = 'conversation' AND r.user_id = in_user_id))
           AND (r.memory_type <> 'conversation' OR r.event_type = 'message')
           AND (r.memory_type NOT IN ('kb_document', 'kb_chunk')
                OR EXISTS (SELECT 1 FROM retrieved x WHERE x.memory_type = r.memory_type AND x.id = r.id))
           AND NOT (r.memory_type = 'guideline' AND r.key_name = 'context_budget')
    ),
    -- Step: lifecycle, at the one evaluation time. NULL reason = in effect.
    step_lifecycle AS (
        SELECT s.*,
               CASE WHEN s.status = 'erased' THEN 'erased'
                    WHEN s.deleted_at IS NOT NULL THEN 'deleted'
                    WHEN s.valid_from > in_evaluation_time THEN 'not_yet_effective'
                    WHEN s.valid_until IS NOT NULL AND s.valid_until <= in_evaluation_time THEN
                        CASE WHEN s.status = 'superseded' THEN 'superseded' ELSE 'expired' END
               END AS lifecycle_reason
          FROM step_scope s
    ),
    effective AS (
        SELECT l.*, ctxasm.normalized_text(l.content) AS norm_text,
               ctxasm.claim_key(l.subject, l.predicate, l.content_json) AS claim_key
          FROM step_lifecycle l
         WHERE l.lifecycle_reason IS NULL
    ),
    -- Fixed slices: per (type, key) the narrowest scope wins; the rest are excluded as conflicts.
    fixed_ranked AS (
        SELECT e.*, row_number() OVER (
                   PARTITION BY e.memory_type, e.key_name
                   ORDER BY e.scope_depth DESC, e.valid_from DESC, e.id) AS key_rank
          FROM effective e
         WHERE e.slice IN ('guidelines', 'persona', 'tools')
    ),
    dynamic AS (
        SELECT e.* FROM effective e WHERE e.slice NOT IN ('guidelines', 'persona', 'tools')
    ),
    -- Step: dedup. Identical normalized text keeps the most authoritative copy, where claim identities agree.
    dedup_keeper AS (
        SELECT DISTINCT ON (d.norm_text) d.norm_text, d.memory_type, d.id, d.version, d.claim_key
          FROM dynamic d
         ORDER BY d.norm_text, d.authority, d.scope_depth DESC, d.valid_from DESC, d.table_name, d.id
    ),
    step_dedup AS (
        SELECT d.*,
               CASE WHEN (d.memory_type, d.id, d.version) <> (k.memory_type, k.id, k.version)
                         AND (d.claim_key IS NULL OR k.claim_key IS NULL OR d.claim_key = k.claim_key)
                    THEN jsonb_build_array(k.memory_type, k.id, k.version) END AS duplicate_of
          FROM dynamic d JOIN dedup_keeper k ON k.norm_text = d.norm_text
    ),
    -- Step: conflicts. Within a claim, canonical facts beat derived claims and the narrower scope wins.
    step_conflict AS (
        SELECT d.*,
               CASE WHEN d.claim_key IS NOT NULL AND row_number() OVER (
                        PARTITION BY d.claim_key
                        ORDER BY d.authority, d.scope_depth DESC, d.valid_from DESC, d.table_name, d.id) > 1
                    THEN first_value(jsonb_build_array(d.memory_type, d.id, d.version)) OVER (
                        PARTITION BY d.claim_key
                        ORDER BY d.authority, d.scope_depth DESC, d.valid_from DESC, d.table_name, d.id)
               END AS beaten_by
          FROM step_dedup d
         WHERE d.duplicate_of IS NULL
    ),
    survivors AS (
        SELECT c.* FROM step_conflict c WHERE c.beaten_by IS NULL
    ),
    -- History that cites a version no longer in effect stays, labelled, pointing at the current version.
    annotations AS (
        SELECT s.memory_type, s.id, s.version,
               jsonb_agg(jsonb_build_object(
                   'source', jsonb_build_array(src.memory_type, src.id, src.version),
                   'current', CASE WHEN cur.id IS NOT NULL
                                   THEN jsonb_build_array(cur.memory_type, cur.id, cur.version) END,
                   'current_content', cur.content)
                   ORDER BY src.memory_type, src.id, src.version) AS notes
          FROM survivors s
          CROSS JOIN LATERAL jsonb_array_elements(s.source_refs) AS ref(value)
          JOIN step_lifecycle src
            ON src.memory_type = ref.value ->> 'type' AND src.id = ref.value ->> 'id'
           AND src.version = (ref.value ->> 'version')::integer AND src.lifecycle_reason IS NOT NULL
          LEFT JOIN survivors cur ON cur.memory_type = src.memory_type AND cur.id = src.id
         WHERE s.memory_type IN ('summary', 'conversation')
         GROUP BY s.memory_type, s.id, s.version
    ),
    required_refs AS (
        SELECT DISTINCT note -> 'current' AS ref
          FROM annotations a CROSS JOIN LATERAL jsonb_array_elements(a.notes) AS note
         WHERE l_require AND note -> 'current' <> 'null'::jsonb
    ),
    -- Step: score. priority = w_rerank * sigmoid(logit) + w_confidence * confidence + w_recency * recency.
    step_score AS (
        SELECT s.*, sc.logit,
               round(1 / (1 + exp(-sc.logit)), 6) AS rerank,
               round(coalesce(s.confidence, 0.5), 6) AS confidence_score,
               round(greatest(0, 1 - extract(epoch FROM in_evaluation_time - s.valid_from) / 86400.0
                                   / (l_budget.content_json ->> 'recency_days')::numeric), 6) AS recency
          FROM survivors s
          CROSS JOIN LATERAL (
              SELECT coalesce((in_scores ->> (s.memory_type || ':' || s.id || ':' || s.version))::numeric,
                              ctxasm.lexical_logit(in_question, s.content)) AS logit
          ) AS sc
    ),
    prioritized AS (
        SELECT p.*,
               round((l_weights ->> 'rerank')::numeric * p.rerank
                     + (l_weights ->> 'confidence')::numeric * p.confidence_score
                     + (l_weights ->> 'recency')::numeric * p.recency, 6) AS priority
          FROM step_score p
    ),
    -- Step: tie-break. Priority desc, valid_from desc, source table, row id; the tail keeps the latest turns.
    ordered AS (
        SELECT p.*, row_number() OVER (
                   PARTITION BY p.slice
                   ORDER BY CASE WHEN p.slice = 'volatile_tail' THEN p.turn_index END DESC NULLS LAST,
                            CASE WHEN p.slice <> 'volatile_tail' THEN p.priority END DESC,
                            p.valid_from DESC, p.table_name, p.id, p.version) AS slice_rank
          FROM prioritized p
    ),
    compression AS (
        SELECT DISTINCT ON (c.source_type, c.source_id, c.source_version)
               c.source_type, c.source_id, c.source_version, c.content, c.source_hash, c.id, c.version,
               c.content_tokens
          FROM ctxasm.compressions(l_snapshot) AS c
         WHERE c.status = 'active' AND c.deleted_at IS NULL
         ORDER BY c.source_type, c.source_id, c.source_version, c.valid_from DESC, c.id
    ),
    candidates AS (
        SELECT o.slice, o.slice_rank, jsonb_build_object(
                   'ref', jsonb_build_array(o.memory_type, o.id, o.version),
                   'type', o.memory_type,
                   'slice', o.slice,
                   'status', CASE o.memory_type WHEN 'entity' THEN 'current' WHEN 'workflow' THEN 'current'
                                 WHEN 'summary' THEN 'historical' WHEN 'conversation' THEN 'unverified'
                                 ELSE 'evidence' END,
                   'required', EXISTS (SELECT 1 FROM required_refs q
                                        WHERE q.ref = jsonb_build_array(o.memory_type, o.id, o.version)),
                   'selection_rank', o.slice_rank,
                   'role', o.role,
                   'turn_index', o.turn_index,
                   'title', coalesce(o.title, o.subject, o.key_name),
                   'valid_from', o.valid_from,
                   'scores', jsonb_build_object('rerank_logit', o.logit, 'rerank', o.rerank,
                                                'confidence', o.confidence_score, 'recency', o.recency,
                                                'priority', o.priority)
                             || CASE WHEN rt.id IS NOT NULL THEN jsonb_build_object(
                                    'lexical_rank', rt.lexical_rank, 'vector_rank', rt.vector_rank,
                                    'fused', rt.fused) ELSE '{}'::jsonb END,
                   'tiers', jsonb_build_object(
                       'full', o.content,
                       'summary', CASE WHEN cm.source_hash = encode(sha256(convert_to(o.content, 'UTF8')), 'hex')
                                       THEN cm.content END,
                       'pointer', ctxasm.pointer_line(o.content)),
                   'summary_ref', CASE WHEN cm.source_hash = encode(sha256(convert_to(o.content, 'UTF8')), 'hex')
                                       THEN jsonb_build_array('compression', cm.id, cm.version) END,
                   -- Stored o200k_base counts of the full and summary texts (NULL: the fitter counts them).
                   'content_tokens', tk.content_tokens,
                   'summary_tokens', CASE WHEN cm.source_hash = encode(sha256(convert_to(o.content, 'UTF8')), 'hex')
                                          THEN cm.content_tokens END,
                   'annotations', coalesce(a.notes, '[]'::jsonb)) AS candidate
          FROM ordered o
          LEFT JOIN annotations a ON a.memory_type = o.memory_type AND a.id = o.id AND a.version = o.version
          LEFT JOIN retrieved rt ON rt.memory_type = o.memory_type AND rt.id = o.id AND rt.version = o.version
          LEFT JOIN compression cm
            ON cm.source_type = o.memory_type AND cm.source_id = o.id AND cm.source_version = o.version
          -- The row version's stored token count, by primary key (the view memory_row does not carry it).
          LEFT JOIN LATERAL (
                SELECT t.content_tokens FROM ctxasm.entity_memory AS t
                 WHERE o.memory_type = 'entity' AND t.tenant_id = l_tenant AND t.id = o.id AND t.version = o.version
                UNION ALL
                SELECT t.content_tokens FROM ctxasm.workflow_memory AS t
                 WHERE o.memory_type = 'workflow' AND t.tenant_id = l_tenant AND t.id = o.id AND t.version = o.version
                UNION ALL
                SELECT t.content_tokens FROM ctxasm.knowledge_base_document AS t
                 WHERE o.memory_type = 'kb_document' AND t.tenant_id = l_tenant AND t.id = o.id AND t.version = o.version
                UNION ALL
                SELECT t.content_tokens FROM ctxasm.knowledge_base_chunk AS t
                 WHERE o.memory_type = 'kb_chunk' AND t.tenant_id = l_tenant AND t.id = o.id AND t.version = o.version
                UNION ALL
                SELECT t.content_tokens FROM ctxasm.conversation_memory AS t
                 WHERE o.memory_type = 'conversation' AND t.tenant_id = l_tenant AND t.id = o.id AND t.version = o.version
                UNION ALL
                SELECT t.content_tokens FROM ctxasm.summarization_memory AS t
                 WHERE o.memory_type = 'summary' AND t.tenant_id = l_tenant AND t.id = o.id AND t.version = o.version
                 LIMIT 1
          ) AS tk ON TRUE
    ),
    fixed AS (
        SELECT jsonb_agg(jsonb_build_object(
                   'ref', jsonb_build_array(f.memory_type, f.id, f.version),
                   'type', f.memory_type, 'slice', f.slice, 'key', f.key_name,
                   'content', f.content, 'extra', f.extra)
                   ORDER BY CASE f.slice WHEN 'guidelines' THEN 1 WHEN 'persona' THEN 2 ELSE 3 END,
                            f.scope_depth, f.key_name, f.id) AS items
          FROM fixed_ranked f
         WHERE f.key_rank = 1
    ),
    excluded AS (
        SELECT jsonb_agg(x.item ORDER BY x.item ->> 'rule', x.item -> 'ref') AS items
          FROM (
              SELECT jsonb_build_object('ref', jsonb_build_array(l.memory_type, l.id, l.version),
                                        'rule', 'lifecycle', 'detail', l.lifecycle_reason) AS item
                FROM step_lifecycle l WHERE l.lifecycle_reason IS NOT NULL
              UNION ALL
              SELECT jsonb_build_object('ref', jsonb_build_array(f.memory_type, f.id, f.version),
                                        'rule', 'conflict', 'detail', 'a narrower ' || f.memory_type || ' with key '
                                        || f.key_name || ' is in effect')
                FROM fixed_ranked f WHERE f.key_rank > 1
              UNION ALL
              SELECT jsonb_build_object('ref', jsonb_build_array(d.memory_type, d.id, d.version),
                                        'rule', 'dedup', 'kept', d.duplicate_of)
                FROM step_dedup d WHERE d.duplicate_of IS NOT NULL
              UNION ALL
              SELECT jsonb_build_object('ref', jsonb_build_array(c.memory_type, c.id, c.version),
                                        'rule', 'conflict', 'kept', c.beaten_by)
                FROM step_conflict c WHERE c.beaten_by IS NOT NULL
          ) AS x
    )
    SELECT jsonb_build_object(
               'engine', 'postgresql',
               'snapshot', coalesce(in_snapshot, pg_current_snapshot()::text),
               'tenant_id', l_tenant,
               'evaluation_time', in_evaluation_time,
               'selection_version', co_selection_version,
               'scorer', CASE WHEN in_scores IS NULL THEN co_lexical_scorer ELSE 'external' END,
               'budget', jsonb_build_object('ref', jsonb_build_array('guideline', l_budget.id, l_budget.version),
                                            'content_json', l_budget.content_json),
               'fixed', coalesce((SELECT items FROM fixed), '[]'::jsonb),
               'candidates', coalesce((SELECT jsonb_agg(c.candidate ORDER BY c.slice, c.slice_rank)
                                         FROM candidates c), '[]'::jsonb),
               'required_refs', coalesce((SELECT jsonb_agg(q.ref ORDER BY q.ref) FROM required_refs q), '[]'::jsonb),
               'retrieval', jsonb_build_object(
                   'method', CASE WHEN in_evidence IS NOT NULL THEN 'recorded'
                                  WHEN in_query_embedding IS NULL THEN 'lexical'
                                  ELSE 'hybrid-rrf-60' END,
                   'depth', co_retrieval_depth, 'limit', co_evidence_limit,
                   'items', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                          'ref', jsonb_build_array(x.memory_type, x.id, x.version),
                                          'lexical_rank', x.lexical_rank, 'vector_rank', x.vector_rank,
                                          'fused', x.fused)
                                          ORDER BY x.fused DESC, x.memory_type, x.id, x.version)
                                        FROM retrieved x), '[]'::jsonb)),
               'excluded', coalesce((SELECT items FROM excluded), '[]'::jsonb))
      INTO l_result;
    RETURN l_result;
END;
$$;
--rollback DROP FUNCTION ctx_assembly.select_window(varchar, varchar, varchar, varchar, timestamptz, text, jsonb, varchar, varchar, jsonb);

--changeset ctxasm:pg-ctx-assembly-record-manifest dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_ASSEMBLY.record_manifest: the context_manifest event in conversation_memory plus one
--comment: context_source_ref row per dependency, in the caller's transaction; returns the manifest id
CREATE OR REPLACE FUNCTION ctx_assembly.record_manifest(in_manifest jsonb) RETURNS varchar
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := ctxasm.require_scope(in_manifest -> 'scope' ->> 'user_id', in_manifest -> 'scope' ->> 'agent_id');
    l_id     varchar := 'manifest_' || replace(gen_random_uuid()::text, '-', '');
    l_field  text;
    l_ref    record;
    l_count  integer := 0;
BEGIN
    IF in_manifest IS NULL OR jsonb_typeof(in_manifest) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'CX114', MESSAGE = 'invalid_manifest: the manifest must be a JSON object';
    END IF;
    FOREACH l_field IN ARRAY ARRAY['memories', 'excluded', 'required_refs'] LOOP
        IF jsonb_typeof(in_manifest -> l_field) IS DISTINCT FROM 'array' THEN
            RAISE EXCEPTION USING ERRCODE = 'CX114',
                MESSAGE = format('invalid_manifest: %s must be an array', l_field);
        END IF;
    END LOOP;
    IF coalesce(in_manifest ->> 'request_hash', '') !~ '^[0-9a-f]{64}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'CX114',
            MESSAGE = 'invalid_manifest: request_hash must be 64 lower-case hex digits';
    END IF;
    IF jsonb_typeof(in_manifest -> 'budget_ref') IS DISTINCT FROM 'array'
       OR jsonb_array_length(in_manifest -> 'budget_ref') <> 3 THEN
        RAISE EXCEPTION USING ERRCODE = 'CX114', MESSAGE = 'invalid_manifest: budget_ref must be [type, id, version]';
    END IF;
    PERFORM ctxasm.insert_row_version('conversation', 'conversation_memory', l_tenant, 1, jsonb_build_object(
        'id', l_id,
        'user_id', in_manifest -> 'scope' ->> 'user_id',
        'agent_id', in_manifest -> 'scope' ->> 'agent_id',
        'thread_id', in_manifest -> 'scope' ->> 'thread_id',
        'role', 'event',
        'event_type', 'context_manifest',
        'content', format('context manifest: %s memories rendered, %s excluded, request %s',
                          jsonb_array_length(in_manifest -> 'memories'), jsonb_array_length(in_manifest -> 'excluded'),
                          in_manifest ->> 'request_hash'),
        'content_json', in_manifest));
    -- Every row the window depended on, so retention and erasure can follow the sources.
    FOR l_ref IN
        SELECT d.ref, d.relation FROM (
            SELECT m -> 'ref' AS ref, 'rendered' AS relation, 1 AS part, o AS ord
              FROM jsonb_array_elements(in_manifest -> 'memories') WITH ORDINALITY AS e(m, o)
            UNION ALL
            SELECT m -> 'summary_ref', 'compression', 2, o
              FROM jsonb_array_elements(in_manifest -> 'memories') WITH ORDINALITY AS e(m, o)
             WHERE jsonb_typeof(m -> 'summary_ref') = 'array'
            UNION ALL
            SELECT a -> 'source', 'annotation_source', 3, o * 1000 + p
              FROM jsonb_array_elements(in_manifest -> 'memories') WITH ORDINALITY AS e(m, o),
                   jsonb_array_elements(coalesce(m -> 'annotation_refs', '[]'::jsonb)) WITH ORDINALITY AS n(a, p)
            UNION ALL
            SELECT x -> 'ref', 'excluded', 4, o
              FROM jsonb_array_elements(in_manifest -> 'excluded') WITH ORDINALITY AS e(x, o)
            UNION ALL
            SELECT in_manifest -> 'budget_ref', 'budget', 5, 1
        ) AS d
        ORDER BY d.part, d.ord
    LOOP
        IF jsonb_typeof(l_ref.ref) IS DISTINCT FROM 'array' OR jsonb_array_length(l_ref.ref) <> 3 THEN
            RAISE EXCEPTION USING ERRCODE = 'CX114', MESSAGE = format(
                'invalid_manifest: a %s reference must be [type, id, version], not %s', l_ref.relation, l_ref.ref);
        END IF;
        l_count := l_count + 1;
        PERFORM ctxasm.insert_row_version('source_ref', 'context_source_ref', l_tenant, 1, jsonb_build_object(
            'id', l_id || ':' || l_count,
            'user_id', in_manifest -> 'scope' ->> 'user_id',
            'agent_id', in_manifest -> 'scope' ->> 'agent_id',
            'thread_id', in_manifest -> 'scope' ->> 'thread_id',
            'derived_type', 'manifest', 'derived_id', l_id, 'derived_version', 1,
            'source_type', l_ref.ref ->> 0, 'source_id', l_ref.ref ->> 1,
            'source_version', (l_ref.ref ->> 2)::integer, 'relation', l_ref.relation,
            'content', format('manifest %s %s %s:%s@%s', l_id, l_ref.relation,
                              l_ref.ref ->> 0, l_ref.ref ->> 1, l_ref.ref ->> 2)));
    END LOOP;
    RETURN l_id;
END;
$$;
--rollback DROP FUNCTION ctx_assembly.record_manifest(jsonb);

--changeset ctxasm:pg-ctx-assembly-read-manifest dbms:postgresql runOnChange:true splitStatements:false
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

--changeset ctxasm:pg-ctx-assembly-latest-manifest-id dbms:postgresql runOnChange:true splitStatements:false
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
