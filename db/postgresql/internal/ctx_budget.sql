--liquibase formatted sql
-- CTX_BUDGET: the context_budget guideline a window is selected under, and what the database reads from it
-- itself (the weights of the priority, recency_days, the intent's shares, require_current_facts, the candidate
-- limits per slice). The database checks only those fields; the Python layer validates the rest. A budget is
-- passed around as the selection document's "budget" entry: {"ref": ["guideline", id, version], "content_json"}.

--changeset ctxasm:pg-budget-weight dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_BUDGET.budget_weight: weights.<in_field> of a budget, which must be a number >= 0
CREATE OR REPLACE FUNCTION ctxasm.budget_weight(in_budget jsonb, in_field varchar) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    l_weight jsonb := in_budget -> 'content_json' -> 'weights' -> in_field;
BEGIN
    IF jsonb_typeof(l_weight) IS DISTINCT FROM 'number' OR l_weight::text::numeric < 0 THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
            'invalid_budget: guideline %s version %s: weights.%s must be a number >= 0',
            in_budget -> 'ref' ->> 1, in_budget -> 'ref' ->> 2, in_field);
    END IF;
    RETURN l_weight::text::numeric;
END;
$$;
--rollback DROP FUNCTION ctxasm.budget_weight(jsonb, varchar);

--changeset ctxasm:pg-budget-rows dbms:postgresql runOnChange:true splitStatements:false
--comment: the context_budget guidelines in scope and in effect at in_evaluation_time, the winning scope first (at
--comment: most two: budget_in_effect refuses two of one scope), live or as of a snapshot. A live window reads
--comment: the live table alone: the statement with the history's branch is planned only for a replay.
CREATE OR REPLACE FUNCTION ctxasm.budget_rows(
    in_tenant_id       varchar,
    in_user_id         varchar,
    in_agent_id        varchar,
    in_thread_id       varchar,
    in_evaluation_time timestamptz,
    in_snapshot        pg_snapshot
)
RETURNS TABLE (id varchar, version integer, content_json jsonb, user_id varchar, agent_id varchar,
               thread_id varchar)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan AS $$
BEGIN
    IF in_snapshot IS NULL THEN
        RETURN QUERY
        SELECT r.id, r.version, r.content_json, r.user_id, r.agent_id, r.thread_id
          FROM ctxasm.guideline_memory AS r
         WHERE r.tenant_id = in_tenant_id AND r.guideline_key = 'context_budget'
           AND (r.user_id IS NULL OR r.user_id = in_user_id)
           AND (r.agent_id IS NULL OR r.agent_id = in_agent_id)
           AND (r.thread_id IS NULL OR r.thread_id = in_thread_id)
           AND r.deleted_at IS NULL AND r.valid_from <= in_evaluation_time
           AND (r.valid_until IS NULL OR r.valid_until > in_evaluation_time)
         ORDER BY ctxasm.scope_level(r.user_id, r.agent_id, r.thread_id) DESC, r.valid_from DESC, r.id
         LIMIT 2;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT g.id, g.version, g.content_json, g.user_id, g.agent_id, g.thread_id
      FROM (SELECT r.id, r.version, r.user_id, r.agent_id, r.thread_id, r.valid_from, r.valid_until, r.deleted_at,
                   r.content_json, r.guideline_key
              FROM ctxasm.guideline_memory AS r
             WHERE r.tenant_id = in_tenant_id AND pg_visible_in_snapshot(r.created_xid, in_snapshot)
            UNION ALL
            SELECT h.id, h.version, h.user_id, h.agent_id, h.thread_id, h.valid_from, h.valid_until, h.deleted_at,
                   h.content_json, h.guideline_key
              FROM ctxasm.guideline_memory_history AS h
             WHERE h.tenant_id = in_tenant_id AND pg_visible_in_snapshot(h.created_xid, in_snapshot)
               AND NOT pg_visible_in_snapshot(h.retired_xid, in_snapshot)) AS g
     WHERE g.guideline_key = 'context_budget'
       AND (g.user_id IS NULL OR g.user_id = in_user_id)
       AND (g.agent_id IS NULL OR g.agent_id = in_agent_id)
       AND (g.thread_id IS NULL OR g.thread_id = in_thread_id)
       AND g.deleted_at IS NULL AND g.valid_from <= in_evaluation_time
       AND (g.valid_until IS NULL OR g.valid_until > in_evaluation_time)
     ORDER BY ctxasm.scope_level(g.user_id, g.agent_id, g.thread_id) DESC, g.valid_from DESC, g.id
     LIMIT 2;
END;
$$;
--rollback DROP FUNCTION ctxasm.budget_rows(varchar, varchar, varchar, varchar, timestamptz, pg_snapshot);

--changeset ctxasm:pg-budget-in-effect dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_BUDGET.budget_in_effect: the narrowest context_budget guideline in effect for the scope at the
--comment: evaluation time, live or as of a snapshot, checked; returns {"ref": [...], "content_json": {...}}.
--comment: Planned for each call, for the tenant's own partitions (a generic plan would lock every tenant's
--comment: guideline partition: see ctx_sources.sql).
CREATE OR REPLACE FUNCTION ctxasm.budget_in_effect(
    in_tenant_id       varchar,
    in_user_id         varchar,
    in_agent_id        varchar,
    in_thread_id       varchar,
    in_intent          varchar,
    in_evaluation_time timestamptz,
    in_snapshot        pg_snapshot
)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    l_budget    record;
    l_candidate record;
    l_budgets   integer := 0;
    l_result    jsonb;
    l_field     text;
BEGIN
    -- Two of the winning scope in effect at once would be picked by an arbitrary tie-break: refused, naming both
    -- (the loader refuses such a file; rows written by other paths can still make the pair).
    FOR l_candidate IN
        SELECT * FROM ctxasm.budget_rows(in_tenant_id, in_user_id, in_agent_id, in_thread_id, in_evaluation_time,
                                         in_snapshot)
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
    IF jsonb_typeof(l_budget.content_json) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
            'invalid_budget: guideline %s version %s: content_json must be a JSON object', l_budget.id, l_budget.version);
    END IF;
    l_result := jsonb_build_object('ref', jsonb_build_array('guideline', l_budget.id, l_budget.version),
                                   'content_json', l_budget.content_json);
    FOREACH l_field IN ARRAY ARRAY['rerank', 'confidence', 'recency'] LOOP
        PERFORM ctxasm.budget_weight(l_result, l_field);
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
    IF l_budget.content_json ? 'require_current_facts'
       AND jsonb_typeof(l_budget.content_json -> 'require_current_facts') IS DISTINCT FROM 'boolean' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
            'invalid_budget: guideline %s version %s: require_current_facts must be true or false',
            l_budget.id, l_budget.version);
    END IF;
    RETURN l_result;
END;
$$;
--rollback DROP FUNCTION ctxasm.budget_in_effect(varchar, varchar, varchar, varchar, varchar, timestamptz, pg_snapshot);

--changeset ctxasm:pg-budget-candidate-limits dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_BUDGET.candidate_limits: how many candidates each dynamic slice keeps after scoring: the budget's
--comment: candidate_limits (checked: a whole number 1..1000 for a dynamic slice), else enough for the slice's
--comment: share of what the reserves leave; {"durable_facts": n, "evidence": n, "recalled_history": n,
--comment: "volatile_tail": n}
CREATE OR REPLACE FUNCTION ctxasm.candidate_limits(in_budget jsonb, in_intent varchar) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    -- A slice's candidate limit by default: 1.25 times the records of 25 tokens (a recalled turn with its line,
    -- the smallest record) its share would hold, 10..1000, so a large budget can fill.
    co_tokens_per_candidate constant integer := 25;
    co_min_candidates  constant integer := 10;
    co_max_candidates  constant integer := 1000;
    co_dynamic_slices  constant varchar[] := ARRAY['durable_facts', 'evidence', 'recalled_history', 'volatile_tail'];
    l_content   jsonb := in_budget -> 'content_json';
    l_available numeric;
    l_slice     text;
    l_limits    jsonb := '{}';
BEGIN
    IF l_content ? 'candidate_limits' AND jsonb_typeof(l_content -> 'candidate_limits') IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
            'invalid_budget: guideline %s version %s: candidate_limits must be an object of slice -> count',
            in_budget -> 'ref' ->> 1, in_budget -> 'ref' ->> 2);
    END IF;
    FOR l_slice IN SELECT jsonb_object_keys(coalesce(l_content -> 'candidate_limits', '{}')) LOOP
        IF NOT l_slice = ANY (co_dynamic_slices)
           OR jsonb_typeof(l_content -> 'candidate_limits' -> l_slice) IS DISTINCT FROM 'number'
           -- A whole number, written with or without a zero fraction (5 or 5.0: JSON has one number type).
           OR (l_content -> 'candidate_limits' ->> l_slice) !~ '^[0-9]{1,4}([.]0+)?$'
           OR (l_content -> 'candidate_limits' ->> l_slice)::numeric::integer NOT BETWEEN 1 AND 1000 THEN
            RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_budget'), MESSAGE = format(
                'invalid_budget: guideline %s version %s: candidate_limits.%s must be a whole number 1..1000 '
                'for one of the slices %s', in_budget -> 'ref' ->> 1, in_budget -> 'ref' ->> 2, l_slice,
                array_to_string(co_dynamic_slices, ', '));
        END IF;
    END LOOP;
    l_available := greatest(0, coalesce(CASE WHEN jsonb_typeof(l_content -> 'usable_context') = 'number'
                                             THEN (l_content ->> 'usable_context')::numeric END, 0)
                               - coalesce((SELECT sum(CASE WHEN jsonb_typeof(l_content -> f) = 'number'
                                                           THEN (l_content ->> f)::numeric END)
                                             FROM unnest(ARRAY['output_reserve', 'tool_reserve',
                                                               'request_overhead_reserve']) AS f), 0));
    FOREACH l_slice IN ARRAY co_dynamic_slices LOOP
        l_limits := l_limits || jsonb_build_object(l_slice, coalesce(
            (l_content -> 'candidate_limits' ->> l_slice)::numeric::integer,
            -- bounded before it is an integer: a budget row stored before budgets were bounded may hold any count
            least(co_max_candidates, greatest(co_min_candidates, ceil(
                1.25 * l_available * coalesce(CASE WHEN jsonb_typeof(l_content -> 'shares' -> in_intent -> l_slice)
                                                        = 'number'
                                                   THEN (l_content -> 'shares' -> in_intent ->> l_slice)::numeric
                                              END, 0)
                / co_tokens_per_candidate)))::integer));
    END LOOP;
    RETURN l_limits;
END;
$$;
--rollback DROP FUNCTION ctxasm.candidate_limits(jsonb, varchar);
