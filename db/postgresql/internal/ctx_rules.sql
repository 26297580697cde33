--liquibase formatted sql logicalFilePath:db/packages/postgresql/0040_ctxasm_selection_helpers.sql

--changeset ctxasm:pg-sel-lexical-logit-dropped dbms:postgresql splitStatements:false
--comment: the word-overlap scorer is gone: relevance is hybrid (BM25 and embedding ranks) or a reranker's
DROP FUNCTION IF EXISTS ctxasm.lexical_logit(text, text);
--rollback SELECT 1;

--changeset ctxasm:pg-sel-scope-level dbms:postgresql runOnChange:true splitStatements:false
--comment: how narrow a row's scope is, by containment (docs/assembly.md): a thread lies within a user, a user
--comment: within an agent's deployment, an agent within the tenant. The narrowest column set decides: 3 thread,
--comment: 2 user, 1 agent, 0 the whole tenant. Narrower wins a key or a claim.
CREATE OR REPLACE FUNCTION ctxasm.scope_level(in_user_id varchar, in_agent_id varchar, in_thread_id varchar)
RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN in_thread_id IS NOT NULL THEN 3 WHEN in_user_id IS NOT NULL THEN 2
                WHEN in_agent_id IS NOT NULL THEN 1 ELSE 0 END
$$;
--rollback DROP FUNCTION ctxasm.scope_level(varchar, varchar, varchar);

--changeset ctxasm:pg-sel-hybrid-logit dbms:postgresql runOnChange:true splitStatements:false
--comment: the hybrid scorer (hybrid-calibrated-2), used when no reranker scores are given: a logit from the
--comment: cosine similarity of the question and row embeddings (all-MiniLM-L6-v2: unrelated texts sit near
--comment: 0.2, related ones above 0.5) and the row's BM25 score relative to the best in its slice:
--comment: 12 (similarity - 0.35) + 1.5 bm25 / best_bm25. Measured on the labelled corpus and the conversation
--comment: set, it ranks above either signal alone and above reciprocal rank fusion (docs/assembly.md).
CREATE OR REPLACE FUNCTION ctxasm.hybrid_logit(in_similarity double precision, in_bm25 double precision,
                                               in_best_bm25 double precision)
RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
    SELECT round((12 * (coalesce(in_similarity, 0) - 0.35)
                  + 1.5 * coalesce(in_bm25, 0) / greatest(coalesce(in_best_bm25, 0), 1e-9))::numeric, 6)
$$;
--rollback DROP FUNCTION ctxasm.hybrid_logit(double precision, double precision, double precision);

--changeset ctxasm:pg-sel-length-logit dbms:postgresql runOnChange:true splitStatements:false
--comment: what a recalled turn's length adds to its relevance (logits): ln(its stored token count / the mean
--comment: count of the recalled turns of its voice it competes with), within -in_cap and in_cap, rounded to 6
--comment: decimals. Two things the hybrid scorer's signals miss in a long turn: one embedding averages every
--comment: topic the turn touches, so a long turn that answers the question sits lower than a short one that only
--comment: echoes it; and the turns people put the facts into (what happened, when, with whom) are the long ones.
--comment: Measured on public LoCoMo conversations held out from tuning (docs/conversation-eval.md). Computed in
--comment: double precision: an exact ln in numeric costs some microseconds a row. Oracle: ctx_rules.length_logit,
--comment: the same.
CREATE OR REPLACE FUNCTION ctxasm.length_logit(in_tokens integer, in_mean_tokens numeric, in_cap numeric)
RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
    SELECT greatest(-in_cap, least(in_cap, round(ln(in_tokens::double precision
                                                    / in_mean_tokens::double precision)::numeric, 6)))
$$;
--rollback DROP FUNCTION ctxasm.length_logit(integer, numeric, numeric);

--changeset ctxasm:pg-sel-rounded-sigmoid dbms:postgresql runOnChange:true splitStatements:false
--comment: 1 / (1 + e^-logit) rounded to 6 decimals (a candidate's rerank), always the figure numeric
--comment: arithmetic gives: computed in double precision, whose error (about 1e-15) cannot move a value across
--comment: a rounding boundary unless it lies within 1e-10 of one; only then, and for logits beyond +-40 (where
--comment: e^-logit would overflow a double), in numeric. A numeric exp costs about 7 us, a tenth of a
--comment: millisecond every 15 candidates.
CREATE OR REPLACE FUNCTION ctxasm.rounded_sigmoid(in_logit numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN abs(in_logit) > 40
                     OR abs(1e6 / (1 + exp(-in_logit::double precision))
                            - floor(1e6 / (1 + exp(-in_logit::double precision))) - 0.5) < 1e-4
                THEN round(1 / (1 + exp(-in_logit)), 6)
                ELSE round((1 / (1 + exp(-in_logit::double precision)))::numeric, 6) END
$$;
--rollback DROP FUNCTION ctxasm.rounded_sigmoid(numeric);

--changeset ctxasm:pg-sel-claim-key dbms:postgresql runOnChange:true splitStatements:false
--comment: claim identity: subject, predicate and conditions; entity rows carry it in columns, derived rows
--comment: may declare one in content_json.claim; NULL when a row makes no claim
CREATE OR REPLACE FUNCTION ctxasm.claim_key(in_subject varchar, in_predicate varchar, in_content_json jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN in_subject IS NOT NULL THEN
            in_subject || '|' || in_predicate || '|' || coalesce((in_content_json -> 'conditions')::text, '{}')
        WHEN jsonb_typeof(in_content_json -> 'claim') = 'object' THEN
            (in_content_json -> 'claim' ->> 'subject') || '|' || (in_content_json -> 'claim' ->> 'predicate')
            || '|' || coalesce((in_content_json -> 'claim' -> 'conditions')::text, '{}')
    END
$$;
--rollback DROP FUNCTION ctxasm.claim_key(varchar, varchar, jsonb);

--changeset ctxasm:pg-sel-authority dbms:postgresql runOnChange:true splitStatements:false
--comment: which copy of a duplicate is kept: canonical facts, then procedures, evidence, summaries, turns
CREATE OR REPLACE FUNCTION ctxasm.authority(in_memory_type varchar) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    -- generated: authority from contract/memory_types.toml; edit the catalogue, then regenerate
    SELECT CASE in_memory_type
        WHEN 'entity' THEN 1 WHEN 'workflow' THEN 2 WHEN 'kb_document' THEN 3 WHEN 'kb_chunk' THEN 3
        WHEN 'summary' THEN 4 WHEN 'conversation' THEN 5 ELSE 9 END
    -- end generated: authority
$$;
--rollback DROP FUNCTION ctxasm.authority(varchar);

--changeset ctxasm:pg-sel-asks-about-present dbms:postgresql runOnChange:true splitStatements:false
--comment: whether a question asks about the present ("is it still ...", "what is the latest ..."): then recency
--comment: counts in full in the priority; otherwise it only breaks near-ties (docs/assembly.md, "Choosing the
--comment: weights"). Whole words, any case. A question that names a year or a month ("what did she recently
--comment: watch on 7 February, 2022?") asks about that time, whose "recent" is not the window's: recency then
--comment: only breaks near-ties. "may" names the month only next to a number.
CREATE OR REPLACE FUNCTION ctxasm.asks_about_present(in_question text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT lower(in_question) ~ ('(^|[^a-z])(now|nowadays|current|currently|latest|newest|recent|recently|lately|'
                                 'still|today|anymore)([^a-z]|$)')
       AND lower(in_question) !~ ('(^|[^0-9])(19|20)[0-9]{2}([^0-9]|$)'
                                  '|(^|[^a-z])(january|february|march|april|june|july|august|september|october|'
                                  'november|december)([^a-z]|$)'
                                  '|[0-9](st|nd|rd|th)? +may([^a-z]|$)|(^|[^a-z])may +[0-9]')
$$;
--rollback DROP FUNCTION ctxasm.asks_about_present(text);

--changeset ctxasm:pg-sel-question-words dbms:postgresql runOnChange:true splitStatements:false
--comment: a text as the words a name is looked for in: lower case, every run of characters that are not letters
--comment: or digits one space, and a space at each end, so that ' maya ' is found only as whole words ("Maya's"
--comment: is ' maya s '). Oracle: ctx_rules.question_words, the same.
CREATE OR REPLACE FUNCTION ctxasm.question_words(in_text text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT ' ' || btrim(regexp_replace(lower(in_text), '[^[:alnum:]]+', ' ', 'g')) || ' '
$$;
--rollback DROP FUNCTION ctxasm.question_words(text);

--changeset ctxasm:pg-sel-names-speaker dbms:postgresql runOnChange:true splitStatements:false
--comment: whether a question (its ctxasm.question_words) names a turn's speaker: all of the speaker's words, in
--comment: order, as whole words of the question. False for no speaker, and for a name with no letter or digit.
--comment: Oracle: ctx_rules.names_speaker (1 or 0).
CREATE OR REPLACE FUNCTION ctxasm.names_speaker(in_question_words text, in_speaker text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(n.words <> '  ' AND position(n.words IN in_question_words) > 0, false)
      FROM (SELECT ctxasm.question_words(in_speaker) AS words) AS n
$$;
--rollback DROP FUNCTION ctxasm.names_speaker(text, text);

--changeset ctxasm:pg-sel-question-period dbms:postgresql runOnChange:true splitStatements:false
--comment: the time a question (its ctxasm.question_words) names, as [out_from, out_to), UTC: a day ("on 7 July
--comment: 2023", "on May 3rd, 2023") is that day; a month and year ("in December 2023") is that month and the week
--comment: after it, when what happened in it is still told; a day or a month without a year ("on 7 July", "in
--comment: June") is the latest such day or month on or before the evaluation time (a month alone only after "in"
--comment: or "during": "may" is a word too). The first form found in that order counts; NULL and NULL for none,
--comment: and for a day its month does not have. Oracle: ctx_rules.question_period, the same.
DROP FUNCTION IF EXISTS ctxasm.question_period(text, timestamptz);
CREATE OR REPLACE FUNCTION ctxasm.question_period(in_question_words text, in_evaluation_time timestamptz,
                                                  OUT out_from timestamptz, OUT out_to timestamptz)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    co_month_names constant text[] := ARRAY['january', 'february', 'march', 'april', 'may', 'june', 'july',
                                            'august', 'september', 'october', 'november', 'december'];
    co_month       constant text := '(' || array_to_string(co_month_names, '|') || ')';
    co_day         constant text := '([0-9]{1,2})(st|nd|rd|th)?';
    -- the forms in the order they count ("7 july 2023", "july 7th 2023", "july 2023", "7 july", "july 7th", "in
    -- july"), and where in each the year, the month and the day are (0: not in it)
    co_forms       constant text[] := ARRAY[' ' || co_day || ' ' || co_month || ' ([0-9]{4}) ',
                                            ' ' || co_month || ' ' || co_day || ' ([0-9]{4}) ',
                                            ' ' || co_month || ' ([0-9]{4}) ',
                                            ' ' || co_day || ' ' || co_month || ' ',
                                            ' ' || co_month || ' ' || co_day || ' ',
                                            ' (in|during) ' || co_month || ' '];
    co_year_at     constant integer[] := ARRAY[4, 4, 2, 0, 0, 0];
    co_month_at    constant integer[] := ARRAY[3, 1, 1, 3, 1, 2];
    co_day_at      constant integer[] := ARRAY[1, 2, 0, 1, 2, 0];
    -- how long after a month what happened in it is still told (a conversation reports last week's news)
    co_told_within constant interval := interval '7 days';
    l_form   integer;
    l_today  date := (in_evaluation_time AT TIME ZONE 'UTC')::date;
    l_match  text[];
    l_year   integer;
    l_month  integer;
    l_day    integer;
    l_start  date;
BEGIN
    FOR l_at IN 1 .. cardinality(co_forms) LOOP
        l_match := regexp_match(in_question_words, co_forms[l_at]);
        IF l_match IS NOT NULL THEN
            l_form := l_at;
            EXIT;
        END IF;
    END LOOP;
    IF l_form IS NULL THEN
        RETURN;
    END IF;
    -- a place of 0 is outside the match's array: NULL
    l_year := l_match[co_year_at[l_form]];
    l_month := array_position(co_month_names, l_match[co_month_at[l_form]]);
    l_day := l_match[co_day_at[l_form]];
    IF l_year IS NULL THEN
        -- the latest such day or month on or before the evaluation time
        l_year := extract(year FROM l_today)::integer;
        IF make_date(l_year, l_month, 1) > l_today
           OR (l_day IS NOT NULL AND l_month = extract(month FROM l_today) AND l_day > extract(day FROM l_today)) THEN
            l_year := l_year - 1;
        END IF;
    END IF;
    IF l_year < 1 THEN
        RETURN;
    END IF;
    l_start := make_date(l_year, l_month, 1);
    IF l_day IS NULL THEN
        out_from := l_start::timestamp AT TIME ZONE 'UTC';
        out_to := ((l_start + interval '1 month')::date + co_told_within)::timestamp AT TIME ZONE 'UTC';
    ELSIF l_day BETWEEN 1 AND extract(day FROM l_start + interval '1 month' - interval '1 day') THEN
        out_from := (l_start + l_day - 1)::timestamp AT TIME ZONE 'UTC';
        out_to := (l_start + l_day)::timestamp AT TIME ZONE 'UTC';
    END IF;
END;
$$;
--rollback DROP FUNCTION ctxasm.question_period(text, timestamptz);
