--liquibase formatted sql logicalFilePath:db/packages/postgresql/0045_ctxasm_retrieval.sql

--changeset ctxasm:pg-internal-retrieve-evidence-dropped dbms:postgresql splitStatements:false
--comment: the evidence-only retriever is replaced by ctxasm.retrieve, which serves every retrieved slice
DROP FUNCTION IF EXISTS ctxasm.retrieve_evidence(varchar, varchar, varchar, timestamptz, text, vector, integer,
                                                 integer);
--rollback SELECT 1;

--changeset ctxasm:pg-internal-slice-types dbms:postgresql runOnChange:true splitStatements:false
--comment: the memory types retrieval searches for a slice
CREATE OR REPLACE FUNCTION ctxasm.slice_types(in_slice varchar) RETURNS varchar[]
LANGUAGE sql IMMUTABLE AS $$
    -- generated: slice types from contract/memory_types.toml; edit the catalogue, then regenerate
    SELECT CASE in_slice WHEN 'durable_facts' THEN ARRAY['entity', 'workflow']::varchar[]
                         WHEN 'evidence' THEN ARRAY['kb_chunk', 'kb_document']::varchar[]
                         WHEN 'recalled_history' THEN ARRAY['conversation', 'summary']::varchar[] END
    -- end generated: slice types
$$;
--rollback DROP FUNCTION ctxasm.slice_types(varchar);

--changeset ctxasm:pg-internal-question-terms dbms:postgresql runOnChange:true splitStatements:false
--comment: the question's English lexemes, each with its inverse document frequency in the tenant's partition of
--comment: each searchable table, estimated from that partition's own planner statistics (the lexeme
--comment: frequencies ANALYZE keeps for a tsvector column): idf = ln(1 + (N - df + 0.5) / (df + 0.5)). A lexeme
--comment: the statistics do not list is rarer than every listed one: df is taken as half the least listed
--comment: frequency. A partition never analyzed has no statistics: every lexeme gets idf 1 and df NULL.
--comment: The question is tokenized here once per assembly; selection and retrieval reuse the result.
DROP FUNCTION IF EXISTS ctxasm.question_terms(varchar, text);
CREATE OR REPLACE FUNCTION ctxasm.question_terms(in_tenant_id varchar, in_question text)
RETURNS TABLE (memory_type varchar, lexeme text, idf double precision, df double precision,
               row_count double precision)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH words AS (
        SELECT DISTINCT w.lexeme FROM unnest(tsvector_to_array(to_tsvector('english', in_question))) AS w(lexeme)
    ),
    searchable (memory_type, table_name) AS (
        -- generated: searchable tables from contract/memory_types.toml; edit the catalogue, then regenerate
        VALUES ('entity'::varchar, 'entity_memory'::varchar), ('workflow', 'workflow_memory'),
               ('kb_chunk', 'knowledge_base_chunk'), ('kb_document', 'knowledge_base_document'),
               ('conversation', 'conversation_memory'), ('summary', 'summarization_memory')
        -- end generated: searchable tables
    ),
    partitions AS (
        SELECT t.memory_type, p.partition_name AS partition
          FROM searchable AS t
          JOIN ctxasm.tenant_partitions(in_tenant_id, ARRAY(SELECT s.table_name FROM searchable AS s)) AS p
            ON p.table_name = t.table_name
    ),
    -- The partitions' statistics in one read of the pg_stats view, its table names given as a list (a join to
    -- the view per partition had the planner read the statistics of every table of the schema).
    partition_stats AS MATERIALIZED (
        SELECT p.memory_type, greatest(c.reltuples, 1)::double precision AS row_count,
               CASE WHEN c.reltuples > 0 THEN st.elems END AS elems,
               CASE WHEN c.reltuples > 0 THEN st.freqs END AS freqs
          FROM partitions AS p
          -- Each partition's row count by its oid (an index lookup): joined on the oid as an expression, the
          -- planner hashed a scan of all of pg_class, whose size grows with every tenant's partitions.
          LEFT JOIN LATERAL (SELECT k.reltuples FROM pg_catalog.pg_class AS k
                              WHERE k.oid = to_regclass('ctxasm.' || quote_ident(p.partition))) AS c ON TRUE
          LEFT JOIN (
              SELECT s.tablename, s.most_common_elems::text::text[] AS elems, s.most_common_elem_freqs AS freqs
                FROM pg_catalog.pg_stats AS s
               WHERE s.schemaname = 'ctxasm' AND s.attname = 'search_text' AND NOT s.inherited
                 AND s.tablename = ANY (ARRAY(SELECT q.partition::name FROM partitions AS q))
          ) AS st ON st.tablename = p.partition
    ),
    -- The question's lexemes among each partition's listed ones, by one hashed join of the lists: looking each
    -- lexeme up by array_position compared it with every listed lexeme in turn (a thousand or so a partition),
    -- which cost more than reading the statistics.
    listed AS (
        SELECT p.memory_type, e.lexeme, min(e.at) AS at
          FROM partition_stats AS p
         CROSS JOIN LATERAL unnest(p.elems) WITH ORDINALITY AS e(lexeme, at)
         WHERE e.lexeme IN (SELECT w.lexeme FROM words AS w)
         GROUP BY p.memory_type, e.lexeme
    ),
    estimated AS (
        SELECT p.memory_type, w.lexeme, p.row_count,
               CASE WHEN p.elems IS NULL THEN NULL
                    ELSE p.row_count * coalesce(p.freqs[l.at], p.freqs[cardinality(p.elems) + 1] / 2) END AS df
          FROM partition_stats AS p CROSS JOIN words AS w
          LEFT JOIN listed AS l ON l.memory_type = p.memory_type AND l.lexeme = w.lexeme
    )
    SELECT e.memory_type, e.lexeme,
           CASE WHEN e.df IS NULL THEN 1.0
                ELSE ln(1 + (e.row_count - e.df + 0.5) / (e.df + 0.5)) END,
           e.df, e.row_count
      FROM estimated AS e
$$;
--rollback DROP FUNCTION ctxasm.question_terms(varchar, text);

--changeset ctxasm:pg-internal-lexeme-query dbms:postgresql runOnChange:true splitStatements:false
--comment: the tsquery that matches exactly one lexeme, taken as it is (no parsing into words, no dictionary): the
--comment: lexeme quoted, its quotes and backslashes doubled, so any character, an operator's or a quote's, stays
--comment: part of it
CREATE OR REPLACE FUNCTION ctxasm.lexeme_query(in_lexeme text) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT ('''' || replace(replace(in_lexeme, '\', '\\'), '''', '''''') || '''')::tsquery
$$;
--rollback DROP FUNCTION ctxasm.lexeme_query(text);

--changeset ctxasm:pg-internal-term-queries dbms:postgresql runOnChange:true splitStatements:false
--comment: each of the question's lexemes as its single-lexeme tsquery (ctxasm.lexeme_query), position for position
CREATE OR REPLACE FUNCTION ctxasm.term_queries(in_term_lexemes text[]) RETURNS tsquery[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT array_agg(ctxasm.lexeme_query(t.lexeme) ORDER BY t.at)
      FROM unnest(in_term_lexemes) WITH ORDINALITY AS t(lexeme, at)
$$;
--rollback DROP FUNCTION ctxasm.term_queries(text[]);

--changeset ctxasm:pg-internal-matched-idf dbms:postgresql runOnChange:true splitStatements:false
--comment: the summed idf of the question's lexemes a row's text holds, with the weights of the row's type
--comment: (in_term_*: ctxasm.question_terms' columns), as one row: the row's lexemes taken as a set. The question's
--comment: lexemes are marked in the row's tsvector (setweight looks each one up among the vector's sorted lexemes)
--comment: and only the marked ones are looked up among the terms, by position (array_positions: one per type
--comment: that has the lexeme). The search_text columns are plain to_tsvector, without weights of their own, so
--comment: the marked lexemes are exactly the matched ones. A set-returning SQL function without settings, so a
--comment: call is inlined into the caller's query. It costs about 9 us a row of 70 lexemes, whatever the number
--comment: of terms: what ctxasm.matched_idf_sql writes for a question of many words.
CREATE OR REPLACE FUNCTION ctxasm.matched_idf(in_text tsvector, in_memory_type varchar, in_term_types varchar[],
                                              in_term_lexemes text[], in_term_idf double precision[])
RETURNS TABLE (matched_idf double precision)
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(sum(in_term_idf[p.at]), 0)::double precision
      FROM unnest(tsvector_to_array(ts_filter(setweight(in_text, 'A', in_term_lexemes), '{a}'))) AS m(lexeme)
     CROSS JOIN LATERAL unnest(array_positions(in_term_lexemes, m.lexeme)) AS p(at)
     WHERE in_term_types[p.at] = in_memory_type
$$;
--rollback DROP FUNCTION ctxasm.matched_idf(tsvector, varchar, varchar[], text[], double precision[]);

--changeset ctxasm:pg-internal-matched-idf-sql dbms:postgresql runOnChange:true splitStatements:false
--comment: ctxasm.matched_idf as a SQL expression for a statement that reads rows of in_row_types and is planned
--comment: for the window. With few terms of those types (at most co_inline_terms), one test per term of the row's
--comment: type (CASE on in_type, the row's memory type): the term's lexeme looked up in in_text (the row's
--comment: tsvector) by its single-lexeme tsquery $<in_params[4]>[i] (ctxasm.term_queries), adding
--comment: $<in_params[3]>[i] (the idf). A lookup is a binary search of the row's sorted lexemes, about 0.15 us;
--comment: the set costs about 9 us a row of 70 lexemes. But each written test costs about 6 us to plan, so a
--comment: question of many words (hundreds of terms) is weighed by ctxasm.matched_idf instead, with the terms as
--comment: parameters $<in_params[1..3]> (types, lexemes, idf). The tests are added in a tsvector's lexeme order, the
--comment: order ctxasm.matched_idf sums in: both forms give the same float to the last bit. Only positions and the
--comment: catalogue's type names are written into the text; the lexemes stay parameters.
CREATE OR REPLACE FUNCTION ctxasm.matched_idf_sql(in_text text, in_type text, in_row_types varchar[],
                                                  in_term_types varchar[], in_term_lexemes text[],
                                                  in_params integer[])
RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    -- The most tests written into a statement: beyond about 40, planning them costs more than the set form saves
    -- on a few hundred rows.
    co_inline_terms constant integer := 32;
    l_terms integer;
    l_expression text;
BEGIN
    SELECT count(*) INTO l_terms
      FROM unnest(in_term_types, in_term_lexemes) AS t(kind, lexeme)
     WHERE t.kind = ANY (in_row_types) AND t.lexeme IS NOT NULL;
    IF l_terms > co_inline_terms THEN
        RETURN format('(SELECT m.matched_idf FROM ctxasm.matched_idf(%s, %s, $%s, $%s, $%s) AS m)', in_text, in_type,
                      in_params[1], in_params[2], in_params[3]);
    END IF;
    WITH terms AS (
        SELECT t.kind, t.lexeme, t.at
          FROM unnest(in_term_types, in_term_lexemes) WITH ORDINALITY AS t(kind, lexeme, at)
         WHERE t.kind = ANY (in_row_types) AND t.lexeme IS NOT NULL
    ),
    tsvector_order AS (
        SELECT o.lexeme, o.rank
          FROM unnest(tsvector_to_array(array_to_tsvector(ARRAY(SELECT DISTINCT t.lexeme FROM terms AS t))))
               WITH ORDINALITY AS o(lexeme, rank)
    ),
    per_type AS (
        SELECT t.kind, string_agg(format('CASE WHEN %s @@ $%s[%s] THEN $%s[%s] ELSE 0 END', in_text, in_params[4],
                                         t.at, in_params[3], t.at), ' + ' ORDER BY o.rank, t.at) AS chain
          FROM terms AS t JOIN tsvector_order AS o ON o.lexeme = t.lexeme
         GROUP BY t.kind
    )
    SELECT 'CASE ' || in_type || ' '
           || string_agg(format('WHEN %L THEN %s', p.kind, p.chain), ' ' ORDER BY p.kind) || ' ELSE 0 END'
      INTO l_expression
      FROM per_type AS p;
    RETURN coalesce(l_expression, '0');
END;
$$;
--rollback DROP FUNCTION ctxasm.matched_idf_sql(text, text, varchar[], varchar[], text[], integer[]);

--changeset ctxasm:pg-internal-probe-query dbms:postgresql runOnChange:true splitStatements:false
--comment: what the lexical retriever looks up in the GIN index: single lexemes, the rarest first, while the rows
--comment: they are estimated to match stay within in_scan_rows; when even the rarest matches more, pairs of
--comment: the rarest lexemes (rows holding both: estimated df_a * df_b / rows), the least matched first, within
--comment: the same budget. A row matching no clause holds only lexemes common in the tenant, whose weights are
--comment: the smallest, so leaving it out bounds the work without losing the rows that rank first. The index
--comment: reads a clause's whole posting lists (a bitmap, before any LIMIT), so the probe's clauses together
--comment: read at most co_probe_postings postings, and a clause whose lexemes appear in more rows is not
--comment: probed: when every lexeme is that common (a word in tens of thousands of a tenant's rows), no clause
--comment: is left, the probe is NULL and lexical retrieval finds nothing (its rows would be an arbitrary few
--comment: thousand of those tens of thousands); the vector half retrieves, and scoring still weighs each
--comment: candidate's lexical match. Likewise the first clause beyond the budget is probed only when
--comment: ctxasm.retrieve can score all it matches (co_fallback_rows). Without statistics (df NULL) every
--comment: lexeme probes.
DROP FUNCTION IF EXISTS ctxasm.probe_query(text[], double precision[], integer);
CREATE OR REPLACE FUNCTION ctxasm.probe_query(in_lexemes text[], in_df double precision[],
                                              in_row_count double precision, in_scan_rows integer)
RETURNS tsquery
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- The most rows a probed clause's lexemes may appear in together: the postings the index reads for it.
    co_probe_postings constant integer := 20000;
    -- The most rows the first clause beyond in_scan_rows may be estimated to match: the rows ctxasm.retrieve
    -- scores at most (its co_scan_cap). A clause that matches more would be cut to arbitrary rows of its matches.
    co_fallback_rows  constant integer := 1000;
BEGIN
    RETURN (
    WITH per_lexeme AS (
        SELECT t.lexeme, max(t.df) AS df FROM unnest(in_lexemes, in_df) AS t(lexeme, df) GROUP BY t.lexeme
    ),
    rarest AS (
        SELECT p.lexeme, p.df, row_number() OVER (ORDER BY p.df NULLS FIRST, p.lexeme) AS position
          FROM per_lexeme AS p
    ),
    clauses AS (
        SELECT ctxasm.lexeme_query(r.lexeme)::text AS clause, coalesce(r.df, 0) AS matches, 1 AS kind,
               r.position AS first,
               r.df IS NULL AS unknown, r.df AS postings
          FROM rarest AS r
         WHERE r.df IS NULL OR r.df <= co_probe_postings
        UNION ALL
        SELECT '(' || ctxasm.lexeme_query(a.lexeme)::text || ' & ' || ctxasm.lexeme_query(b.lexeme)::text || ')',
               a.df * b.df / greatest(in_row_count, 1), 2, a.position, FALSE, a.df + b.df
          FROM rarest AS a JOIN rarest AS b ON b.position > a.position
         WHERE a.position <= 6 AND b.position <= 6 AND a.df IS NOT NULL AND b.df IS NOT NULL
           AND a.df + b.df <= co_probe_postings
    ),
    singles AS (
        SELECT c.clause, c.unknown,
               sum(c.matches) OVER (ORDER BY c.matches, c.first) AS running,
               row_number() OVER (ORDER BY c.matches, c.first) AS position
          FROM clauses AS c WHERE c.kind = 1
    ),
    -- A pair's postings are both its lexemes' (a lexeme of two pairs counted twice: a bound from above).
    pairs AS (
        SELECT c.clause, sum(c.matches) OVER (ORDER BY c.matches, c.clause) AS running,
               sum(c.postings) OVER (ORDER BY c.matches, c.clause) AS postings,
               row_number() OVER (ORDER BY c.matches, c.clause) AS position
          FROM clauses AS c WHERE c.kind = 2
    ),
    chosen AS (
        SELECT s.clause FROM singles AS s
         WHERE s.unknown OR s.running <= in_scan_rows
            OR (s.position = 1 AND s.running <= co_fallback_rows AND NOT EXISTS (SELECT 1 FROM pairs))
        UNION ALL
        SELECT p.clause FROM pairs AS p
         WHERE NOT EXISTS (SELECT 1 FROM singles AS s WHERE s.unknown OR s.running <= in_scan_rows)
           AND p.postings <= co_probe_postings
           AND (p.running <= in_scan_rows OR (p.position = 1 AND p.running <= co_fallback_rows))
    )
    SELECT string_agg(c.clause, ' | ' ORDER BY c.clause)::tsquery FROM chosen AS c);
END;
$$;
--rollback DROP FUNCTION ctxasm.probe_query(text[], double precision[], double precision, integer);

--changeset ctxasm:pg-internal-slice-partitions dbms:postgresql runOnChange:true splitStatements:false
--comment: the tenant's own partition of each table of one slice that exists, with the predicate every
--comment: retrieval read of it applies (in scope and in effect), written for statements whose parameters are
--comment: $1 tenant, $3 user, $4 agent, $5 thread and $6 the evaluation time (lexical_candidates and
--comment: nearest_candidates bind them so)
CREATE OR REPLACE FUNCTION ctxasm.slice_partitions(in_tenant_id varchar, in_slice varchar)
RETURNS TABLE (memory_type varchar, partition_name text, predicate text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH kinds AS MATERIALIZED (
        SELECT t.kind, t.ord, m.table_name
          FROM unnest(ctxasm.slice_types(in_slice)) WITH ORDINALITY AS t(kind, ord)
          JOIN ctxasm.memory_type AS m ON m.memory_type = t.kind
    )
    SELECT t.kind, p.partition_name,
           'r.tenant_id = $1 AND r.status <> ''erased'' AND r.deleted_at IS NULL '
           'AND r.valid_from <= $6 AND (r.valid_until IS NULL OR r.valid_until > $6) '
           'AND (r.agent_id IS NULL OR r.agent_id = $4) AND '
           || CASE WHEN t.kind = 'conversation'
                   THEN 'r.user_id = $3 AND r.event_type = ''message'''
                   ELSE '(r.user_id IS NULL OR r.user_id = $3) AND (r.thread_id IS NULL OR r.thread_id = $5)' END
      FROM kinds AS t
      -- the slice's partitions named in one call (one keyed hash)
      JOIN ctxasm.tenant_partitions(in_tenant_id, ARRAY(SELECT k.table_name FROM kinds AS k)) AS p
        ON p.table_name = t.table_name
     WHERE to_regclass(format('ctxasm.%I', p.partition_name)) IS NOT NULL
     ORDER BY t.ord
$$;
--rollback DROP FUNCTION ctxasm.slice_partitions(varchar, varchar);

--changeset ctxasm:pg-internal-lexical-candidates dbms:postgresql runOnChange:true splitStatements:false
--comment: the rows of one slice that match the lexical probe, with the summed idf of the question's lexemes each
--comment: holds and its length in lexemes: at most in_scan_rows rows, in scope and in effect. Read from the
--comment: tenant's own partitions, named here: the probe (tsvector @@ tsquery) is not a leakproof operator, so
--comment: through the parent table row level security would keep it from the GIN index and scan the whole
--comment: partition instead. The partition holds this tenant's rows and no other (its partition bound), and every
--comment: predicate names the tenant too.
CREATE OR REPLACE FUNCTION ctxasm.lexical_candidates(
    in_tenant_id       varchar,
    in_slice           varchar,
    in_user_id         varchar,
    in_agent_id        varchar,
    in_thread_id       varchar,
    in_evaluation_time timestamptz,
    in_term_types      varchar[],
    in_term_lexemes    text[],
    in_term_idf        double precision[],
    in_probe           tsquery,
    in_scan_rows       integer
)
RETURNS TABLE (memory_type varchar, id varchar, version integer, matched_idf double precision, length integer)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_part     record;
    l_branches text[] := '{}';
    -- the memory types of the branches: the rows the statement reads
    l_types    varchar[] := '{}';
BEGIN
    IF in_probe IS NULL THEN
        RETURN;
    END IF;
    FOR l_part IN SELECT * FROM ctxasm.slice_partitions(in_tenant_id, in_slice) LOOP
        l_branches := l_branches || format(
            'SELECT %L::varchar AS memory_type, r.id, r.version, r.search_text FROM ctxasm.%I AS r '
            'WHERE r.search_text @@ $2 AND %s', l_part.memory_type, l_part.partition_name, l_part.predicate);
        l_types := l_types || l_part.memory_type::varchar;
    END LOOP;
    IF cardinality(l_branches) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT h.memory_type, h.id, h.version, (%s)::double precision, length(h.search_text) '
        '  FROM (%s LIMIT $10) AS h',
        ctxasm.matched_idf_sql('h.search_text', 'h.memory_type', l_types, in_term_types, in_term_lexemes,
                               ARRAY[7, 8, 9, 11]),
        array_to_string(l_branches, ' UNION ALL '))
        USING in_tenant_id, in_probe, in_user_id, in_agent_id, in_thread_id, in_evaluation_time,
              in_term_types, in_term_lexemes, in_term_idf, in_scan_rows, ctxasm.term_queries(in_term_lexemes);
END;
$$;
--rollback DROP FUNCTION ctxasm.lexical_candidates(varchar, varchar, varchar, varchar, varchar, timestamptz, varchar[], text[], double precision[], tsquery, integer);

--changeset ctxasm:pg-internal-nearest-candidates dbms:postgresql runOnChange:true splitStatements:false
--comment: the in_depth rows of one slice nearest the question's embedding (cosine distance, HNSW), in scope and in
--comment: effect, read from the tenant's own partitions, named here, as lexical_candidates reads them. Through
--comment: ctxasm.search_row with a slice filter the planner folds the other slices' branches to a constant false
--comment: and then cannot prune their tables' partitions by tenant: it would open and lock every tenant's
--comment: partitions. The statement is planned for each call with the values known, so only this tenant's are.
CREATE OR REPLACE FUNCTION ctxasm.nearest_candidates(
    in_tenant_id       varchar,
    in_slice           varchar,
    in_user_id         varchar,
    in_agent_id        varchar,
    in_thread_id       varchar,
    in_evaluation_time timestamptz,
    in_query_embedding vector,
    in_depth           integer
)
RETURNS TABLE (memory_type varchar, id varchar, version integer, distance double precision)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    l_part     record;
    l_branches text[] := '{}';
BEGIN
    IF in_query_embedding IS NULL THEN
        RETURN;
    END IF;
    -- A document has no embedding of its own: its chunks carry them.
    FOR l_part IN SELECT * FROM ctxasm.slice_partitions(in_tenant_id, in_slice) AS p
                   WHERE p.memory_type <> 'kb_document' LOOP
        l_branches := l_branches || format(
            '(SELECT %L::varchar AS memory_type, r.id, r.version, r.embedding <=> $2 AS distance FROM ctxasm.%I AS r '
            'WHERE r.embedding IS NOT NULL AND %s ORDER BY r.embedding <=> $2 LIMIT $7)',
            l_part.memory_type, l_part.partition_name, l_part.predicate);
    END LOOP;
    IF cardinality(l_branches) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format('SELECT n.memory_type, n.id, n.version, n.distance FROM (%s) AS n '
                                'ORDER BY n.distance LIMIT $7', array_to_string(l_branches, ' UNION ALL '))
        USING in_tenant_id, in_query_embedding, in_user_id, in_agent_id, in_thread_id, in_evaluation_time, in_depth;
END;
$$;
--rollback DROP FUNCTION ctxasm.nearest_candidates(varchar, varchar, varchar, varchar, varchar, timestamptz, vector, integer);

--changeset ctxasm:pg-internal-adjacent-turns dbms:postgresql runOnChange:true splitStatements:false
--comment: the turns next to recalled ones: for each of in_ids (conversation rows of the tenant), the message turns
--comment: just before and just after it in the same thread, in scope and in effect, that in_ids do not already
--comment: hold. A conversation answers where it was asked: the turn that matches a question is often the one
--comment: before the answer. Read from the tenant's own partition by its (tenant, thread, turn_index) index.
CREATE OR REPLACE FUNCTION ctxasm.adjacent_turns(
    in_tenant_id       varchar,
    in_user_id         varchar,
    in_agent_id        varchar,
    in_thread_id       varchar,
    in_evaluation_time timestamptz,
    in_ids             varchar[]
)
RETURNS TABLE (id varchar, version integer, next_to varchar)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_part record;
BEGIN
    SELECT p.* INTO l_part FROM ctxasm.slice_partitions(in_tenant_id, 'recalled_history') AS p
     WHERE p.memory_type = 'conversation';
    IF NOT FOUND OR coalesce(cardinality(in_ids), 0) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT DISTINCT ON (r.id) r.id, r.version, a.id FROM ctxasm.%1$I AS a JOIN ctxasm.%1$I AS r '
        'ON r.tenant_id = a.tenant_id AND r.thread_id = a.thread_id '
        'AND r.turn_index IN (a.turn_index - 1, a.turn_index + 1) '
        'WHERE a.tenant_id = $1 AND a.id = ANY ($2) AND NOT r.id = ANY ($2) AND %2$s ORDER BY r.id, a.id',
        l_part.partition_name, l_part.predicate)
        USING in_tenant_id, in_ids, in_user_id, in_agent_id, in_thread_id, in_evaluation_time;
END;
$$;
--rollback DROP FUNCTION ctxasm.adjacent_turns(varchar, varchar, varchar, varchar, timestamptz, varchar[]);

--changeset ctxasm:pg-internal-retrieve dbms:postgresql runOnChange:true splitStatements:false
--comment: hybrid retrieval for one slice (evidence, recalled_history, durable_facts) on the live tables of one
--comment: tenant, each read led by the tenant (its partition): the best in_depth rows by BM25 over the probe
--comment: lexemes (lexical_candidates) and the best in_depth by cosine distance (HNSW; an iterative scan, so a
--comment: scope filter cannot leave fewer than in_depth, in relaxed order: nearest_candidates sorts what the scan
--comment: yields by distance, and on the benchmark's 250,000 synthetic chunks a relaxed scan found more of the
--comment: exact 50 nearest than a strict one, 0.29 against 0.23, in 3.0 ms against 3.8), both in scope and in
--comment: effect at the evaluation time, fused by reciprocal rank (k = 60), the best in_limit kept. Ties break on
--comment: type, id and version.
--comment: Recalled history is the user's conversation messages in any thread (the caller removes the turns it
--comment: shows as the thread's tail) and the summaries in scope.
DROP FUNCTION IF EXISTS ctxasm.retrieve(varchar, varchar, varchar, varchar, varchar, timestamptz, varchar[], tsquery[],
                                        double precision[], tsquery, vector, integer, integer);
-- Reading a vector loads pgvector's library into this session, so the hnsw settings the function pins below
-- are known settings (a setting of a library not yet loaded may not be pinned by a non-superuser).
SELECT '[0]'::public.vector;
CREATE OR REPLACE FUNCTION ctxasm.retrieve(
    in_tenant_id       varchar,
    in_slice           varchar,
    in_user_id         varchar,
    in_agent_id        varchar,
    in_thread_id       varchar,
    in_evaluation_time timestamptz,
    in_term_types      varchar[],
    in_term_lexemes    text[],
    in_term_idf        double precision[],
    in_probe           tsquery,
    in_query_embedding vector,
    in_depth           integer,
    in_limit           integer
)
RETURNS TABLE (memory_type varchar, id varchar, version integer, lexical_rank bigint, vector_rank bigint,
               lexical_score double precision, vector_distance double precision, fused numeric)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, public, pg_temp
SET "hnsw.iterative_scan" = 'relaxed_order' SET "hnsw.max_scan_tuples" = 40000 SET jit = off
AS $$
DECLARE
    -- Lexical rows scored at most: a guard for a partition whose statistics are stale or missing, or estimates
    -- too low (each row read costs its tsvector, often TOASTed: about 10 us a row at 1e6).
    co_scan_cap constant integer := 1000;
BEGIN
    -- ef_search bounds how many neighbours one HNSW scan yields before it iterates: at least the depth.
    PERFORM set_config('hnsw.ef_search', greatest(40, least(in_depth, 1000))::text, true);
    RETURN QUERY
    WITH lexical_hits AS (
        SELECT h.memory_type, h.id, h.version,
               h.matched_idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.length / greatest(avg(h.length) OVER (), 1))) AS score
          FROM ctxasm.lexical_candidates(in_tenant_id, in_slice, in_user_id, in_agent_id, in_thread_id,
                                         in_evaluation_time, in_term_types, in_term_lexemes, in_term_idf, in_probe,
                                         co_scan_cap) AS h
    ),
    lexical AS (
        SELECT l.memory_type, l.id, l.version, l.score,
               row_number() OVER (ORDER BY l.score DESC, l.memory_type, l.id, l.version) AS rank
          FROM lexical_hits AS l
         ORDER BY l.score DESC, l.memory_type, l.id, l.version
         LIMIT in_depth
    ),
    nearest AS (
        SELECT n.memory_type, n.id, n.version, n.distance,
               row_number() OVER (ORDER BY n.distance, n.memory_type, n.id, n.version) AS rank
          FROM ctxasm.nearest_candidates(in_tenant_id, in_slice, in_user_id, in_agent_id, in_thread_id,
                                         in_evaluation_time, in_query_embedding, in_depth) AS n
    )
    SELECT coalesce(l.memory_type, v.memory_type), coalesce(l.id, v.id), coalesce(l.version, v.version),
           l.rank, v.rank, round(l.score::numeric, 6)::double precision,
           round(v.distance::numeric, 6)::double precision,
           round(coalesce(1.0 / (60 + l.rank), 0) + coalesce(1.0 / (60 + v.rank), 0), 6) AS fused
      FROM lexical AS l
      FULL OUTER JOIN nearest AS v ON v.memory_type = l.memory_type AND v.id = l.id AND v.version = l.version
     ORDER BY 8 DESC, 1, 2, 3
     LIMIT in_limit;
END;
$$;
--rollback DROP FUNCTION ctxasm.retrieve(varchar, varchar, varchar, varchar, varchar, timestamptz, varchar[], text[], double precision[], tsquery, vector, integer, integer);

--changeset ctxasm:pg-internal-retrieve-for-question dbms:postgresql runOnChange:true splitStatements:false
--comment: ctxasm.retrieve for one question, weights and probe computed here (the probe budget select_window
--comment: uses): for callers that retrieve one slice and score nothing else (the search_memory tool, the
--comment: retrieval evaluation)
CREATE OR REPLACE FUNCTION ctxasm.retrieve_for_question(
    in_tenant_id       varchar,
    in_slice           varchar,
    in_user_id         varchar,
    in_agent_id        varchar,
    in_thread_id       varchar,
    in_evaluation_time timestamptz,
    in_question        text,
    in_query_embedding vector,
    in_depth           integer,
    in_limit           integer
)
RETURNS TABLE (memory_type varchar, id varchar, version integer, lexical_rank bigint, vector_rank bigint,
               lexical_score double precision, vector_distance double precision, fused numeric)
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    WITH terms AS (
        SELECT array_agg(t.memory_type) AS types, array_agg(t.idf) AS idf, array_agg(t.lexeme) AS lexemes,
               array_agg(t.df) AS df, max(t.row_count) AS row_count
          FROM ctxasm.question_terms(in_tenant_id, in_question) AS t
         WHERE t.memory_type = ANY (ctxasm.slice_types(in_slice))
    )
    SELECT r.*
      FROM terms AS t
      CROSS JOIN LATERAL ctxasm.retrieve(in_tenant_id, in_slice, in_user_id, in_agent_id, in_thread_id,
                                         in_evaluation_time, t.types, t.lexemes, t.idf,
                                         ctxasm.probe_query(t.lexemes, t.df, t.row_count, 500), in_query_embedding,
                                         in_depth, in_limit) AS r
$$;
--rollback DROP FUNCTION ctxasm.retrieve_for_question(varchar, varchar, varchar, varchar, varchar, timestamptz, text, vector, integer, integer);
