--liquibase formatted sql

--changeset ctxasm:pg-internal-retrieve-evidence dbms:postgresql runOnChange:true splitStatements:false
--comment: hybrid retrieval over the knowledge base, on the live tables and their indexes: the best
--comment: in_depth rows by lexical rank (OR of the question's lexemes, ts_rank_cd) and by vector distance
--comment: (HNSW, cosine), in scope and in effect at the evaluation time, fused by reciprocal rank (k = 60),
--comment: the best in_limit kept. Ties break on type and id, so the order is total.
CREATE OR REPLACE FUNCTION ctxasm.retrieve_evidence(
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
               fused numeric)
-- The vector operators live with the extension, in public.
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
    WITH query AS (
        SELECT (SELECT string_agg(quote_literal(t.lexeme), ' | ' ORDER BY t.lexeme)
                  FROM unnest(to_tsvector('english', in_question)) AS t)::tsquery AS terms
    ),
    lexical AS (
        SELECT hit.memory_type, hit.id, hit.version,
               row_number() OVER (ORDER BY hit.score DESC, hit.memory_type, hit.id, hit.version) AS rank
          FROM (
              SELECT 'kb_chunk'::varchar AS memory_type, c.id, c.version, ts_rank_cd(c.search_text, q.terms) AS score
                FROM ctxasm.knowledge_base_chunk AS c, query AS q
               WHERE q.terms IS NOT NULL AND c.search_text @@ q.terms
                 AND (c.user_id IS NULL OR c.user_id = in_user_id)
                 AND (c.agent_id IS NULL OR c.agent_id = in_agent_id)
                 AND (c.thread_id IS NULL OR c.thread_id = in_thread_id)
                 AND c.deleted_at IS NULL AND c.valid_from <= in_evaluation_time
                 AND (c.valid_until IS NULL OR c.valid_until > in_evaluation_time)
              UNION ALL
              SELECT 'kb_document'::varchar, d.id, d.version, ts_rank_cd(d.search_text, q.terms)
                FROM ctxasm.knowledge_base_document AS d, query AS q
               WHERE q.terms IS NOT NULL AND d.search_text @@ q.terms
                 AND (d.user_id IS NULL OR d.user_id = in_user_id)
                 AND (d.agent_id IS NULL OR d.agent_id = in_agent_id)
                 AND (d.thread_id IS NULL OR d.thread_id = in_thread_id)
                 AND d.deleted_at IS NULL AND d.valid_from <= in_evaluation_time
                 AND (d.valid_until IS NULL OR d.valid_until > in_evaluation_time)
              ORDER BY score DESC, memory_type, id, version
              LIMIT in_depth
          ) AS hit
    ),
    nearest AS (
        SELECT n.memory_type, n.id, n.version,
               row_number() OVER (ORDER BY n.distance, n.id, n.version) AS rank
          FROM (
              SELECT 'kb_chunk'::varchar AS memory_type, c.id, c.version,
                     c.embedding <=> in_query_embedding AS distance
                FROM ctxasm.knowledge_base_chunk AS c
               WHERE in_query_embedding IS NOT NULL AND c.embedding IS NOT NULL
                 AND (c.user_id IS NULL OR c.user_id = in_user_id)
                 AND (c.agent_id IS NULL OR c.agent_id = in_agent_id)
                 AND (c.thread_id IS NULL OR c.thread_id = in_thread_id)
                 AND c.deleted_at IS NULL AND c.valid_from <= in_evaluation_time
                 AND (c.valid_until IS NULL OR c.valid_until > in_evaluation_time)
               ORDER BY c.embedding <=> in_query_embedding
               LIMIT in_depth
          ) AS n
    )
    SELECT coalesce(l.memory_type, v.memory_type), coalesce(l.id, v.id), coalesce(l.version, v.version),
           l.rank, v.rank,
           round(coalesce(1.0 / (60 + l.rank), 0) + coalesce(1.0 / (60 + v.rank), 0), 6) AS fused
      FROM lexical AS l
      FULL OUTER JOIN nearest AS v ON v.memory_type = l.memory_type AND v.id = l.id AND v.version = l.version
     ORDER BY fused DESC, 1, 2, 3
     LIMIT in_limit
$$;
--rollback DROP FUNCTION ctxasm.retrieve_evidence(varchar, varchar, varchar, timestamptz, text, vector, integer, integer);
