--liquibase formatted sql
-- The candidate row of the selection (CTX_SELECTION, db/postgresql/internal/ctx_selection.sql): the type the rows
-- pass between the steps in, as arrays of it. The twin of Oracle's schema/ctx_selection_candidate (an object type,
-- with the nested table ctx_selection_candidates where PostgreSQL has arrays).

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

--changeset ctxasm:pg-selection-candidate-follows-memory-row dbms:postgresql runAlways:true splitStatements:false
--comment: the columns ctxasm.memory_row has and ctxasm.selection_candidate lacks (a shared column the catalogue
--comment: added after the type was made), added at the type's end in the view's order
DO $$
DECLARE
    l_column record;
    l_memory name[];
    l_type   name[];
BEGIN
    FOR l_column IN
        SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS column_type
          FROM pg_catalog.pg_attribute AS a
         WHERE a.attrelid = 'ctxasm.memory_row'::regclass AND a.attnum > 0 AND NOT a.attisdropped
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute AS t
                            WHERE t.attrelid = 'ctxasm.selection_candidate'::regclass AND t.attname = a.attname
                              AND t.attnum > 0 AND NOT t.attisdropped)
         ORDER BY a.attnum
    LOOP
        EXECUTE format('ALTER TYPE ctxasm.selection_candidate ADD ATTRIBUTE %I %s', l_column.attname,
                       l_column.column_type);
    END LOOP;
    -- The type must end with memory_row's columns in its order: a shared column named like a step's column
    -- would not be added above, and every window would then build its rows wrong.
    l_memory := ARRAY(SELECT a.attname FROM pg_catalog.pg_attribute AS a
                       WHERE a.attrelid = 'ctxasm.memory_row'::regclass AND a.attnum > 0 AND NOT a.attisdropped
                       ORDER BY a.attnum);
    l_type := ARRAY(SELECT a.attname FROM pg_catalog.pg_attribute AS a
                     WHERE a.attrelid = 'ctxasm.selection_candidate'::regclass AND a.attnum > 0
                       AND NOT a.attisdropped
                     ORDER BY a.attnum);
    IF l_type[cardinality(l_type) - cardinality(l_memory) + 1:] IS DISTINCT FROM l_memory THEN
        RAISE EXCEPTION 'ctxasm.selection_candidate does not end with the columns of ctxasm.memory_row: a shared '
            'column may not take the name of a selection step''s column (db/postgresql/internal/ctx_selection.sql)';
    END IF;
END;
$$;
--rollback SELECT 1;

--changeset ctxasm:pg-selection-candidate-length-logit dbms:postgresql runAlways:true runOnChange:true splitStatements:false
--comment: score_step's length_logit (a recalled turn's lift for its length) follows thread_logit. The type above
--comment: was made without it, and a composite type takes a new attribute only at its end: the attributes after
--comment: thread_logit are taken off and put back after it, in their order, so the rows still end with
--comment: memory_row's columns. No table stores the type, so nothing is rewritten. Runs once per database.
DO $$
DECLARE
    l_after  smallint;
    l_names  name[];
    l_types  text[];
    l_index  integer;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
                WHERE attrelid = 'ctxasm.selection_candidate'::regclass AND attname = 'length_logit'
                  AND attnum > 0 AND NOT attisdropped) THEN
        RETURN;
    END IF;
    SELECT attnum INTO STRICT l_after FROM pg_catalog.pg_attribute
     WHERE attrelid = 'ctxasm.selection_candidate'::regclass AND attname = 'thread_logit' AND NOT attisdropped;
    SELECT array_agg(a.attname ORDER BY a.attnum), array_agg(format_type(a.atttypid, a.atttypmod) ORDER BY a.attnum)
      INTO l_names, l_types
      FROM pg_catalog.pg_attribute AS a
     WHERE a.attrelid = 'ctxasm.selection_candidate'::regclass AND a.attnum > l_after AND NOT a.attisdropped;
    FOR l_index IN 1 .. cardinality(l_names) LOOP
        EXECUTE format('ALTER TYPE ctxasm.selection_candidate DROP ATTRIBUTE %I', l_names[l_index]);
    END LOOP;
    ALTER TYPE ctxasm.selection_candidate ADD ATTRIBUTE length_logit numeric;
    FOR l_index IN 1 .. cardinality(l_names) LOOP
        EXECUTE format('ALTER TYPE ctxasm.selection_candidate ADD ATTRIBUTE %I %s', l_names[l_index],
                       l_types[l_index]);
    END LOOP;
END;
$$;
--rollback SELECT 1;
