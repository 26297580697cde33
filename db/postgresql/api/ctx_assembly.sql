--liquibase formatted sql logicalFilePath:db/packages/postgresql/0050_ctx_assembly.sql

--changeset ctxasm:pg-ctx-assembly-schema dbms:postgresql
CREATE SCHEMA ctx_assembly;
--rollback DROP SCHEMA ctx_assembly CASCADE;

--changeset ctxasm:pg-ctx-assembly-selection-version dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_ASSEMBLY.selection_version: the version of the selection rules this deployment runs; replay
--comment: compares it with the manifest's before it reads anything. Generated (contract/selection.toml): a
--comment: digest of this engine's selection code, so a change of that code cannot keep the old version.
CREATE OR REPLACE FUNCTION ctx_assembly.selection_version() RETURNS varchar
LANGUAGE sql IMMUTABLE AS $$
    SELECT 'selection-7facaf415a22'::varchar
$$;
--rollback DROP FUNCTION ctx_assembly.selection_version();

--changeset ctxasm:pg-ctx-assembly-select-window dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_ASSEMBLY.select_window: one evaluation time, one snapshot (a STABLE function reads with the
--comment: snapshot of the calling statement), a bounded list of sources, the selection rules in order, one
--comment: JSON document back.
-- Earlier deployments had other parameters: drop those signatures so the call stays unambiguous.
DROP FUNCTION IF EXISTS ctx_assembly.select_window(varchar, varchar, varchar, varchar, timestamptz, text, jsonb);
DROP FUNCTION IF EXISTS ctx_assembly.select_window(varchar, varchar, varchar, varchar, timestamptz, text, jsonb,
                                                    varchar);
DROP FUNCTION IF EXISTS ctx_assembly.select_window(varchar, varchar, varchar, varchar, timestamptz, text, jsonb,
                                                    varchar, varchar, jsonb);
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
    in_sources         jsonb DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off SET enable_seqscan = on SET enable_indexscan = on SET enable_bitmapscan = on
SET enable_nestloop = on SET enable_hashjoin = on SET enable_mergejoin = on SET enable_sort = on
SET enable_partition_pruning = on SET work_mem = '16MB'
AS $$
DECLARE
    co_hybrid_scorer   constant varchar := 'hybrid-calibrated-2';
    co_max_question    constant integer := 8000;  -- characters; bounds the work one call can ask for
    co_max_replay_items constant integer := 10000;  -- entries of in_sources and of in_scores
    -- Retrieval: rows each retriever ranks at least, and how many estimated rows the lexical probe may visit.
    co_retrieval_depth constant integer := 50;
    co_probe_rows      constant integer := 500;
    -- How far below its thread neighbour's relevance a recalled turn may fall (logits; measured on the
    -- conversation set: docs/conversation-eval.md).
    co_adjacent_margin constant numeric := 2.5;
    -- A recalled turn gains this share of its thread's best relevance (logits): a conversation that is about
    -- the question lifts its other turns over scattered matches elsewhere (docs/assembly.md, "Relevance").
    co_thread_weight   constant numeric := 0.3;
    -- Confidence and recency break near-ties of relevance: their weights count at this share, and recency's
    -- in full only when the question asks about the present (ctxasm.asks_about_present).
    co_tie_share       constant numeric := 0.005;
    -- Durable facts are enumerated while the scope holds at most this many row versions of them.
    co_facts_enumerated constant integer := 100;
    -- A slice's candidate limit by default: 1.25 times the records of 25 tokens (a recalled turn with its line,
    -- the smallest record) its share would hold, 10..1000, so a large budget can fill.
    co_tokens_per_candidate constant integer := 25;
    co_min_candidates  constant integer := 10;
    co_max_candidates  constant integer := 1000;
    co_dynamic_slices  constant varchar[] := ARRAY['durable_facts', 'evidence', 'recalled_history', 'volatile_tail'];
    l_tenant    varchar := ctxasm.require_scope(in_user_id, in_agent_id);
    l_budget    record;
    l_candidate record;
    l_budgets   integer;
    l_weights   jsonb;
    l_field     text;
    l_require   boolean;
    l_snapshot  pg_snapshot;
    l_embedding public.vector;
    l_limits    jsonb := '{}';
    l_available numeric;
    l_slice     text;
    l_limit     integer;
    l_sources   jsonb;
    l_types     varchar[];
    l_idf       double precision[];
    l_lexemes   text[];
    l_df        double precision[];
    l_rows      double precision[];
    l_facts_enumerated boolean;
    l_present   boolean := ctxasm.asks_about_present(in_question);
    l_result    jsonb;
BEGIN
    IF in_question IS NULL OR btrim(in_question) = '' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_question'),
            MESSAGE = 'invalid_question: the question must not be empty';
    END IF;
    IF length(in_question) > co_max_question THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_question'), MESSAGE = format(
            'invalid_question: in_question is %s characters long, at most %s are allowed', length(in_question),
            co_max_question);
    END IF;
    PERFORM ctxasm.require_evaluation_time(in_evaluation_time);
    IF in_sources IS NOT NULL AND jsonb_typeof(in_sources) <> 'array' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'),
            MESSAGE = 'invalid_argument: in_sources must be a JSON array of source items';
    END IF;
    IF in_scores IS NOT NULL AND jsonb_typeof(in_scores) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'),
            MESSAGE = 'invalid_argument: in_scores must be a JSON object of "type:id:version" -> logit';
    END IF;
    IF jsonb_array_length(in_sources) > co_max_replay_items
       OR (SELECT count(*) FROM jsonb_object_keys(in_scores)) > co_max_replay_items THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'), MESSAGE = format(
            'invalid_argument: in_sources and in_scores may hold at most %s entries each', co_max_replay_items);
    END IF;
    IF in_query_embedding IS NOT NULL THEN
        BEGIN
            l_embedding := in_query_embedding::public.vector(384);
        EXCEPTION WHEN data_exception OR invalid_text_representation THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'),
                MESSAGE = 'invalid_argument: in_query_embedding must be a vector of 384 numbers, ''[x,y,...]''';
        END;
    END IF;

    -- Replay reads the rows exactly as they were visible in the recorded snapshot.
    IF in_snapshot IS NOT NULL THEN
        BEGIN
            l_snapshot := in_snapshot::pg_snapshot;
        EXCEPTION WHEN data_exception THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_snapshot'), MESSAGE = format(
                'invalid_snapshot: %s is not a snapshot from capture_snapshot', ctxasm.quoted(in_snapshot));
        END;
    END IF;

    -- Step: budget. The narrowest context_budget guideline in effect for this scope at the evaluation time.
    -- Two of the winning scope in effect at once would be picked by an arbitrary tie-break: refused, naming both
    -- (the loader refuses such a file; rows written by other paths can still make the pair).
    l_budgets := 0;
    FOR l_candidate IN
    SELECT g.id, g.version, g.content_json, g.user_id, g.agent_id, g.thread_id
      FROM (SELECT r.id, r.version, r.user_id, r.agent_id, r.thread_id, r.valid_from, r.valid_until, r.deleted_at,
                   r.content_json, r.guideline_key
              FROM ctxasm.guideline_memory AS r
             WHERE r.tenant_id = l_tenant
               AND (l_snapshot IS NULL OR pg_visible_in_snapshot(r.created_xid, l_snapshot))
            UNION ALL
            SELECT h.id, h.version, h.user_id, h.agent_id, h.thread_id, h.valid_from, h.valid_until, h.deleted_at,
                   h.content_json, h.guideline_key
              FROM ctxasm.guideline_memory_history AS h
             -- The snapshot through a subquery: NULL (live) must not fold the tenant predicate away, or every
             -- tenant's history partition is opened (see ctxasm.source_rows).
             WHERE (SELECT l_snapshot) IS NOT NULL AND h.tenant_id = l_tenant
               AND pg_visible_in_snapshot(h.created_xid, (SELECT l_snapshot))
               AND NOT pg_visible_in_snapshot(h.retired_xid, (SELECT l_snapshot))) AS g
     WHERE g.guideline_key = 'context_budget'
       AND (g.user_id IS NULL OR g.user_id = in_user_id)
       AND (g.agent_id IS NULL OR g.agent_id = in_agent_id)
       AND (g.thread_id IS NULL OR g.thread_id = in_thread_id)
       AND g.deleted_at IS NULL AND g.valid_from <= in_evaluation_time
       AND (g.valid_until IS NULL OR g.valid_until > in_evaluation_time)
     ORDER BY ctxasm.scope_level(g.user_id, g.agent_id, g.thread_id) DESC, g.valid_from DESC, g.id
     LIMIT 2
    LOOP
        l_budgets := l_budgets + 1;
        IF l_budgets = 1 THEN
            l_budget := l_candidate;
        ELSIF (l_candidate.user_id, l_candidate.agent_id, l_candidate.thread_id)
              IS NOT DISTINCT FROM (l_budget.user_id, l_budget.agent_id, l_budget.thread_id) THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
                'invalid_budget: two context_budget guidelines of one scope (%s) are in effect at once: '
                'guideline %s version %s and guideline %s version %s',
                coalesce(nullif(concat_ws(', ', 'user ' || l_budget.user_id, 'agent ' || l_budget.agent_id,
                                          'thread ' || l_budget.thread_id), ''), 'tenant-wide'),
                l_budget.id, l_budget.version, l_candidate.id, l_candidate.version);
        END IF;
    END LOOP;
    IF l_budgets = 0 THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('budget_missing'), MESSAGE = format(
            'budget_missing: no context_budget guideline is in effect for agent %s at %s',
            ctxasm.quoted(in_agent_id), in_evaluation_time);
    END IF;
    -- The database checks only the budget fields it uses itself; the Python layer validates the rest.
    IF jsonb_typeof(l_budget.content_json) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
            'invalid_budget: guideline %s version %s: content_json must be a JSON object', l_budget.id, l_budget.version);
    END IF;
    l_weights := l_budget.content_json -> 'weights';
    FOREACH l_field IN ARRAY ARRAY['rerank', 'confidence', 'recency'] LOOP
        IF jsonb_typeof(l_weights -> l_field) IS DISTINCT FROM 'number' OR (l_weights ->> l_field)::numeric < 0 THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
                'invalid_budget: guideline %s version %s: weights.%s must be a number >= 0',
                l_budget.id, l_budget.version, l_field);
        END IF;
    END LOOP;
    IF jsonb_typeof(l_budget.content_json -> 'recency_days') IS DISTINCT FROM 'number'
       OR (l_budget.content_json ->> 'recency_days')::numeric <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
            'invalid_budget: guideline %s version %s: recency_days must be a number > 0', l_budget.id, l_budget.version);
    END IF;
    IF jsonb_typeof(l_budget.content_json -> 'shares') IS DISTINCT FROM 'object'
       OR NOT (l_budget.content_json -> 'shares') ? in_intent THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('unknown_intent'), MESSAGE = format(
            'unknown_intent: %s is not one of the intents of budget %s version %s (%s)',
            ctxasm.quoted(in_intent), l_budget.id, l_budget.version,
            coalesce((SELECT string_agg(k, ', ' ORDER BY k)
                        FROM jsonb_object_keys(CASE WHEN jsonb_typeof(l_budget.content_json -> 'shares') = 'object'
                                                    THEN l_budget.content_json -> 'shares' END) AS k), 'none'));
    END IF;
    IF jsonb_typeof(l_budget.content_json -> 'require_current_facts') = 'boolean' THEN
        l_require := (l_budget.content_json ->> 'require_current_facts')::boolean;
    ELSIF l_budget.content_json ? 'require_current_facts' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
            'invalid_budget: guideline %s version %s: require_current_facts must be true or false',
            l_budget.id, l_budget.version);
    ELSE
        l_require := TRUE;
    END IF;

    -- Step: candidate limits. Each dynamic slice keeps at most this many candidates after scoring: the
    -- budget's candidate_limits, else enough for the slice's share of what the reserves leave.
    IF l_budget.content_json ? 'candidate_limits'
       AND jsonb_typeof(l_budget.content_json -> 'candidate_limits') IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
            'invalid_budget: guideline %s version %s: candidate_limits must be an object of slice -> count',
            l_budget.id, l_budget.version);
    END IF;
    FOR l_slice IN SELECT jsonb_object_keys(coalesce(l_budget.content_json -> 'candidate_limits', '{}')) LOOP
        IF NOT l_slice = ANY (co_dynamic_slices)
           OR jsonb_typeof(l_budget.content_json -> 'candidate_limits' -> l_slice) IS DISTINCT FROM 'number'
           -- A whole number, written with or without a zero fraction (5 or 5.0: JSON has one number type).
           OR (l_budget.content_json -> 'candidate_limits' ->> l_slice) !~ '^[0-9]{1,4}([.]0+)?$'
           OR (l_budget.content_json -> 'candidate_limits' ->> l_slice)::numeric::integer NOT BETWEEN 1 AND 1000 THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
                'invalid_budget: guideline %s version %s: candidate_limits.%s must be a whole number 1..1000 '
                'for one of the slices %s', l_budget.id, l_budget.version, l_slice,
                array_to_string(co_dynamic_slices, ', '));
        END IF;
    END LOOP;
    l_available := greatest(0, coalesce(CASE WHEN jsonb_typeof(l_budget.content_json -> 'usable_context') = 'number'
                                             THEN (l_budget.content_json ->> 'usable_context')::numeric END, 0)
                               - coalesce((SELECT sum(CASE WHEN jsonb_typeof(l_budget.content_json -> f) = 'number'
                                                           THEN (l_budget.content_json ->> f)::numeric END)
                                             FROM unnest(ARRAY['output_reserve', 'tool_reserve',
                                                               'request_overhead_reserve']) AS f), 0));
    FOREACH l_slice IN ARRAY co_dynamic_slices LOOP
        l_limit := coalesce(
            (l_budget.content_json -> 'candidate_limits' ->> l_slice)::numeric::integer,
            least(co_max_candidates, greatest(co_min_candidates, ceil(
                1.25 * l_available * coalesce(CASE WHEN jsonb_typeof(l_budget.content_json -> 'shares' -> in_intent
                                                                     -> l_slice) = 'number'
                                                  THEN (l_budget.content_json -> 'shares' -> in_intent ->> l_slice)
                                                       ::numeric END, 0)
                / co_tokens_per_candidate)::integer)));
        l_limits := l_limits || jsonb_build_object(l_slice, l_limit);
    END LOOP;

    -- The question's lexemes and their weights in this tenant: computed once, used by retrieval and scoring.
    SELECT array_agg(t.memory_type), array_agg(t.idf), array_agg(t.lexeme), array_agg(t.df), array_agg(t.row_count)
      INTO l_types, l_idf, l_lexemes, l_df, l_rows
      FROM ctxasm.question_terms(l_tenant, in_question) AS t;

    -- Step: sources. Live: what the window enumerates (fixed slices, the thread's tail, few durable facts),
    -- what retrieval finds for each retrieved slice, then what the recalled history cites and the claims of
    -- those citations. Replay: exactly the sources the manifest recorded.
    IF in_sources IS NULL THEN
        l_facts_enumerated := ctxasm.facts_enumerable(l_tenant, in_user_id, in_agent_id, in_thread_id,
                                                      co_facts_enumerated);
        WITH enumerated AS (
            SELECT e AS item
              FROM ctxasm.enumerated_sources(l_tenant, in_user_id, in_agent_id, in_thread_id,
                                             (l_limits ->> 'volatile_tail')::integer, l_facts_enumerated) AS e
        ),
        retrieved AS (
            SELECT x.slice, r.*
              FROM unnest(CASE WHEN l_facts_enumerated THEN ARRAY['evidence', 'recalled_history']
                               ELSE ARRAY['evidence', 'recalled_history', 'durable_facts'] END) AS x(slice)
              CROSS JOIN LATERAL ctxasm.retrieve(
                  l_tenant, x.slice, in_user_id, in_agent_id, in_thread_id, in_evaluation_time,
                  l_types, l_lexemes, l_idf,
                  ctxasm.probe_query(
                      (SELECT array_agg(t.lexeme) FROM unnest(l_types, l_lexemes) AS t(kind, lexeme)
                        WHERE t.kind = ANY (ctxasm.slice_types(x.slice))),
                      (SELECT array_agg(t.df) FROM unnest(l_types, l_df) AS t(kind, df)
                        WHERE t.kind = ANY (ctxasm.slice_types(x.slice))),
                      (SELECT max(t.row_count) FROM unnest(l_types, l_rows) AS t(kind, row_count)
                        WHERE t.kind = ANY (ctxasm.slice_types(x.slice))),
                      co_probe_rows),
                  l_embedding, greatest(co_retrieval_depth, (l_limits ->> x.slice)::integer),
                  2 * greatest(co_retrieval_depth, (l_limits ->> x.slice)::integer)) AS r
        ),
        -- The turns next to the best recalled turns (as many as the slice may keep), in their threads.
        adjacent AS (
            SELECT a.*
              FROM ctxasm.adjacent_turns(
                  l_tenant, in_user_id, in_agent_id, in_thread_id, in_evaluation_time,
                  ARRAY(SELECT r.id FROM retrieved AS r
                         WHERE r.slice = 'recalled_history' AND r.memory_type = 'conversation'
                         ORDER BY r.fused DESC, r.id
                         LIMIT (l_limits ->> 'recalled_history')::integer)) AS a
        )
        SELECT coalesce(jsonb_agg(s.item), '[]'::jsonb) INTO l_sources
          FROM (SELECT e.item FROM enumerated AS e
                UNION ALL
                SELECT ctxasm.source_item(r.memory_type, r.id, r.version, 'retrieval', r.slice)
                       || jsonb_build_object('lexical_rank', r.lexical_rank, 'vector_rank', r.vector_rank,
                                             'lexical_score', r.lexical_score, 'vector_distance', r.vector_distance,
                                             'fused', r.fused)
                  FROM retrieved AS r
                 -- The thread's tail is shown as turns; retrieval recalls the rest of the history.
                 WHERE NOT EXISTS (SELECT 1 FROM enumerated AS e WHERE e.item -> 'ref' = jsonb_build_array(
                                                                   r.memory_type, r.id, r.version))
                UNION ALL
                SELECT ctxasm.source_item('conversation', a.id, a.version, 'adjacent', 'recalled_history')
                       || jsonb_build_object('next_to', a.next_to)
                  FROM adjacent AS a
                 WHERE NOT EXISTS (SELECT 1 FROM enumerated AS e WHERE e.item -> 'ref' = jsonb_build_array(
                                                                   'conversation', a.id, a.version))) AS s;
        l_sources := l_sources || coalesce((
            SELECT jsonb_agg(c) FROM ctxasm.claim_sources(l_tenant, in_user_id, in_agent_id, in_thread_id, l_sources)
                                      AS c), '[]'::jsonb);
    ELSE
        l_sources := in_sources;
    END IF;

    WITH
    -- Step: scope. Other tenants are invisible (the tenant's partition, RLS); user, agent and thread must match
    -- or be NULL (wider); a user's turns in other threads are recalled history; events are not memory. Checked
    -- again here because replay takes its source list from the caller.
    step_scope AS (
        SELECT (x.memory).*, x.origin, x.source,
               ctxasm.scope_level((x.memory).user_id, (x.memory).agent_id, (x.memory).thread_id) AS scope_level,
               ctxasm.authority((x.memory).memory_type) AS authority,
               -- The thread's tail (conversation turns only) has its own slice; every other row competes for
               -- its type's.
               CASE WHEN x.origin = 'tail' THEN 'volatile_tail' ELSE CASE (x.memory).memory_type
                   -- generated: slice of type from contract/memory_types.toml; edit the catalogue, then regenerate
                   WHEN 'guideline' THEN 'guidelines' WHEN 'persona' THEN 'persona' WHEN 'toolbox' THEN 'tools'
                   WHEN 'entity' THEN 'durable_facts' WHEN 'workflow' THEN 'durable_facts'
                   WHEN 'kb_document' THEN 'evidence' WHEN 'kb_chunk' THEN 'evidence'
                   WHEN 'conversation' THEN 'recalled_history' WHEN 'summary' THEN 'recalled_history'
                   -- end generated: slice of type
               END END AS slice
          FROM ctxasm.source_rows(l_tenant, l_snapshot, l_sources) AS x
         WHERE ((x.memory).user_id IS NULL OR (x.memory).user_id = in_user_id)
           AND ((x.memory).agent_id IS NULL OR (x.memory).agent_id = in_agent_id)
           AND ((x.memory).thread_id IS NULL OR (x.memory).thread_id = in_thread_id
                OR ((x.memory).memory_type = 'conversation' AND (x.memory).user_id = in_user_id))
           AND ((x.memory).memory_type <> 'conversation' OR (x.memory).event_type = 'message')
           AND (x.memory).memory_type NOT IN ('compression', 'source_ref')
           AND NOT ((x.memory).memory_type = 'guideline' AND (x.memory).key_name = 'context_budget')
    ),
    -- Step: lifecycle, at the one evaluation time. NULL reason = in effect.
    step_lifecycle AS (
        SELECT s.*,
               CASE WHEN s.status = 'erased' THEN 'erased'
                    WHEN s.deleted_at IS NOT NULL THEN 'deleted'
                    WHEN s.valid_from > in_evaluation_time THEN 'not_yet_effective'
                    WHEN s.valid_until IS NOT NULL AND s.valid_until <= in_evaluation_time THEN
                        CASE WHEN s.status = 'superseded' THEN 'superseded' ELSE 'expired' END
               END AS lifecycle_reason,
               ctxasm.claim_key(s.subject, s.predicate, s.content_json) AS claim_key
          FROM step_scope AS s
    ),
    -- A row cited by history only competes when it is in effect; otherwise it is the annotation's source.
    effective AS (
        SELECT l.* FROM step_lifecycle AS l WHERE l.lifecycle_reason IS NULL
    ),
    -- Fixed slices: per (type, key) the narrowest scope wins; the rest are excluded as conflicts.
    fixed_ranked AS (
        SELECT e.*, row_number() OVER (
                   PARTITION BY e.memory_type, e.key_name
                   ORDER BY e.scope_level DESC, e.valid_from DESC, e.id) AS key_rank
          FROM effective AS e
         WHERE e.slice IN ('guidelines', 'persona', 'tools')
    ),
    dynamic AS (
        SELECT e.* FROM effective AS e WHERE e.slice NOT IN ('guidelines', 'persona', 'tools')
    ),
    -- Step: dedup. Identical normalized text keeps the most authoritative copy, where claim identities agree.
    step_dedup AS (
        SELECT d.*,
               CASE WHEN (d.memory_type, d.id, d.version) <> (d.keeper ->> 0, d.keeper ->> 1, (d.keeper ->> 2)::integer)
                         AND (d.claim_key IS NULL OR d.keeper_claim IS NULL OR d.claim_key = d.keeper_claim)
                    THEN d.keeper END AS duplicate_of
          FROM (SELECT y.*,
                       first_value(jsonb_build_array(y.memory_type, y.id, y.version)) OVER same_text AS keeper,
                       first_value(y.claim_key) OVER same_text AS keeper_claim
                  FROM dynamic AS y
                WINDOW same_text AS (PARTITION BY y.text_key
                                     ORDER BY y.authority, y.scope_level DESC, y.valid_from DESC, y.table_name, y.id))
                   AS d
    ),
    -- Step: conflicts. Within a claim, canonical facts beat derived claims and the narrower scope wins.
    step_conflict AS (
        SELECT d.*,
               CASE WHEN d.claim_key IS NOT NULL AND row_number() OVER claim_order > 1
                    THEN first_value(jsonb_build_array(d.memory_type, d.id, d.version)) OVER claim_order
               END AS beaten_by
          FROM step_dedup AS d
         WHERE d.duplicate_of IS NULL
        WINDOW claim_order AS (PARTITION BY d.claim_key
                               ORDER BY d.authority, d.scope_level DESC, d.valid_from DESC, d.table_name, d.id)
    ),
    survivors AS (
        SELECT c.* FROM step_conflict AS c WHERE c.beaten_by IS NULL
    ),
    -- History that cites a version no longer in effect stays, labelled, pointing at the claim's current winner
    -- (whatever its row id), or, for a row that makes no claim, at the current version of the same row.
    annotations AS (
        SELECT s.memory_type, s.id, s.version,
               jsonb_agg(jsonb_build_object(
                   'source', jsonb_build_array(src.memory_type, src.id, src.version),
                   'current', CASE WHEN cur.id IS NOT NULL
                                   THEN jsonb_build_array(cur.memory_type, cur.id, cur.version) END,
                   'current_content', cur.content)
                   ORDER BY src.memory_type, src.id, src.version) AS notes
          FROM survivors AS s
          CROSS JOIN LATERAL jsonb_array_elements(s.source_refs) AS ref(value)
          JOIN step_lifecycle AS src
            ON src.memory_type = ref.value ->> 'type' AND src.id = ref.value ->> 'id'
           AND src.version::text = ref.value ->> 'version' AND src.lifecycle_reason IS NOT NULL
          LEFT JOIN LATERAL (
              SELECT w.memory_type, w.id, w.version, w.content
                FROM survivors AS w
               WHERE w.memory_type NOT IN ('summary', 'conversation')
                 AND ((src.claim_key IS NOT NULL AND w.claim_key = src.claim_key)
                      OR (src.claim_key IS NULL AND w.memory_type = src.memory_type AND w.id = src.id))
               ORDER BY w.authority, w.scope_level DESC, w.valid_from DESC, w.table_name, w.id
               LIMIT 1) AS cur ON TRUE
         WHERE s.memory_type IN ('summary', 'conversation')
         GROUP BY s.memory_type, s.id, s.version
    ),
    required_refs AS (
        SELECT DISTINCT note -> 'current' AS ref
          FROM annotations AS a CROSS JOIN LATERAL jsonb_array_elements(a.notes) AS note
         WHERE l_require AND note -> 'current' <> 'null'::jsonb
    ),
    -- Step: score. Relevance is the reranker's logit when scores are given, the recorded logit on replay, or
    -- the hybrid scorer's (ctxasm.hybrid_logit) from the candidate's embedding similarity and its BM25 score
    -- within its slice. Each candidate's lexemes are read once; the slice figures are window aggregates.
    signals AS (
        SELECT v.*,
               CASE WHEN live.scoring THEN
                   m.matched * 2.2 / (1 + 1.2 * (0.25 + 0.75 * length(v.search_text)
                                                  / greatest(avg(length(v.search_text)) OVER by_slice, 1))) END
                   AS bm25_raw,
               CASE WHEN live.scoring AND l_embedding IS NOT NULL AND v.embedding IS NOT NULL
                    THEN 1 - (v.embedding OPERATOR(public.<=>) l_embedding) END AS similarity_raw
          FROM survivors AS v
          CROSS JOIN (SELECT in_scores IS NULL AND in_sources IS NULL AS scoring) AS live
          CROSS JOIN LATERAL (SELECT CASE WHEN live.scoring THEN tsvector_to_array(v.search_text) END AS lexemes
                               OFFSET 0) AS a
          LEFT JOIN LATERAL (
              SELECT coalesce(sum(t.idf), 0) AS matched
                FROM unnest(l_types, l_lexemes, l_idf) AS t(kind, lexeme, idf)
               WHERE v.slice IN ('durable_facts', 'evidence', 'recalled_history')
                 AND t.kind = v.memory_type AND t.lexeme = ANY (a.lexemes)
          ) AS m ON TRUE
        WINDOW by_slice AS (PARTITION BY v.slice)
    ),
    -- Replay (and the reranker's second pass) takes the hybrid figures the source list recorded.
    relevance AS (
        SELECT g.*,
               CASE WHEN in_scores IS NOT NULL
                    THEN (in_scores ->> (g.memory_type || ':' || g.id || ':' || g.version))::numeric
                    -- the recorded logit less its thread share, which step_score adds back
                    WHEN in_sources IS NOT NULL THEN (g.source ->> 'logit')::numeric
                         - coalesce(round(co_thread_weight * (g.source ->> 'thread_logit')::numeric, 6), 0)
                    WHEN g.slice IN ('durable_facts', 'evidence', 'recalled_history')
                    THEN ctxasm.hybrid_logit(g.similarity_raw, g.bm25_raw,
                                             max(g.bm25_raw) OVER (PARTITION BY g.slice)) END AS own_logit,
               CASE WHEN in_sources IS NOT NULL THEN (g.source ->> 'bm25')::numeric
                    ELSE round(g.bm25_raw::numeric, 6) END AS bm25,
               CASE WHEN in_sources IS NOT NULL THEN (g.source ->> 'similarity')::numeric
                    ELSE round(g.similarity_raw::numeric, 6) END AS similarity
          FROM signals AS g
    ),
    -- A recalled turn is worth at least its neighbour in the thread less co_adjacent_margin: an answer sits
    -- next to the question that matched. Live hybrid scoring only; a replay takes the figure it recorded (its
    -- recorded logit already includes it), a reranker's scores are taken as they are.
    adjacency AS (
        SELECT r.*,
               CASE WHEN in_scores IS NOT NULL THEN NULL
                    WHEN in_sources IS NOT NULL THEN (r.source ->> 'adjacent_logit')::numeric
                    WHEN r.slice = 'recalled_history' AND r.memory_type = 'conversation' THEN
                   greatest(CASE WHEN lag(r.turn_index) OVER thread_turns = r.turn_index - 1
                                 THEN lag(r.own_logit) OVER thread_turns END,
                            CASE WHEN lead(r.turn_index) OVER thread_turns = r.turn_index + 1
                                 THEN lead(r.own_logit) OVER thread_turns END) - co_adjacent_margin
               END AS adjacent_logit,
               -- The thread's best relevance among the recalled turns (live hybrid scoring; replay takes the
               -- recorded figure). An episode summary of a thread (summary_key 'thread:<thread_id>') stands for
               -- its turns and shares their thread's figure.
               CASE WHEN in_scores IS NOT NULL THEN NULL
                    WHEN in_sources IS NOT NULL THEN (r.source ->> 'thread_logit')::numeric
                    WHEN r.slice = 'recalled_history' AND (r.memory_type = 'conversation' OR r.thread_key IS NOT NULL)
                    THEN max(r.own_logit) FILTER (WHERE r.memory_type = 'conversation') OVER same_thread
               END AS thread_logit
          FROM (SELECT v.*,
                       CASE WHEN v.memory_type = 'conversation' THEN v.thread_id
                            WHEN v.memory_type = 'summary' AND v.key_name LIKE 'thread:%'
                            THEN substr(v.key_name, 8) END AS thread_key
                  FROM relevance AS v) AS r
        WINDOW thread_turns AS (PARTITION BY r.slice, r.memory_type, r.thread_id ORDER BY r.turn_index, r.id),
               same_thread AS (PARTITION BY r.slice, r.thread_key)
    ),
    step_score AS (
        SELECT x.*,
               CASE WHEN x.logit IS NULL THEN 0 ELSE round(1 / (1 + exp(-x.logit)), 6) END AS rerank,
               round(coalesce(x.confidence, 0.5), 6) AS confidence_score,
               round(greatest(0, 1 - extract(epoch FROM in_evaluation_time - x.valid_from) / 86400.0
                                   / (l_budget.content_json ->> 'recency_days')::numeric), 6) AS recency
          FROM (SELECT a.*,
                       CASE WHEN a.adjacent_logit > a.own_logit THEN a.adjacent_logit ELSE a.own_logit END
                       + coalesce(round(co_thread_weight * a.thread_logit, 6), 0) AS logit
                  FROM adjacency AS a) AS x
    ),
    step_priority AS (
        SELECT p.*,
               round((l_weights ->> 'rerank')::numeric * p.rerank
                     + co_tie_share * (l_weights ->> 'confidence')::numeric * p.confidence_score
                     + CASE WHEN l_present THEN 1 ELSE co_tie_share END
                       * (l_weights ->> 'recency')::numeric * p.recency, 6) AS priority,
               EXISTS (SELECT 1 FROM required_refs AS q
                        WHERE q.ref = jsonb_build_array(p.memory_type, p.id, p.version)) AS required
          FROM step_score AS p
    ),
    -- Step: tie-break. Priority desc, valid_from desc, source table, row id; the tail keeps the latest turns.
    step_tie_break AS (
        SELECT p.*, row_number() OVER (
                   PARTITION BY p.slice
                   ORDER BY CASE WHEN p.slice = 'volatile_tail' THEN p.turn_index END DESC NULLS LAST,
                            CASE WHEN p.slice <> 'volatile_tail' THEN p.priority END DESC,
                            p.valid_from DESC, p.table_name, p.id, p.version) AS slice_rank
          FROM step_priority AS p
    ),
    -- Step: limit. Each slice keeps its first candidate_limits[slice]; required ones are always kept.
    step_limit AS (
        SELECT o.*, o.slice_rank > (l_limits ->> o.slice)::integer AND NOT o.required AS cut
          FROM step_tie_break AS o
    ),
    candidates AS (
        SELECT o.slice, o.slice_rank, jsonb_build_object(
                   'ref', jsonb_build_array(o.memory_type, o.id, o.version),
                   'type', o.memory_type,
                   'slice', o.slice,
                   'origin', o.origin,
                   'status', CASE o.memory_type WHEN 'entity' THEN 'current' WHEN 'workflow' THEN 'current'
                                 WHEN 'summary' THEN 'historical' WHEN 'conversation' THEN 'unverified'
                                 ELSE 'evidence' END,
                   'required', o.required,
                   'selection_rank', o.slice_rank,
                   'role', o.role,
                   'turn_index', o.turn_index,
                   'thread_id', o.thread_id,
                   'title', coalesce(o.title, o.subject, o.key_name),
                   'valid_from', o.valid_from,
                   'scores', jsonb_strip_nulls(jsonb_build_object(
                                 'rerank_logit', o.logit, 'rerank', o.rerank, 'confidence', o.confidence_score,
                                 'recency', o.recency, 'priority', o.priority, 'bm25', o.bm25,
                                 'similarity', o.similarity,
                                 'adjacent_logit', CASE WHEN o.adjacent_logit >= o.own_logit
                                                        THEN o.adjacent_logit END,
                                 'thread_logit', o.thread_logit))
                             || jsonb_strip_nulls(jsonb_build_object(
                                 'lexical_rank', o.source -> 'lexical_rank', 'vector_rank', o.source -> 'vector_rank',
                                 'fused', o.source -> 'fused')),
                   'tiers', jsonb_build_object(
                       'full', o.content,
                       'summary', CASE WHEN cm.fresh THEN cm.content END,
                       'pointer', o.pointer_text),
                   'summary_ref', CASE WHEN cm.fresh THEN jsonb_build_array('compression', cm.id, cm.version) END,
                   -- Who wrote the text: the summary tier's compression, and a summary row (content_json).
                   'summary_by', CASE WHEN cm.fresh THEN jsonb_build_object('model', cm.generating_model,
                                                                           'prompt_version', cm.prompt_version) END,
                   'generated_by', CASE WHEN o.memory_type = 'summary'
                                         AND jsonb_typeof(o.content_json -> 'generated_by' -> 'model') = 'string'
                                         AND jsonb_typeof(o.content_json -> 'generated_by' -> 'prompt_version')
                                             = 'string'
                                        THEN jsonb_build_object(
                                            'model', left(o.content_json -> 'generated_by' ->> 'model', 128),
                                            'prompt_version',
                                            left(o.content_json -> 'generated_by' ->> 'prompt_version', 64)) END,
                   -- Stored o200k_base counts of the full and summary texts (NULL: the fitter counts them).
                   'content_tokens', o.content_tokens,
                   'summary_tokens', CASE WHEN cm.fresh THEN cm.content_tokens END,
                   'annotations', coalesce(a.notes, '[]'::jsonb)) AS candidate
          FROM step_limit AS o
          LEFT JOIN annotations AS a ON a.memory_type = o.memory_type AND a.id = o.id AND a.version = o.version
          -- The row's persisted compression, by index; refused when it no longer matches the row's text.
          LEFT JOIN LATERAL (
              SELECT c.content, c.id, c.version, c.content_tokens, c.generating_model, c.prompt_version,
                     c.source_hash = encode(sha256(convert_to(o.content, 'UTF8')), 'hex') AS fresh
                FROM (SELECT k.content, k.id, k.version, k.content_tokens, k.source_hash, k.valid_from, k.status,
                             k.deleted_at, k.generating_model, k.prompt_version
                        FROM ctxasm.context_compression AS k
                       WHERE k.tenant_id = l_tenant AND k.source_type = o.memory_type AND k.source_id = o.id
                         AND k.source_version = o.version
                         AND (l_snapshot IS NULL OR pg_visible_in_snapshot(k.created_xid, l_snapshot))
                      UNION ALL
                      SELECT k.content, k.id, k.version, k.content_tokens, k.source_hash, k.valid_from, k.status,
                             k.deleted_at, k.generating_model, k.prompt_version
                        FROM ctxasm.context_compression_history AS k
                       WHERE (SELECT l_snapshot) IS NOT NULL AND k.tenant_id = l_tenant
                         AND k.source_type = o.memory_type AND k.source_id = o.id AND k.source_version = o.version
                         AND pg_visible_in_snapshot(k.created_xid, (SELECT l_snapshot))
                         AND NOT pg_visible_in_snapshot(k.retired_xid, (SELECT l_snapshot))) AS c
               WHERE c.status = 'active' AND c.deleted_at IS NULL
               ORDER BY c.valid_from DESC, c.id
               LIMIT 1) AS cm ON TRUE
         WHERE NOT o.cut
    ),
    cuts AS (
        SELECT jsonb_agg(jsonb_build_object('slice', l.slice, 'rule', 'candidate_limit',
                                            'limit', (l_limits ->> l.slice)::integer, 'rows', l.rows,
                                            'below_priority', l.below_priority)
                         ORDER BY l.slice) AS items
          FROM (SELECT c.slice, count(*) AS rows, max(c.priority) AS below_priority
                  FROM step_limit AS c WHERE c.cut GROUP BY c.slice) AS l
    ),
    fixed AS (
        SELECT jsonb_agg(jsonb_build_object(
                   'ref', jsonb_build_array(f.memory_type, f.id, f.version),
                   'type', f.memory_type, 'slice', f.slice, 'key', f.key_name,
                   'content', f.content, 'extra', f.extra)
                   ORDER BY CASE f.slice WHEN 'guidelines' THEN 1 WHEN 'persona' THEN 2 ELSE 3 END,
                            f.scope_level, f.key_name, f.id) AS items
          FROM fixed_ranked AS f
         WHERE f.key_rank = 1
    ),
    excluded AS (
        SELECT jsonb_agg(x.item ORDER BY x.item ->> 'rule', x.item -> 'ref') AS items
          FROM (
              SELECT jsonb_build_object('ref', jsonb_build_array(l.memory_type, l.id, l.version),
                                        'rule', 'lifecycle', 'detail', l.lifecycle_reason) AS item
                FROM step_lifecycle AS l WHERE l.lifecycle_reason IS NOT NULL
              UNION ALL
              SELECT jsonb_build_object('ref', jsonb_build_array(f.memory_type, f.id, f.version),
                                        'rule', 'conflict', 'detail', 'a narrower ' || f.memory_type || ' with key '
                                        || f.key_name || ' is in effect')
                FROM fixed_ranked AS f WHERE f.key_rank > 1
              UNION ALL
              SELECT jsonb_build_object('ref', jsonb_build_array(d.memory_type, d.id, d.version),
                                        'rule', 'dedup', 'kept', d.duplicate_of)
                FROM step_dedup AS d WHERE d.duplicate_of IS NOT NULL
              UNION ALL
              SELECT jsonb_build_object('ref', jsonb_build_array(c.memory_type, c.id, c.version),
                                        'rule', 'conflict', 'kept', c.beaten_by)
                FROM step_conflict AS c WHERE c.beaten_by IS NOT NULL
          ) AS x
    ),
    -- The source list as the manifest records it: one entry per row version, with the figures it was scored by.
    scored_figures AS MATERIALIZED (
        SELECT jsonb_object_agg(p.memory_type || ':' || p.id || ':' || p.version,
                                jsonb_strip_nulls(jsonb_build_object(
                                    'logit', p.logit, 'bm25', p.bm25, 'similarity', p.similarity,
                                    'adjacent_logit', CASE WHEN p.adjacent_logit >= p.own_logit
                                                           THEN p.adjacent_logit END,
                                    'thread_logit', p.thread_logit))) AS figures
          FROM step_priority AS p
    ),
    recorded_sources AS (
        SELECT jsonb_agg(r.item ORDER BY r.precedence, r.slice, r.fused DESC NULLS LAST, r.memory_type, r.id, r.version)
                   AS items
          FROM (SELECT (s.item - 'logit' - 'bm25' - 'similarity' - 'adjacent_logit' - 'thread_logit')
                       || coalesce((SELECT f.figures FROM scored_figures AS f)
                                   -> (s.memory_type || ':' || s.id || ':' || s.version), '{}'::jsonb) AS item,
                       array_position(ARRAY['tail', 'scope', 'retrieval', 'adjacent', 'claim', 'cited'], s.origin::text)
                           AS precedence,
                       s.item ->> 'slice' AS slice, (s.item ->> 'fused')::numeric AS fused,
                       s.memory_type, s.id, s.version
                  FROM ctxasm.merged_sources(l_sources) AS s) AS r
    )
    SELECT jsonb_build_object(
               'engine', 'postgresql',
               'snapshot', coalesce(in_snapshot, pg_current_snapshot()::text),
               'tenant_id', l_tenant,
               'evaluation_time', in_evaluation_time,
               'selection_version', ctx_assembly.selection_version(),
               'scorer', CASE WHEN in_scores IS NOT NULL THEN 'external' WHEN in_sources IS NOT NULL THEN 'recorded'
                              ELSE co_hybrid_scorer END,
               'budget', jsonb_build_object('ref', jsonb_build_array('guideline', l_budget.id, l_budget.version),
                                            'content_json', l_budget.content_json),
               'fixed', coalesce((SELECT items FROM fixed), '[]'::jsonb),
               'candidates', coalesce((SELECT jsonb_agg(c.candidate ORDER BY c.slice, c.slice_rank)
                                         FROM candidates AS c), '[]'::jsonb),
               'required_refs', coalesce((SELECT jsonb_agg(q.ref ORDER BY q.ref) FROM required_refs AS q),
                                         '[]'::jsonb),
               'candidate_limits', l_limits,
               'candidate_cuts', coalesce((SELECT items FROM cuts), '[]'::jsonb),
               'retrieval', jsonb_build_object(
                   'method', CASE WHEN in_sources IS NOT NULL THEN 'recorded'
                                  WHEN l_embedding IS NULL THEN 'lexical-bm25'
                                  ELSE 'hybrid-bm25-hnsw-rrf-60' END,
                   'depth', co_retrieval_depth,
                   'items', coalesce((SELECT items FROM recorded_sources), '[]'::jsonb)),
               'excluded', coalesce((SELECT items FROM excluded), '[]'::jsonb))
      INTO l_result;
    RETURN l_result;
END;
$$;
--rollback DROP FUNCTION ctx_assembly.select_window(varchar, varchar, varchar, varchar, timestamptz, text, jsonb, varchar, varchar, jsonb);

--changeset ctxasm:pg-internal-manifest-refs dbms:postgresql runOnChange:true splitStatements:false
--comment: the rows a manifest depends on, in the order they are recorded: rendered memories, their persisted
--comment: compressions, the sources of their annotations, the excluded rows, the budget
CREATE OR REPLACE FUNCTION ctxasm.manifest_refs(in_manifest jsonb)
RETURNS TABLE (ref jsonb, relation varchar, ord bigint)
LANGUAGE sql IMMUTABLE AS $$
    SELECT d.ref, d.relation, row_number() OVER (ORDER BY d.part, d.ord)
      FROM (
          SELECT m -> 'ref' AS ref, 'rendered'::varchar AS relation, 1 AS part, o AS ord
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
$$;
--rollback DROP FUNCTION ctxasm.manifest_refs(jsonb);

--changeset ctxasm:pg-ctx-assembly-record-manifest dbms:postgresql runOnChange:true splitStatements:false
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
    -- the widths of conversation_memory's user_id, agent_id and thread_id, and of context_source_ref's
    -- source_type and source_id
    co_scope_length CONSTANT integer := 64;
    co_type_length  CONSTANT integer := 32;
    co_id_length    CONSTANT integer := 128;
BEGIN
    IF in_manifest IS NULL OR jsonb_typeof(in_manifest) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_manifest'),
            MESSAGE = 'invalid_manifest: the manifest must be a JSON object';
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
              FROM ctxasm.manifest_refs(in_manifest) AS r) AS b
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
      FROM ctxasm.manifest_refs(in_manifest) AS r;
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
