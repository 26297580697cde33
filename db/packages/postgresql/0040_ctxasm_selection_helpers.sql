--liquibase formatted sql

--changeset ctxasm:pg-sel-lexical-logit dbms:postgresql runOnChange:true splitStatements:false
--comment: the deterministic lexical scorer used when no reranker scores are given ('lexical-overlap-1'):
--comment: the share of the question's words (3+ letters) found in the text, mapped to a logit in [-4, 4]
CREATE OR REPLACE FUNCTION ctxasm.lexical_logit(in_query text, in_text text) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
    WITH q AS (
        SELECT DISTINCT w FROM regexp_split_to_table(lower(in_query), '[^[:alnum:]]+') AS w WHERE length(w) >= 3
    ), d AS (
        SELECT DISTINCT w FROM regexp_split_to_table(lower(in_text), '[^[:alnum:]]+') AS w WHERE length(w) >= 3
    )
    SELECT CASE WHEN count(*) = 0 THEN -4.0
                ELSE round(8.0 * count(d.w)::numeric / count(*) - 4.0, 6) END
      FROM q LEFT JOIN d USING (w)
$$;
--rollback DROP FUNCTION ctxasm.lexical_logit(text, text);

--changeset ctxasm:pg-sel-normalized-text dbms:postgresql runOnChange:true splitStatements:false
--comment: the text identity of the dedup step: case and white space do not make a different memory
CREATE OR REPLACE FUNCTION ctxasm.normalized_text(in_text text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT btrim(regexp_replace(lower(in_text), '\s+', ' ', 'g'))
$$;
--rollback DROP FUNCTION ctxasm.normalized_text(text);

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
    SELECT CASE in_memory_type
        WHEN 'entity' THEN 1 WHEN 'workflow' THEN 2 WHEN 'kb_chunk' THEN 3 WHEN 'kb_document' THEN 3
        WHEN 'summary' THEN 4 WHEN 'conversation' THEN 5 ELSE 9 END
$$;
--rollback DROP FUNCTION ctxasm.authority(varchar);

--changeset ctxasm:pg-sel-pointer-line dbms:postgresql runOnChange:true splitStatements:false
--comment: the pointer tier's one line: the first sentence, cut at a word boundary to at most 60 characters
CREATE OR REPLACE FUNCTION ctxasm.pointer_line(in_text text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN length(s.line) <= 60 THEN s.line
                ELSE regexp_replace(left(s.line, 60), '\s+\S*$', '') || '...' END
      FROM (SELECT btrim(split_part(regexp_replace(in_text, '\s+', ' ', 'g'), '. ', 1)) AS line) AS s
$$;
--rollback DROP FUNCTION ctxasm.pointer_line(text);
