--liquibase formatted sql
-- CTX_SELECTION: the selection rules of a window, one function per rule, in the order select_window runs them
-- (contract/selection.toml): scope_step, lifecycle_step, dedup_step, conflict_step, required_step, score_step,
-- priority_step, tie_break_step, limit_step; then exclusions and the other parts of the selection document.
-- The rows pass from step to step as one array of ctxasm.selection_candidate. No step drops a row: a step that
-- excludes one says why in its own column (lifecycle_reason, duplicate_of, key_rank, beaten_by, cut), and the
-- later steps only weigh the rows still in competition (ctxasm.competes). So the manifest's excluded list is
-- read from the last array, and each step reads as its rule.
-- A step sets its columns in PL/pgSQL: on each row in turn (FOREACH, a row variable), or, where the rule needs
-- the other rows (a window over a slice, a key, a text), from one query that gives each row's position (WITH
-- ORDINALITY) and value, written with l_rows[i].column := value into the array kept expanded. Rebuilding every
-- row per step instead (jsonb_populate_record, then array_agg) cost two to three times as much, a cost that
-- grows with the candidates a large budget keeps (docs/assembly.md, "Speed").

--changeset ctxasm:pg-selection-competes-columns dbms:postgresql runOnChange:true splitStatements:false
--comment: ctxasm.competes on a row's columns, for the steps' queries over unnest(...) WITH ORDINALITY (whose
--comment: rows are columns, not a selection_candidate)
CREATE OR REPLACE FUNCTION ctxasm.competes(in_slice varchar, in_lifecycle_reason varchar, in_duplicate_of jsonb,
                                           in_beaten_by jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(in_slice NOT IN ('guidelines', 'persona', 'tools') AND in_lifecycle_reason IS NULL
                    AND in_duplicate_of IS NULL AND in_beaten_by IS NULL, FALSE)
$$;
--rollback DROP FUNCTION ctxasm.competes(varchar, varchar, jsonb, jsonb);

--changeset ctxasm:pg-selection-competes dbms:postgresql runOnChange:true splitStatements:false
--comment: whether a row still competes for a dynamic slice: in effect, not a duplicate, not beaten (the fixed
--comment: slices are chosen by key, not by score)
CREATE OR REPLACE FUNCTION ctxasm.competes(in_row ctxasm.selection_candidate) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT ctxasm.competes(in_row.slice, in_row.lifecycle_reason, in_row.duplicate_of, in_row.beaten_by)
$$;
--rollback DROP FUNCTION ctxasm.competes(ctxasm.selection_candidate);

--changeset ctxasm:pg-selection-scope-step dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SELECTION.scope_step: the rows the scope may see, each with its scope level, authority and slice;
--comment: the others are dropped (never shown, not even as excluded). Other tenants are invisible (the tenant's
--comment: partition, RLS); user, agent and thread must match or be NULL (wider); a user's turns in other threads
--comment: are recalled history; events are not memory; budget guidelines are not shown. Checked here because
--comment: replay takes its source list from the caller.
CREATE OR REPLACE FUNCTION ctxasm.scope_step(
    in_rows      ctxasm.selection_candidate[],
    in_user_id   varchar,
    in_agent_id  varchar,
    in_thread_id varchar
)
RETURNS ctxasm.selection_candidate[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    l_row  ctxasm.selection_candidate;
    l_rows ctxasm.selection_candidate[] := '{}';
BEGIN
    FOREACH l_row IN ARRAY coalesce(in_rows, '{}') LOOP
        CONTINUE WHEN NOT coalesce(
            (l_row.user_id IS NULL OR l_row.user_id = in_user_id)
            AND (l_row.agent_id IS NULL OR l_row.agent_id = in_agent_id)
            AND (l_row.thread_id IS NULL OR l_row.thread_id = in_thread_id
                 OR (l_row.memory_type = 'conversation' AND l_row.user_id = in_user_id))
            AND (l_row.memory_type <> 'conversation' OR l_row.event_type = 'message')
            AND l_row.memory_type NOT IN ('compression', 'source_ref')
            AND NOT (l_row.memory_type = 'guideline' AND l_row.key_name = 'context_budget'), FALSE);
        l_row.scope_level := ctxasm.scope_level(l_row.user_id, l_row.agent_id, l_row.thread_id);
        l_row.authority := ctxasm.authority(l_row.memory_type);
        -- The thread's tail (conversation turns only) has its own slice; every other row competes for its type's.
        l_row.slice := CASE WHEN l_row.origin = 'tail' THEN 'volatile_tail' ELSE CASE l_row.memory_type
                   -- generated: slice of type from contract/memory_types.toml; edit the catalogue, then regenerate
                   WHEN 'guideline' THEN 'guidelines' WHEN 'persona' THEN 'persona' WHEN 'toolbox' THEN 'tools'
                   WHEN 'entity' THEN 'durable_facts' WHEN 'workflow' THEN 'durable_facts'
                   WHEN 'kb_document' THEN 'evidence' WHEN 'kb_chunk' THEN 'evidence'
                   WHEN 'conversation' THEN 'recalled_history' WHEN 'summary' THEN 'recalled_history'
                   -- end generated: slice of type
               END END;
        l_rows := l_rows || l_row;
    END LOOP;
    RETURN l_rows;
END;
$$;
--rollback DROP FUNCTION ctxasm.scope_step(ctxasm.selection_candidate[], varchar, varchar, varchar);

--changeset ctxasm:pg-selection-lifecycle-step dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SELECTION.lifecycle_step: each row's standing at the one evaluation time (NULL reason = in
--comment: effect), and its claim identity. A row cited by history that is not in effect is the annotation's
--comment: source, not a candidate.
CREATE OR REPLACE FUNCTION ctxasm.lifecycle_step(in_rows ctxasm.selection_candidate[], in_evaluation_time timestamptz)
RETURNS ctxasm.selection_candidate[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    l_row  ctxasm.selection_candidate;
    l_rows ctxasm.selection_candidate[] := '{}';
BEGIN
    FOREACH l_row IN ARRAY coalesce(in_rows, '{}') LOOP
        l_row.lifecycle_reason := CASE
            WHEN l_row.status = 'erased' THEN 'erased'
            WHEN l_row.deleted_at IS NOT NULL THEN 'deleted'
            WHEN l_row.valid_from > in_evaluation_time THEN 'not_yet_effective'
            WHEN l_row.valid_until IS NOT NULL AND l_row.valid_until <= in_evaluation_time THEN
                CASE WHEN l_row.status = 'superseded' THEN 'superseded' ELSE 'expired' END
        END;
        l_row.claim_key := ctxasm.claim_key(l_row.subject, l_row.predicate, l_row.content_json);
        l_rows := l_rows || l_row;
    END LOOP;
    RETURN l_rows;
END;
$$;
--rollback DROP FUNCTION ctxasm.lifecycle_step(ctxasm.selection_candidate[], timestamptz);

--changeset ctxasm:pg-selection-dedup-step dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SELECTION.dedup_step: identical normalized text keeps the most authoritative copy, where claim
--comment: identities agree; the others name the copy kept (duplicate_of). A conversation turn that names its
--comment: speaker is a copy only of the same words from the same speaker: "Yes." from Maya is not "Yes." from Tom.
CREATE OR REPLACE FUNCTION ctxasm.dedup_step(in_rows ctxasm.selection_candidate[])
RETURNS ctxasm.selection_candidate[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    l_rows ctxasm.selection_candidate[] := coalesce(in_rows, '{}');
    l_at   bigint;
    l_kept jsonb;
BEGIN
    -- Only the rows whose mark changes are written back: rewriting an element rebuilds the whole row, and most
    -- rows duplicate nothing.
    FOR l_at, l_kept IN
        SELECT k.at, k.kept
          FROM (SELECT d.at, d.duplicate_of,
                       CASE WHEN (d.memory_type, d.id, d.version)
                                 <> (d.keeper ->> 0, d.keeper ->> 1, (d.keeper ->> 2)::integer)
                                 AND (d.claim_key IS NULL OR d.keeper_claim IS NULL OR d.claim_key = d.keeper_claim)
                            THEN d.keeper END AS kept
                  FROM (SELECT y.ordinality AS at, y.memory_type, y.id, y.version, y.claim_key, y.duplicate_of,
                               first_value(jsonb_build_array(y.memory_type, y.id, y.version)) OVER same_text
                                   AS keeper,
                               first_value(y.claim_key) OVER same_text AS keeper_claim
                          FROM unnest(in_rows) WITH ORDINALITY AS y
                         WHERE ctxasm.competes(y.slice, y.lifecycle_reason, y.duplicate_of, y.beaten_by)
                        WINDOW same_text AS (PARTITION BY y.text_key,
                                                          CASE WHEN y.memory_type = 'conversation'
                                                               THEN y.extra ->> 'speaker' END
                                             ORDER BY y.authority, y.scope_level DESC, y.valid_from DESC,
                                                      y.table_name, y.id)) AS d) AS k
         WHERE k.kept IS DISTINCT FROM k.duplicate_of
    LOOP
        l_rows[l_at].duplicate_of := l_kept;
    END LOOP;
    RETURN l_rows;
END;
$$;
--rollback DROP FUNCTION ctxasm.dedup_step(ctxasm.selection_candidate[]);

--changeset ctxasm:pg-selection-conflict-step dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SELECTION.conflict_step: in the fixed slices, per (type, key) the narrowest scope wins (key_rank
--comment: 1); within a claim, canonical facts beat derived claims and the narrower scope wins (the losers name
--comment: the winner: beaten_by)
CREATE OR REPLACE FUNCTION ctxasm.conflict_step(in_rows ctxasm.selection_candidate[])
RETURNS ctxasm.selection_candidate[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    l_rows ctxasm.selection_candidate[] := coalesce(in_rows, '{}');
    l_at   bigint;
    l_rank bigint;
    l_winner jsonb;
BEGIN
    -- The fixed slices' rows in effect: ranked within their key.
    FOR l_at, l_rank IN
        SELECT f.ordinality, row_number() OVER (PARTITION BY f.memory_type, f.key_name
                                                ORDER BY f.scope_level DESC, f.valid_from DESC, f.id)
          FROM unnest(in_rows) WITH ORDINALITY AS f
         WHERE f.slice IN ('guidelines', 'persona', 'tools') AND f.lifecycle_reason IS NULL
    LOOP
        l_rows[l_at].key_rank := l_rank;
    END LOOP;
    -- The competing rows: a claim's losers name its winner (written back only where that changes the row, as
    -- in dedup_step).
    FOR l_at, l_winner IN
        SELECT w.ordinality, w.winner
          FROM (SELECT d.ordinality, d.beaten_by,
                       CASE WHEN d.claim_key IS NOT NULL AND row_number() OVER claim_order > 1
                            THEN first_value(jsonb_build_array(d.memory_type, d.id, d.version)) OVER claim_order
                       END AS winner
                  FROM unnest(in_rows) WITH ORDINALITY AS d
                 WHERE ctxasm.competes(d.slice, d.lifecycle_reason, d.duplicate_of, d.beaten_by)
                WINDOW claim_order AS (PARTITION BY d.claim_key
                                       ORDER BY d.authority, d.scope_level DESC, d.valid_from DESC, d.table_name,
                                                d.id)) AS w
         WHERE w.winner IS DISTINCT FROM w.beaten_by
    LOOP
        l_rows[l_at].beaten_by := l_winner;
    END LOOP;
    RETURN l_rows;
END;
$$;
--rollback DROP FUNCTION ctxasm.conflict_step(ctxasm.selection_candidate[]);

--changeset ctxasm:pg-selection-required-refs dbms:postgresql runOnChange:true splitStatements:false
--comment: the current winners the annotations point at, as [type, id, version] refs in order: the rows the
--comment: window must show when the budget requires current facts (require_current_facts), else none
CREATE OR REPLACE FUNCTION ctxasm.required_refs(in_rows ctxasm.selection_candidate[], in_require boolean)
RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(jsonb_agg(q.ref ORDER BY q.ref), '[]'::jsonb)
      FROM (SELECT DISTINCT note -> 'current' AS ref
              FROM unnest(in_rows) AS a CROSS JOIN LATERAL jsonb_array_elements(a.annotations) AS note
             WHERE in_require AND note -> 'current' <> 'null'::jsonb) AS q
$$;
--rollback DROP FUNCTION ctxasm.required_refs(ctxasm.selection_candidate[], boolean);

--changeset ctxasm:pg-selection-required-step dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SELECTION.required_step: history (summaries, turns) that cites a version no longer in effect stays,
--comment: with notes (annotations) naming the claim's current winner (whatever its row id), or, for a row that
--comment: makes no claim, the current version of the same row; when the budget requires current facts
--comment: (in_require), those winners are required: the limit never cuts them. A row comes from
--comment: ctxasm.candidate_rows not required; only the rows this step finds required are written (rewriting an
--comment: element rebuilds the whole row), and the notes are looked for only when some history cites anything.
CREATE OR REPLACE FUNCTION ctxasm.required_step(in_rows ctxasm.selection_candidate[], in_require boolean)
RETURNS ctxasm.selection_candidate[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    l_rows     ctxasm.selection_candidate[] := coalesce(in_rows, '{}');
    l_at       bigint;
    l_notes    jsonb;
    l_refs     jsonb;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM unnest(in_rows) AS h
                    WHERE h.memory_type IN ('summary', 'conversation') AND h.source_refs <> '[]'::jsonb
                      AND ctxasm.competes(h.slice, h.lifecycle_reason, h.duplicate_of, h.beaten_by)) THEN
        RETURN l_rows;
    END IF;
    FOR l_at, l_notes IN
        -- only the columns the notes need: the survivors are read twice, and a row's texts would be copied too
        WITH survivors AS MATERIALIZED (
            SELECT s.ordinality, s.memory_type, s.id, s.version, s.claim_key, s.source_refs, s.content, s.authority,
                   s.scope_level, s.valid_from, s.table_name
              FROM unnest(in_rows) WITH ORDINALITY AS s
             WHERE ctxasm.competes(s.slice, s.lifecycle_reason, s.duplicate_of, s.beaten_by)
        )
        SELECT s.ordinality,
               jsonb_agg(jsonb_build_object(
                   'source', jsonb_build_array(src.memory_type, src.id, src.version),
                   'current', CASE WHEN cur.id IS NOT NULL
                                   THEN jsonb_build_array(cur.memory_type, cur.id, cur.version) END,
                   'current_content', cur.content)
                   ORDER BY src.memory_type, src.id, src.version)
          FROM survivors AS s
          CROSS JOIN LATERAL jsonb_array_elements(s.source_refs) AS ref(value)
          JOIN unnest(in_rows) AS src
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
         GROUP BY s.ordinality
    LOOP
        l_rows[l_at].annotations := l_notes;
    END LOOP;
    l_refs := ctxasm.required_refs(l_rows, in_require);
    IF l_refs = '[]'::jsonb THEN
        RETURN l_rows;
    END IF;
    FOR l_at IN
        SELECT r.ordinality
          FROM unnest(in_rows) WITH ORDINALITY AS r
         WHERE ctxasm.competes(r.slice, r.lifecycle_reason, r.duplicate_of, r.beaten_by)
           AND EXISTS (SELECT 1 FROM jsonb_array_elements(l_refs) AS e(ref)
                        WHERE e.ref = jsonb_build_array(r.memory_type, r.id, r.version))
    LOOP
        l_rows[l_at].required := TRUE;
    END LOOP;
    RETURN l_rows;
END;
$$;
--rollback DROP FUNCTION ctxasm.required_step(ctxasm.selection_candidate[], boolean);

--changeset ctxasm:pg-selection-score-step dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SELECTION.score_step: relevance, confidence and recency of each competing row. Relevance is the
--comment: reranker's logit when scores are given (in_scores), the recorded figures on replay (in_replay), or
--comment: the hybrid scorer's (ctxasm.hybrid_logit) from the row's embedding similarity and its BM25 score within
--comment: its slice, with the lift of a recalled turn whose speaker the question names, the lift of one said in
--comment: the time the question names (ctxasm.question_period), the lift or drop of its length
--comment: (ctxasm.length_logit) and the lifts of its neighbour and thread.
DROP FUNCTION IF EXISTS ctxasm.score_step(ctxasm.selection_candidate[], jsonb, timestamptz, jsonb, boolean,
                                          public.vector, varchar[], text[], double precision[]);
CREATE OR REPLACE FUNCTION ctxasm.score_step(
    in_rows            ctxasm.selection_candidate[],
    in_budget          jsonb,
    in_evaluation_time timestamptz,
    in_scores          jsonb,
    in_replay          boolean,
    in_embedding       public.vector,
    in_term_types      varchar[],
    in_term_lexemes    text[],
    in_term_idf        double precision[],
    in_question_words  text
)
RETURNS ctxasm.selection_candidate[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    -- How far below its thread neighbour's relevance a recalled turn may fall (logits; measured on the
    -- conversation set: docs/conversation-eval.md).
    co_adjacent_margin constant numeric := 2.5;
    -- A recalled turn gains this share of its thread's best relevance (logits): a conversation that is about
    -- the question lifts its other turns over scattered matches elsewhere (docs/assembly.md, "Relevance").
    co_thread_weight   constant numeric := 0.3;
    -- A recalled turn whose speaker the question names gains this much (logits): a question about what one
    -- person of a conversation said or did is answered in that person's turns (docs/assembly.md, "Relevance").
    co_speaker_weight  constant numeric := 1.0;
    -- The most a recalled turn's length moves its logit either way (ctxasm.length_logit; docs/assembly.md,
    -- "Relevance"): a turn of e times the mean length gains it all.
    co_length_cap      constant numeric := 1.0;
    -- A recalled turn said in the time the question names gains this much (logits, ctxasm.question_period): "what
    -- did Maria plan on 7 July, 2023?" is answered in what was said that day (docs/assembly.md, "Relevance").
    co_date_weight     constant numeric := 1.5;
    l_scoring   boolean := in_scores IS NULL AND NOT in_replay;
    l_period    record := ctxasm.question_period(in_question_words, in_evaluation_time);
    l_recency_days numeric := (in_budget -> 'content_json' ->> 'recency_days')::numeric;
    l_rows  ctxasm.selection_candidate[] := coalesce(in_rows, '{}');
    l_row   ctxasm.selection_candidate;
    l_score record;
    -- each row's summed idf of the question's lexemes (ctxasm.matched_idf_sql), by position in in_rows
    l_matched double precision[];
BEGIN
    -- Only the retrieved slices are weighed by their words; the other rows' figure is 0.
    IF l_scoring THEN
        EXECUTE format('SELECT array_agg(CASE WHEN v.slice IN (''durable_facts'', ''evidence'', ''recalled_history'') '
                       'THEN (%s)::double precision ELSE 0 END ORDER BY v.ordinality) '
                       'FROM unnest($1) WITH ORDINALITY AS v',
                       ctxasm.matched_idf_sql(
                           'v.search_text', 'v.memory_type',
                           ARRAY(SELECT DISTINCT r.memory_type FROM unnest(in_rows) AS r
                                  WHERE r.slice IN ('durable_facts', 'evidence', 'recalled_history')),
                           in_term_types, in_term_lexemes, ARRAY[4, 5, 3, 2]))
            INTO l_matched USING in_rows, ctxasm.term_queries(in_term_lexemes), in_term_idf, in_term_types,
                                 in_term_lexemes;
    END IF;
    FOR l_score IN
    -- Each row's lexemes are read once; the slice figures are window aggregates. Only the columns the figures
    -- need go on: each window below sorts the rows it reads, and a row's text and tsvector would be copied too.
    WITH signals AS (
        SELECT v.ordinality, v.slice, v.memory_type, v.id, v.version, v.source, v.thread_id, v.turn_index,
               v.key_name, v.confidence, v.valid_from,
               -- BM25 (k1 1.2, each lexeme once) with a length normalisation b of 0.25, not the usual 0.75: a
               -- long turn is not a long document that repeats a word by chance, and 0.75 ranked long answers
               -- below short chatter (docs/conversation-eval.md); retrieval keeps 0.75 (ctxasm.retrieve)
               CASE WHEN l_scoring THEN
                   l_matched[v.ordinality] * 2.2 / (1 + 1.2 * (0.75 + 0.25 * length(v.search_text)
                                                 / greatest(avg(length(v.search_text)) OVER by_slice, 1))) END
                   AS bm25_raw,
               -- ctxasm.candidate_rows compared the row's vector with the question's
               CASE WHEN l_scoring AND in_embedding IS NOT NULL THEN v.similarity END AS similarity_raw,
               CASE WHEN l_scoring AND v.memory_type = 'conversation'
                         AND ctxasm.names_speaker(in_question_words, v.extra ->> 'speaker')
                    THEN co_speaker_weight ELSE 0 END AS speaker_lift,
               -- a recalled turn said in the time the question names
               CASE WHEN l_scoring AND v.slice = 'recalled_history' AND v.memory_type = 'conversation'
                         AND v.valid_from >= l_period.out_from AND v.valid_from < l_period.out_to
                    THEN co_date_weight ELSE 0 END AS date_lift,
               -- a recalled turn's length against the recalled turns of the same voice it competes with
               -- (ctxasm.length_logit): an assistant's answers are long by habit and a person's chat is short,
               -- so each is measured against its own kind, not against the other's
               CASE WHEN l_scoring AND v.slice = 'recalled_history' AND v.memory_type = 'conversation'
                         AND v.content_tokens > 0
                    THEN ctxasm.length_logit(v.content_tokens,
                                             avg(v.content_tokens) FILTER (WHERE v.memory_type = 'conversation'
                                                                             AND v.content_tokens > 0) OVER by_voice,
                                             co_length_cap)
               END AS length_lift
          FROM unnest(in_rows) WITH ORDINALITY AS v
         WHERE ctxasm.competes(v.slice, v.lifecycle_reason, v.duplicate_of, v.beaten_by)
        WINDOW by_slice AS (PARTITION BY v.slice),
               -- a turn's voice: its role and, where the turn names one, its speaker
               by_voice AS (PARTITION BY v.slice, v.role, v.extra ->> 'speaker')
    ),
    -- Replay (and the reranker's second pass) takes the hybrid figures the source list recorded.
    relevance AS (
        SELECT g.*,
               CASE WHEN in_scores IS NOT NULL
                    THEN (in_scores ->> (g.memory_type || ':' || g.id || ':' || g.version))::numeric
                    -- the recorded logit less its thread share, which the logit below adds back
                    WHEN in_replay THEN (g.source ->> 'logit')::numeric
                         - coalesce(round(co_thread_weight * (g.source ->> 'thread_logit')::numeric, 6), 0)
                    WHEN g.slice IN ('durable_facts', 'evidence', 'recalled_history')
                    THEN ctxasm.hybrid_logit(g.similarity_raw, g.bm25_raw,
                                             max(g.bm25_raw) OVER (PARTITION BY g.slice))
                         + g.speaker_lift + g.date_lift + coalesce(g.length_lift, 0) END AS scored_logit,
               CASE WHEN in_replay THEN (g.source ->> 'bm25')::numeric
                    ELSE round(g.bm25_raw::numeric, 6) END AS scored_bm25,
               CASE WHEN in_replay THEN (g.source ->> 'similarity')::numeric
                    ELSE round(g.similarity_raw::numeric, 6) END AS scored_similarity,
               CASE WHEN in_scores IS NOT NULL THEN NULL
                    WHEN in_replay THEN (g.source ->> 'length_logit')::numeric
                    ELSE g.length_lift END AS scored_length
          FROM signals AS g
    ),
    -- A recalled turn is worth at least its neighbour in the thread less co_adjacent_margin: an answer sits
    -- next to the question that matched. Live hybrid scoring only; a replay takes the figure it recorded (its
    -- recorded logit already includes it), a reranker's scores are taken as they are.
    adjacency AS (
        SELECT r.*,
               CASE WHEN in_scores IS NOT NULL THEN NULL
                    WHEN in_replay THEN (r.source ->> 'adjacent_logit')::numeric
                    WHEN r.slice = 'recalled_history' AND r.memory_type = 'conversation' THEN
                   greatest(CASE WHEN lag(r.turn_index) OVER thread_turns = r.turn_index - 1
                                 THEN lag(r.scored_logit) OVER thread_turns END,
                            CASE WHEN lead(r.turn_index) OVER thread_turns = r.turn_index + 1
                                 THEN lead(r.scored_logit) OVER thread_turns END) - co_adjacent_margin
               END AS scored_adjacent,
               -- The thread's best relevance among the recalled turns (live hybrid scoring; replay takes the
               -- recorded figure). An episode summary of a thread (summary_key 'thread:<thread_id>') stands for
               -- its turns and shares their thread's figure.
               CASE WHEN in_scores IS NOT NULL THEN NULL
                    WHEN in_replay THEN (r.source ->> 'thread_logit')::numeric
                    WHEN r.slice = 'recalled_history' AND (r.memory_type = 'conversation' OR r.thread_key IS NOT NULL)
                    THEN max(r.scored_logit) FILTER (WHERE r.memory_type = 'conversation') OVER same_thread
               END AS scored_thread
          FROM (SELECT v.*,
                       CASE WHEN v.memory_type = 'conversation' THEN v.thread_id
                            WHEN v.memory_type = 'summary' AND v.key_name LIKE 'thread:%'
                            THEN substr(v.key_name, 8) END AS thread_key
                  FROM relevance AS v) AS r
        WINDOW thread_turns AS (PARTITION BY r.slice, r.memory_type, r.thread_id ORDER BY r.turn_index, r.id),
               same_thread AS (PARTITION BY r.slice, r.thread_key)
    ),
    scored AS (
        SELECT a.*,
               CASE WHEN a.scored_adjacent > a.scored_logit THEN a.scored_adjacent ELSE a.scored_logit END
               + coalesce(round(co_thread_weight * a.scored_thread, 6), 0) AS total_logit
          FROM adjacency AS a
    )
    SELECT s.ordinality AS at, s.scored_logit, s.scored_bm25, s.scored_similarity, s.scored_adjacent,
           s.scored_thread, s.scored_length, s.total_logit, s.confidence, s.valid_from
      FROM scored AS s
    LOOP
        l_row := l_rows[l_score.at];
        l_row.own_logit := l_score.scored_logit;
        l_row.bm25 := l_score.scored_bm25;
        l_row.similarity := l_score.scored_similarity;
        l_row.adjacent_logit := l_score.scored_adjacent;
        l_row.thread_logit := l_score.scored_thread;
        l_row.length_logit := l_score.scored_length;
        l_row.logit := l_score.total_logit;
        l_row.rerank := CASE WHEN l_score.total_logit IS NULL THEN 0
                             ELSE ctxasm.rounded_sigmoid(l_score.total_logit) END;
        l_row.confidence_score := round(coalesce(l_score.confidence, 0.5), 6);
        l_row.recency := round(greatest(0, 1 - extract(epoch FROM in_evaluation_time - l_score.valid_from)
                                              / 86400.0 / l_recency_days), 6);
        l_rows[l_score.at] := l_row;
    END LOOP;
    RETURN l_rows;
END;
$$;
--rollback DROP FUNCTION ctxasm.score_step(ctxasm.selection_candidate[], jsonb, timestamptz, jsonb, boolean, public.vector, varchar[], text[], double precision[], text);

--changeset ctxasm:pg-selection-priority-step dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SELECTION.priority_step: the budget's weight of relevance (in_w_rerank) times rerank, then
--comment: confidence and recency at co_tie_share of their weights times 4 rerank (1 - rerank) (they break
--comment: near-ties of relevance, near in logits at any rerank: a saturated sigmoid leaves large logit gaps
--comment: small), recency in full when the question asks about the present (in_present,
--comment: ctxasm.asks_about_present)
CREATE OR REPLACE FUNCTION ctxasm.priority_step(
    in_rows         ctxasm.selection_candidate[],
    in_w_rerank     numeric,
    in_w_confidence numeric,
    in_w_recency    numeric,
    in_present      boolean
)
RETURNS ctxasm.selection_candidate[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    co_tie_share constant numeric := 0.005;
    l_row  ctxasm.selection_candidate;
    l_rows ctxasm.selection_candidate[] := '{}';
    l_tie  numeric;
BEGIN
    FOREACH l_row IN ARRAY coalesce(in_rows, '{}') LOOP
        IF ctxasm.competes(l_row) THEN
            -- the tie share shrinks as rerank saturates (4 r (1 - r), 1 at r = 0.5): a near-tie is near in logits
            l_tie := co_tie_share * 4 * l_row.rerank * (1 - l_row.rerank);
            l_row.priority := round(in_w_rerank * l_row.rerank + l_tie * in_w_confidence * l_row.confidence_score
                                    + CASE WHEN in_present THEN 1 ELSE l_tie END * in_w_recency * l_row.recency, 6);
        END IF;
        l_rows := l_rows || l_row;
    END LOOP;
    RETURN l_rows;
END;
$$;
--rollback DROP FUNCTION ctxasm.priority_step(ctxasm.selection_candidate[], numeric, numeric, numeric, boolean);

--changeset ctxasm:pg-selection-tie-break-step dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SELECTION.tie_break_step: each slice's order: priority desc, logit desc (rerank rounds to 1 above a
--comment: logit of about 14), valid_from desc, source table, row id;
--comment: the thread's tail keeps the latest turns
CREATE OR REPLACE FUNCTION ctxasm.tie_break_step(in_rows ctxasm.selection_candidate[])
RETURNS ctxasm.selection_candidate[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    l_rows ctxasm.selection_candidate[] := coalesce(in_rows, '{}');
    l_at   bigint;
    l_rank bigint;
BEGIN
    FOR l_at, l_rank IN
        SELECT p.ordinality, row_number() OVER (
                   PARTITION BY p.slice
                   ORDER BY CASE WHEN p.slice = 'volatile_tail' THEN p.turn_index END DESC NULLS LAST,
                            CASE WHEN p.slice <> 'volatile_tail' THEN p.priority END DESC,
                            CASE WHEN p.slice <> 'volatile_tail' THEN p.logit END DESC NULLS LAST,
                            p.valid_from DESC, p.table_name, p.id, p.version)
          FROM unnest(in_rows) WITH ORDINALITY AS p
         WHERE ctxasm.competes(p.slice, p.lifecycle_reason, p.duplicate_of, p.beaten_by)
    LOOP
        l_rows[l_at].slice_rank := l_rank;
    END LOOP;
    RETURN l_rows;
END;
$$;
--rollback DROP FUNCTION ctxasm.tie_break_step(ctxasm.selection_candidate[]);

--changeset ctxasm:pg-selection-limit-step dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SELECTION.limit_step: each slice keeps its first candidate_limits[slice]; required rows are always
--comment: kept
CREATE OR REPLACE FUNCTION ctxasm.limit_step(in_rows ctxasm.selection_candidate[], in_limits jsonb)
RETURNS ctxasm.selection_candidate[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    l_row  ctxasm.selection_candidate;
    l_rows ctxasm.selection_candidate[] := '{}';
BEGIN
    FOREACH l_row IN ARRAY coalesce(in_rows, '{}') LOOP
        IF ctxasm.competes(l_row) THEN
            l_row.cut := l_row.slice_rank > (in_limits ->> l_row.slice)::integer AND NOT l_row.required;
        END IF;
        l_rows := l_rows || l_row;
    END LOOP;
    RETURN l_rows;
END;
$$;
--rollback DROP FUNCTION ctxasm.limit_step(ctxasm.selection_candidate[], jsonb);

--changeset ctxasm:pg-selection-exclusions dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SELECTION.exclusions: the manifest's excluded list, from the steps' reasons: rows out of effect
--comment: (lifecycle), fixed rows another of their key beats (named, with the reason) and claims another row
--comment: wins (conflict), copies of a kept text (dedup)
DROP FUNCTION IF EXISTS ctxasm.exclusions(ctxasm.selection_candidate[]);
CREATE OR REPLACE FUNCTION ctxasm.exclusions(in_rows ctxasm.selection_candidate[]) RETURNS json
LANGUAGE sql IMMUTABLE AS $$
    -- The rows are read once, for the few columns and rows the list is made of (a read per reason copied every
    -- row four times). Each entry is built as jsonb (its ref sorts the list), the list as json text: see
    -- candidate_items.
    WITH marked AS MATERIALIZED (
        SELECT r.memory_type, r.id, r.version, r.lifecycle_reason, r.key_name, r.key_rank, r.scope_level,
               r.valid_from, r.duplicate_of, r.beaten_by
          FROM unnest(in_rows) AS r
         WHERE r.lifecycle_reason IS NOT NULL OR r.key_rank IS NOT NULL OR r.duplicate_of IS NOT NULL
               OR r.beaten_by IS NOT NULL
    )
    SELECT coalesce(json_agg(x.item ORDER BY x.item ->> 'rule', x.item -> 'ref'), '[]'::json)
      FROM (SELECT jsonb_build_object('ref', jsonb_build_array(r.memory_type, r.id, r.version),
                                      'rule', 'lifecycle', 'detail', r.lifecycle_reason) AS item
              FROM marked AS r WHERE r.lifecycle_reason IS NOT NULL
            UNION ALL
            -- the row of the key in effect, and the order conflict_step ranked them by that put it first
            SELECT jsonb_build_object('ref', jsonb_build_array(r.memory_type, r.id, r.version),
                                      'rule', 'conflict', 'detail', r.memory_type || ' ' || w.id || ' version '
                                      || w.version || ' with key ' || r.key_name || ' is in effect: '
                                      || CASE WHEN w.scope_level > r.scope_level THEN 'the narrower scope wins'
                                              WHEN w.valid_from > r.valid_from THEN 'the later valid_from wins'
                                              ELSE 'of the same scope and valid_from, the first id wins' END)
              FROM marked AS r
              JOIN marked AS w
                ON w.memory_type = r.memory_type AND w.key_name = r.key_name AND w.key_rank = 1
             WHERE r.key_rank > 1
            UNION ALL
            SELECT jsonb_build_object('ref', jsonb_build_array(r.memory_type, r.id, r.version),
                                      'rule', 'dedup', 'kept', r.duplicate_of)
              FROM marked AS r WHERE r.duplicate_of IS NOT NULL
            UNION ALL
            SELECT jsonb_build_object('ref', jsonb_build_array(r.memory_type, r.id, r.version),
                                      'rule', 'conflict', 'kept', r.beaten_by)
              FROM marked AS r WHERE r.beaten_by IS NOT NULL) AS x
$$;
--rollback DROP FUNCTION ctxasm.exclusions(ctxasm.selection_candidate[]);

--changeset ctxasm:pg-selection-fixed-items dbms:postgresql runOnChange:true splitStatements:false
--comment: the document's fixed slices: each key's winner, guidelines, persona, then tools
DROP FUNCTION IF EXISTS ctxasm.fixed_items(ctxasm.selection_candidate[]);
CREATE OR REPLACE FUNCTION ctxasm.fixed_items(in_rows ctxasm.selection_candidate[]) RETURNS json
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(json_agg(json_build_object(
               'ref', json_build_array(f.memory_type, f.id, f.version),
               'type', f.memory_type, 'slice', f.slice, 'key', f.key_name,
               'content', f.content, 'extra', f.extra)
               ORDER BY CASE f.slice WHEN 'guidelines' THEN 1 WHEN 'persona' THEN 2 ELSE 3 END,
                        f.scope_level, f.key_name, f.id), '[]'::json)
      FROM unnest(in_rows) AS f
     WHERE f.key_rank = 1
$$;
--rollback DROP FUNCTION ctxasm.fixed_items(ctxasm.selection_candidate[]);

--changeset ctxasm:pg-selection-persisted-compressions dbms:postgresql runOnChange:true splitStatements:false
--comment: the persisted compression of each row version named (in_types, in_ids, in_versions side by side): the
--comment: newest active one in effect at the evaluation time (valid_from <= t < valid_until, as every row the
--comment: window reads), live or as of a snapshot, by index. Its own statement, planned for each call for
--comment: the tenant's own partitions (a generic plan would lock every tenant's: see ctx_sources.sql), apart from
--comment: candidate_items, whose array of rows would be a constant of that plan.
DROP FUNCTION IF EXISTS ctxasm.persisted_compressions(varchar, pg_snapshot, varchar[], varchar[], integer[]);
CREATE OR REPLACE FUNCTION ctxasm.persisted_compressions(
    in_tenant_id       varchar,
    in_snapshot        pg_snapshot,
    in_evaluation_time timestamptz,
    in_types           varchar[],
    in_ids             varchar[],
    in_versions        integer[]
)
RETURNS TABLE (memory_type varchar, id varchar, version integer, content text, compression_id varchar,
               compression_version integer, content_tokens integer, source_hash bpchar,
               generating_model varchar, prompt_version varchar)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan AS $$
BEGIN
    -- A live window reads the live table alone: the statement with the history's branch is planned only for a
    -- replay (planned, even a branch its filter skips cost as much as the live read). The newest compression of
    -- each row is picked from one join (DISTINCT ON): a subquery per row was planned as a scan of the partition
    -- per row where the tenant has few compressions (1.4 ms against 0.5 for the benchmark's 137 candidates
    -- and 49 compressions; the same, 0.6 ms, with 50,000).
    IF in_snapshot IS NULL THEN
        RETURN QUERY
        SELECT DISTINCT ON (s.memory_type, s.id, s.version)
               s.memory_type, s.id, s.version, k.content, k.id, k.version, k.content_tokens, k.source_hash,
               k.generating_model, k.prompt_version
          FROM unnest(in_types, in_ids, in_versions) AS s(memory_type, id, version)
          JOIN ctxasm.context_compression AS k
            ON k.tenant_id = in_tenant_id AND k.source_type = s.memory_type AND k.source_id = s.id
           AND k.source_version = s.version AND k.status = 'active' AND k.deleted_at IS NULL
           AND k.valid_from <= in_evaluation_time
           AND (k.valid_until IS NULL OR k.valid_until > in_evaluation_time)
         ORDER BY s.memory_type, s.id, s.version, k.valid_from DESC, k.id;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT s.memory_type, s.id, s.version, c.content, c.id, c.version, c.content_tokens, c.source_hash,
           c.generating_model, c.prompt_version
      FROM unnest(in_types, in_ids, in_versions) AS s(memory_type, id, version)
      CROSS JOIN LATERAL (
          SELECT c.content, c.id, c.version, c.content_tokens, c.source_hash, c.generating_model, c.prompt_version
            FROM (SELECT k.content, k.id, k.version, k.content_tokens, k.source_hash, k.valid_from, k.valid_until,
                         k.status, k.deleted_at, k.generating_model, k.prompt_version
                    FROM ctxasm.context_compression AS k
                   WHERE k.tenant_id = in_tenant_id AND k.source_type = s.memory_type AND k.source_id = s.id
                     AND k.source_version = s.version AND pg_visible_in_snapshot(k.created_xid, in_snapshot)
                  UNION ALL
                  SELECT k.content, k.id, k.version, k.content_tokens, k.source_hash, k.valid_from, k.valid_until,
                         k.status, k.deleted_at, k.generating_model, k.prompt_version
                    FROM ctxasm.context_compression_history AS k
                   WHERE k.tenant_id = in_tenant_id AND k.source_type = s.memory_type AND k.source_id = s.id
                     AND k.source_version = s.version AND pg_visible_in_snapshot(k.created_xid, in_snapshot)
                     AND NOT pg_visible_in_snapshot(k.retired_xid, in_snapshot)) AS c
           WHERE c.status = 'active' AND c.deleted_at IS NULL AND c.valid_from <= in_evaluation_time
             AND (c.valid_until IS NULL OR c.valid_until > in_evaluation_time)
           ORDER BY c.valid_from DESC, c.id
           LIMIT 1) AS c;
END;
$$;
--rollback DROP FUNCTION ctxasm.persisted_compressions(varchar, pg_snapshot, timestamptz, varchar[], varchar[], integer[]);

--changeset ctxasm:pg-selection-candidate-items dbms:postgresql runOnChange:true splitStatements:false
--comment: the document's candidates: the competing rows the limit kept, by slice and rank, each with its tiers
--comment: (the summary tier from the row's persisted compression, refused when it no longer matches the row's
--comment: text), scores, annotations and stored token counts. The document's large parts are json, built as
--comment: text: jsonb_agg and jsonb_build_object decode and encode again every jsonb value they take in, so a
--comment: document assembled from jsonb parts was encoded once per level it is nested at (a few milliseconds
--comment: for a few hundred candidates), and once more as text for the client.
DROP FUNCTION IF EXISTS ctxasm.candidate_items(ctxasm.selection_candidate[], varchar, pg_snapshot);
CREATE OR REPLACE FUNCTION ctxasm.candidate_items(
    in_rows            ctxasm.selection_candidate[],
    in_tenant_id       varchar,
    in_snapshot        pg_snapshot,
    in_evaluation_time timestamptz
)
RETURNS json
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH kept AS (
        SELECT array_agg(r.memory_type) AS types, array_agg(r.id) AS ids, array_agg(r.version) AS versions
          FROM unnest(in_rows) AS r
         WHERE ctxasm.competes(r) AND NOT r.cut
    ),
    persisted AS MATERIALIZED (
        SELECT p.* FROM kept AS k
         CROSS JOIN LATERAL ctxasm.persisted_compressions(in_tenant_id, in_snapshot, in_evaluation_time, k.types, k.ids,
                                                          k.versions) AS p
    )
    SELECT coalesce(json_agg(json_build_object(
               'ref', json_build_array(o.memory_type, o.id, o.version),
               'type', o.memory_type,
               'slice', o.slice,
               'origin', o.origin,
               -- generated: candidate status from contract/memory_types.toml; edit the catalogue, then regenerate
               'status', CASE o.memory_type WHEN 'entity' THEN 'current' WHEN 'workflow' THEN 'current'
                             WHEN 'conversation' THEN 'unverified' WHEN 'summary' THEN 'historical'
                             ELSE 'evidence' END,
               -- end generated: candidate status
               'required', o.required,
               'selection_rank', o.slice_rank,
               'role', o.role,
               -- a conversation turn's speaker by name (memory_row's extra), which its line shows for the role
               'speaker', CASE WHEN o.memory_type = 'conversation' THEN o.extra ->> 'speaker' END,
               'turn_index', o.turn_index,
               'thread_id', o.thread_id,
               'title', coalesce(o.title, o.subject, o.key_name),
               'valid_from', o.valid_from,
               'scores', json_strip_nulls(json_build_object(
                             'rerank_logit', o.logit, 'rerank', o.rerank, 'confidence', o.confidence_score,
                             'recency', o.recency, 'priority', o.priority, 'bm25', o.bm25,
                             'similarity', o.similarity,
                             'adjacent_logit', CASE WHEN o.adjacent_logit >= o.own_logit THEN o.adjacent_logit END,
                             'thread_logit', o.thread_logit, 'length_logit', o.length_logit,
                             'lexical_rank', o.source -> 'lexical_rank', 'vector_rank', o.source -> 'vector_rank',
                             'fused', o.source -> 'fused')),
               'tiers', json_build_object(
                   'full', o.content,
                   'summary', CASE WHEN cm.fresh THEN cm.content END,
                   'pointer', o.pointer_text),
               'summary_ref', CASE WHEN cm.fresh THEN json_build_array('compression', cm.id, cm.version) END,
               -- Who wrote the text: the summary tier's compression, and a summary row (content_json).
               'summary_by', CASE WHEN cm.fresh THEN json_build_object('model', cm.generating_model,
                                                                       'prompt_version', cm.prompt_version) END,
               'generated_by', CASE WHEN o.memory_type = 'summary'
                                     AND jsonb_typeof(o.content_json -> 'generated_by' -> 'model') = 'string'
                                     AND jsonb_typeof(o.content_json -> 'generated_by' -> 'prompt_version')
                                         = 'string'
                                    THEN json_build_object(
                                        'model', left(o.content_json -> 'generated_by' ->> 'model', 128),
                                        'prompt_version',
                                        left(o.content_json -> 'generated_by' ->> 'prompt_version', 64)) END,
               -- Stored o200k_base counts of the full and summary texts (NULL: the fitter counts them).
               'content_tokens', o.content_tokens,
               'summary_tokens', CASE WHEN cm.fresh THEN cm.content_tokens END,
               'annotations', coalesce(o.annotations, '[]'::jsonb))
               ORDER BY o.slice, o.slice_rank), '[]'::json)
      FROM unnest(in_rows) AS o
      -- The row's persisted compression (ctxasm.persisted_compressions), and whether it is of the row's text.
      LEFT JOIN persisted AS p ON p.memory_type = o.memory_type AND p.id = o.id AND p.version = o.version
      CROSS JOIN LATERAL (
          SELECT p.content, p.compression_id AS id, p.compression_version AS version, p.content_tokens,
                 p.generating_model, p.prompt_version,
                 CASE WHEN p.source_hash IS NOT NULL
                      THEN p.source_hash = encode(sha256(convert_to(o.content, 'UTF8')), 'hex') END AS fresh) AS cm
     WHERE ctxasm.competes(o) AND NOT o.cut
$$;
--rollback DROP FUNCTION ctxasm.candidate_items(ctxasm.selection_candidate[], varchar, pg_snapshot, timestamptz);

--changeset ctxasm:pg-selection-candidate-cuts dbms:postgresql runOnChange:true splitStatements:false
--comment: the document's candidate_cuts: per slice, how many competing rows the limit cut and the best priority
--comment: among them
DROP FUNCTION IF EXISTS ctxasm.candidate_cuts(ctxasm.selection_candidate[], jsonb);
CREATE OR REPLACE FUNCTION ctxasm.candidate_cuts(in_rows ctxasm.selection_candidate[], in_limits jsonb) RETURNS json
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(json_agg(json_build_object('slice', l.slice, 'rule', 'candidate_limit',
                                               'limit', (in_limits ->> l.slice)::integer, 'rows', l.rows,
                                               'below_priority', l.below_priority)
                             ORDER BY l.slice), '[]'::json)
      FROM (SELECT c.slice, count(*) AS rows, max(c.priority) AS below_priority
              FROM unnest(in_rows) AS c WHERE ctxasm.competes(c) AND c.cut GROUP BY c.slice) AS l
$$;
--rollback DROP FUNCTION ctxasm.candidate_cuts(ctxasm.selection_candidate[], jsonb);

--changeset ctxasm:pg-selection-recorded-sources dbms:postgresql runOnChange:true splitStatements:false
--comment: the source list as the manifest records it: one entry per row version (ctxasm.merged_sources), with
--comment: the figures each competing row was scored by, so a replay scores it alike. A row read carries its
--comment: merged entry already (ctxasm.source_rows): only the entries of references no row was read for (gone,
--comment: or not visible in the snapshot) are merged here. Merging the whole list again sorted every entry a
--comment: second time, the largest part of this call.
DROP FUNCTION IF EXISTS ctxasm.recorded_sources(ctxasm.selection_candidate[], jsonb);
CREATE OR REPLACE FUNCTION ctxasm.recorded_sources(in_rows ctxasm.selection_candidate[], in_sources jsonb)
RETURNS json
LANGUAGE sql IMMUTABLE AS $$
    -- One row per row version: source_rows reads each merged entry once, live or (replay) from the history,
    -- never both (a version the history keeps was retired, and its live row stamped, after the snapshot).
    WITH read AS MATERIALIZED (
        SELECT p.memory_type, p.id, p.version, p.origin, p.source AS item,
               CASE WHEN ctxasm.competes(p) THEN jsonb_strip_nulls(jsonb_build_object(
                   'logit', p.logit, 'bm25', p.bm25, 'similarity', p.similarity,
                   'adjacent_logit', CASE WHEN p.adjacent_logit >= p.own_logit THEN p.adjacent_logit END,
                   'thread_logit', p.thread_logit, 'length_logit', p.length_logit)) END AS figures
          FROM unnest(in_rows) AS p
    ),
    unread AS (
        SELECT m.memory_type, m.id, m.version, m.origin, m.item, NULL::jsonb AS figures
          FROM ctxasm.merged_sources(coalesce((
                   SELECT jsonb_agg(x.item ORDER BY x.at)
                     FROM jsonb_array_elements(in_sources) WITH ORDINALITY AS x(item, at)
                    WHERE NOT EXISTS (SELECT 1 FROM read AS r
                                       WHERE r.memory_type = x.item -> 'ref' ->> 0 AND r.id = x.item -> 'ref' ->> 1
                                         AND r.version = (x.item -> 'ref' ->> 2)::integer)), '[]'::jsonb)) AS m
    )
    -- The entries are jsonb (the figures merge into them), the list json text: see candidate_items.
    SELECT coalesce(json_agg(r.item ORDER BY r.precedence, r.slice, r.fused DESC NULLS LAST, r.memory_type, r.id,
                             r.version), '[]'::json)
      -- A live entry has none of the figures (only a recorded one, on replay, has), so it is not rebuilt.
      FROM (SELECT CASE WHEN s.item ?| ARRAY['logit', 'bm25', 'similarity', 'adjacent_logit', 'thread_logit',
                                             'length_logit']
                        THEN s.item - ARRAY['logit', 'bm25', 'similarity', 'adjacent_logit', 'thread_logit',
                                            'length_logit']
                        ELSE s.item END
                   || coalesce(s.figures, '{}'::jsonb) AS item,
                   array_position(ARRAY['tail', 'scope', 'retrieval', 'adjacent', 'claim', 'cited'], s.origin::text)
                       AS precedence,
                   s.item ->> 'slice' AS slice, (s.item ->> 'fused')::numeric AS fused,
                   s.memory_type, s.id, s.version
              FROM (SELECT * FROM read UNION ALL SELECT * FROM unread) AS s
           ) AS r
$$;
--rollback DROP FUNCTION ctxasm.recorded_sources(ctxasm.selection_candidate[], jsonb);
