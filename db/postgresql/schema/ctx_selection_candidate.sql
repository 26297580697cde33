--liquibase formatted sql
-- The candidate row of the selection (CTX_SELECTION, db/postgresql/internal/ctx_selection.sql): the type the rows
-- pass between the steps in, as arrays of it. The twin of Oracle's schema/ctx_selection_candidate (an object type,
-- with the nested table ctx_selection_candidates where PostgreSQL has arrays). Its attributes: the source entry and
-- the steps' columns, memory_row's columns, then the step columns added since (after the last changeset's rule).

--changeset ctxasm:pg-selection-candidate-type dbms:postgresql splitStatements:false
--comment: a row as the selection weighs it: where it came from and the columns each step adds, in step order,
--comment: then ctxasm.memory_row's columns in its order (ctxasm.candidate_rows builds it as (figures, memory.*)).
--comment: A shared column the catalogue adds comes at the end of memory_row; the changeset after this one adds it
--comment: here, at the end too.
CREATE TYPE ctxasm.selection_candidate AS (
    -- the source entry (ctxasm.candidate_rows)
    origin           varchar,
    source           jsonb,
    -- scope_step
    scope_level      integer,
    authority        integer,
    slice            varchar,
    -- lifecycle_step: NULL = in effect
    lifecycle_reason varchar,
    claim_key        text,
    -- dedup_step: the kept copy's [type, id, version]
    duplicate_of     jsonb,
    -- conflict_step: a fixed row's rank within its key (1 wins), a claim's loser's winner
    key_rank         bigint,
    beaten_by        jsonb,
    -- required_step: the notes of history that cites a version no longer in effect; required = never cut
    annotations      jsonb,
    required         boolean,
    -- score_step
    own_logit        numeric,
    bm25             numeric,
    similarity       numeric,
    adjacent_logit   numeric,
    thread_logit     numeric,
    logit            numeric,
    rerank           numeric,
    confidence_score numeric,
    recency          numeric,
    -- priority_step
    priority         numeric,
    -- tie_break_step
    slice_rank       bigint,
    -- limit_step
    cut              boolean,
    -- the row: ctxasm.memory_row's columns
    memory_type      varchar,
    table_name       varchar,
    tenant_id        varchar,
    id               varchar,
    version          integer,
    user_id          varchar,
    agent_id         varchar,
    thread_id        varchar,
    status           varchar,
    valid_from       timestamptz,
    valid_until      timestamptz,
    deleted_at       timestamptz,
    content          text,
    content_json     jsonb,
    source_refs      jsonb,
    confidence       numeric,
    key_name         varchar,
    subject          varchar,
    predicate        varchar,
    title            varchar,
    turn_index       integer,
    role             varchar,
    event_type       varchar,
    extra            jsonb,
    created_xid      xid8,
    content_tokens   integer,
    embedding        public.vector,
    search_text      tsvector,
    text_key         char(32),
    pointer_text     text
);
--rollback DROP TYPE ctxasm.selection_candidate;

--changeset ctxasm:pg-selection-candidate-follows-memory-row dbms:postgresql runAlways:true runOnChange:true splitStatements:false
--comment: the type's end: memory_row's columns in the view's order (a shared column the catalogue added after the
--comment: type was made comes last of them), then the step columns added after the type was made (score_step's
--comment: length_logit). A composite type takes a new attribute only at its end, and one taken off leaves a hole
--comment: that every row of the type then carries (a fifth more time for each array a step rebuilds), so the late
--comment: step columns go after memory_row's and only they are ever taken off and put back: when memory_row has
--comment: a column the type lacks, or a late column is out of place.
DO $$
DECLARE
    -- the step columns added after the type was made, in order, and their types
    -- generated: late step columns from py/ctxasm_dev/contract/unions.py; edit PG_LATE_STEP_COLUMNS, then regenerate
    co_late_names constant name[] := ARRAY['length_logit'];
    co_late_types constant text[] := ARRAY['numeric'];
    -- end generated: late step columns
    l_column record;
    l_memory name[];
    l_type   name[];
    l_index  integer;
BEGIN
    l_memory := ARRAY(SELECT a.attname FROM pg_catalog.pg_attribute AS a
                       WHERE a.attrelid = 'ctxasm.memory_row'::regclass AND a.attnum > 0 AND NOT a.attisdropped
                       ORDER BY a.attnum);
    l_type := ARRAY(SELECT a.attname FROM pg_catalog.pg_attribute AS a
                     WHERE a.attrelid = 'ctxasm.selection_candidate'::regclass AND a.attnum > 0
                       AND NOT a.attisdropped
                     ORDER BY a.attnum);
    IF l_type[cardinality(l_type) - cardinality(co_late_names) + 1:] IS DISTINCT FROM co_late_names
       OR NOT l_memory <@ l_type THEN
        FOR l_index IN 1 .. cardinality(co_late_names) LOOP
            IF co_late_names[l_index] = ANY (l_type) THEN
                EXECUTE format('ALTER TYPE ctxasm.selection_candidate DROP ATTRIBUTE %I', co_late_names[l_index]);
            END IF;
        END LOOP;
        FOR l_column IN
            SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS column_type
              FROM pg_catalog.pg_attribute AS a
             WHERE a.attrelid = 'ctxasm.memory_row'::regclass AND a.attnum > 0 AND NOT a.attisdropped
               AND a.attname <> ALL (l_type)
             ORDER BY a.attnum
        LOOP
            EXECUTE format('ALTER TYPE ctxasm.selection_candidate ADD ATTRIBUTE %I %s', l_column.attname,
                           l_column.column_type);
        END LOOP;
        FOR l_index IN 1 .. cardinality(co_late_names) LOOP
            EXECUTE format('ALTER TYPE ctxasm.selection_candidate ADD ATTRIBUTE %I %s', co_late_names[l_index],
                           co_late_types[l_index]);
        END LOOP;
        l_type := ARRAY(SELECT a.attname FROM pg_catalog.pg_attribute AS a
                         WHERE a.attrelid = 'ctxasm.selection_candidate'::regclass AND a.attnum > 0
                           AND NOT a.attisdropped
                         ORDER BY a.attnum);
    END IF;
    -- The type must end with memory_row's columns in its order, then the late step columns: a shared column
    -- named like a step's column would not be added above, and every window would then build its rows wrong.
    IF l_type[cardinality(l_type) - cardinality(l_memory) - cardinality(co_late_names) + 1:]
       IS DISTINCT FROM l_memory || co_late_names THEN
        RAISE EXCEPTION 'ctxasm.selection_candidate does not end with the columns of ctxasm.memory_row and then '
            '%: a shared column may not take the name of a selection step''s column '
            '(db/postgresql/internal/ctx_selection.sql)', co_late_names;
    END IF;
END;
$$;
--rollback SELECT 1;
