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
    SELECT 'selection-77473988d509'::varchar
$$;
--rollback DROP FUNCTION ctx_assembly.selection_version();

--changeset ctxasm:pg-ctx-assembly-select-window dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_ASSEMBLY.select_window: one evaluation time, one snapshot (a STABLE function reads with the
--comment: snapshot of the calling statement), a bounded list of sources, the selection rules in order, one
--comment: JSON document back (json, built as text: see CTX_SELECTION.candidate_items). The work is done by
--comment: CTX_BUDGET (the budget and the candidate limits), CTX_SOURCES (the source list) and CTX_SELECTION (one
--comment: function per rule, then the document's parts).
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
RETURNS json
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
    -- Retrieval: rows each retriever ranks at least.
    co_retrieval_depth constant integer := 50;
    l_tenant    varchar := ctxasm.require_scope(in_user_id, in_agent_id);
    l_budget    jsonb;
    l_snapshot  pg_snapshot;
    l_embedding public.vector;
    l_limits    jsonb;
    l_sources   jsonb;
    l_cited     jsonb;
    l_types     varchar[];
    l_idf       double precision[];
    l_lexemes   text[];
    l_df        double precision[];
    l_row_counts      double precision[];
    l_require   boolean;
    l_selection ctxasm.selection_candidate[];
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

    l_budget := ctxasm.budget_in_effect(l_tenant, in_user_id, in_agent_id, in_thread_id, in_intent,
                                        in_evaluation_time, l_snapshot);
    l_require := coalesce((l_budget -> 'content_json' ->> 'require_current_facts')::boolean, TRUE);
    l_limits := ctxasm.candidate_limits(l_budget, in_intent);

    -- The question's lexemes and their weights in this tenant: computed once, used by retrieval and scoring.
    SELECT array_agg(t.memory_type), array_agg(t.idf), array_agg(t.lexeme), array_agg(t.df), array_agg(t.row_count)
      INTO l_types, l_idf, l_lexemes, l_df, l_row_counts
      FROM ctxasm.question_terms(l_tenant, in_question) AS t;
    -- Live: the sources the window enumerates and retrieves. Replay: exactly the sources the manifest recorded.
    l_sources := coalesce(in_sources, ctxasm.window_sources(
        l_tenant, in_user_id, in_agent_id, in_thread_id, in_evaluation_time, l_embedding, l_limits,
        co_retrieval_depth, l_types, l_lexemes, l_idf, l_df, l_row_counts));

    -- The rows the sources name, then the selection rules in order (contract/selection.toml).
    l_selection := ctxasm.candidate_rows(l_tenant, l_snapshot, l_sources, l_embedding);
    -- Live: what the recalled history cites and the claims of those citations are sources too, found from the
    -- rows just read; the rare window whose history cites something reads its whole list again.
    IF in_sources IS NULL THEN
        l_cited := ctxasm.claim_sources(l_tenant, in_user_id, in_agent_id, in_thread_id, l_selection);
        IF l_cited IS NOT NULL THEN
            l_sources := l_sources || l_cited;
            l_selection := ctxasm.candidate_rows(l_tenant, l_snapshot, l_sources, l_embedding);
        END IF;
    END IF;
    l_selection := ctxasm.scope_step(l_selection, in_user_id, in_agent_id, in_thread_id);
    l_selection := ctxasm.lifecycle_step(l_selection, in_evaluation_time);
    l_selection := ctxasm.dedup_step(l_selection);
    l_selection := ctxasm.conflict_step(l_selection);
    l_selection := ctxasm.required_step(l_selection, l_require);
    l_selection := ctxasm.score_step(l_selection, l_budget, in_evaluation_time, in_scores, in_sources IS NOT NULL,
                                     l_embedding, l_types, l_lexemes, l_idf, ctxasm.question_words(in_question));
    l_selection := ctxasm.priority_step(l_selection, ctxasm.budget_weight(l_budget, 'rerank'),
                                        ctxasm.budget_weight(l_budget, 'confidence'),
                                        ctxasm.budget_weight(l_budget, 'recency'), ctxasm.asks_about_present(in_question));
    l_selection := ctxasm.tie_break_step(l_selection);
    l_selection := ctxasm.limit_step(l_selection, l_limits);

    RETURN json_build_object(
        'engine', 'postgresql',
        'snapshot', coalesce(in_snapshot, pg_current_snapshot()::text),
        'tenant_id', l_tenant,
        'evaluation_time', in_evaluation_time,
        'selection_version', ctx_assembly.selection_version(),
        'scorer', CASE WHEN in_scores IS NOT NULL THEN 'external' WHEN in_sources IS NOT NULL THEN 'recorded'
                       ELSE co_hybrid_scorer END,
        'budget', l_budget,
        'fixed', ctxasm.fixed_items(l_selection),
        'candidates', ctxasm.candidate_items(l_selection, l_tenant, l_snapshot, in_evaluation_time),
        'required_refs', ctxasm.required_refs(l_selection, l_require),
        'candidate_limits', l_limits,
        'candidate_cuts', ctxasm.candidate_cuts(l_selection, l_limits),
        'retrieval', json_build_object(
            'method', CASE WHEN in_sources IS NOT NULL THEN 'recorded'
                           WHEN l_embedding IS NULL THEN 'lexical-bm25'
                           ELSE 'hybrid-bm25-hnsw-rrf-60' END,
            'depth', co_retrieval_depth,
            'items', ctxasm.recorded_sources(l_selection, l_sources)),
        'excluded', ctxasm.exclusions(l_selection));
END;
$$;
--rollback DROP FUNCTION ctx_assembly.select_window(varchar, varchar, varchar, varchar, timestamptz, text, jsonb, varchar, varchar, jsonb);
