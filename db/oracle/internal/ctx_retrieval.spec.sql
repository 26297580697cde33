--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-retrieval-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_retrieval authid definer is
   /**
    * Retrieval (docs/assembly.md, step sources): the rows of one slice that best match the question, by Oracle
    * Text and by vector distance, fused by reciprocal rank, and the turns next to the best recalled ones. The
    * twin of PostgreSQL's db/postgresql/internal/ctx_retrieval.sql (schema ctxasm); lexical_hits stands for
    * lexical_candidates, nearest for nearest_candidates, retrieved_items for retrieve, adjacent_items for
    * adjacent_turns. Engine-internal, for CTX_ASSEMBLY; never granted to CTXASM_APP. Definer's rights: every read
    * is of the live tables, led by the tenant the caller passes (the session's, which the caller checked);
    * nothing is written. VECTOR_EMBEDDING names its model in the SQL text, so question_embedding is dynamic and
    * the package compiles and runs without the model.
    *
    * Needs, granted directly to the owner: EXECUTE on CTXSYS.CTX_QUERY (COUNT_HITS), the CONTEXT indexes of
    * db/oracle/schema/retrieval_indexes.sql and selection_indexes.sql, the HNSW vector indexes for the vector
    * half and, only to embed the question in the database, the ONNX embedding model MINILM.
    */

   -- the retrieval method a window or a search records
   co_method_lexical constant varchar2(40) := 'lexical-oracle-text';
   co_method_hybrid  constant varchar2(40) := 'hybrid-oracle-text-hnsw-rrf-60';

   /**
    * The question's distinct words, in order of first occurrence, at most co_probe_words: runs of ASCII letters
    * and digits, lower-cased, 3 to 64 characters (Oracle Text's longest token). Oracle Text's lexer and stoplist
    * decide what each matches; a stopword matches nothing.
    */
   function question_words(in_question in clob) return ctx_json.t_text_tab;

   /**
    * The question's embedding as vector text, computed by the in-database ONNX model MINILM; NULL when the
    * schema has no such model.
    */
   function question_embedding(in_question in clob) return clob;

   /**
    * The lexical probe of one slice (PostgreSQL: ctxasm.probe_query): the question's words, each escaped in
    * braces (a word holds no operator character, and the braces escape reserved words), the rarest first by
    * the documents it matches in the slice's two CONTEXT indexes (CTX_QUERY.COUNT_HITS estimates over all
    * tenants: the postings Oracle Text reads for the word), kept while their matches stay within
    * co_probe_postings, and always the rarest word that matches anything; joined with ACCUM. A word that
    * matches nothing (a stopword, say) is left out. NULL: nothing to look up.
    */
   function text_probe(in_slice in varchar2, in_words in ctx_json.t_text_tab) return varchar2;

   /**
    * The best in_depth rows of one slice by Oracle Text SCORE (0..100) of the probe (PostgreSQL:
    * ctxasm.lexical_candidates with BM25), in scope and in effect at the evaluation time, as
    * [{"t", "i", "v", "s"}] ordered by score desc, type, id, version; NULL when the probe is NULL or nothing
    * matches. The tenant predicate is applied inside each CONTEXT index (FILTER BY tenant_id); recalled history
    * is the user's messages in any thread and the summaries in scope.
    */
   function lexical_hits(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_slice           in varchar2,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_probe           in varchar2,
      in_depth           in pls_integer
   ) return clob;

   /**
    * The in_depth rows of one slice nearest to the query vector (VECTOR_DISTANCE, COSINE), in scope and in
    * effect, as [{"t", "i", "v", "d"}] ordered by distance, type, id, version; NULL without a vector or a hit.
    * FETCH APPROX lets the optimizer use each table's HNSW index; every query names the tenant, which the
    * optimizer applies as a pre-filter or in-filter of the index scan, so a small tenant next to a large one
    * still gets its nearest rows (PostgreSQL: the tenant's own partition of the index). The documents have no
    * embedding: evidence is searched in its chunks. The query vector's dimensions are a literal of the SQL
    * (384, as every embedding column).
    */
   function nearest(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_slice           in varchar2,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_vector          in clob,
      in_depth           in pls_integer
   ) return clob;

   /**
    * One slice's retrieval items (PostgreSQL: ctxasm.retrieve): the two rank lists (ranks are positions in
    * each list) fused by reciprocal rank, round(1/(60 + lexical_rank) + 1/(60 + vector_rank), 6) with a
    * missing rank adding 0, the best in_limit kept (fused desc, type, id, version), then those in_exclude
    * names (the thread's tail) removed: [{"ref", "origin": "retrieval", "slice", "lexical_rank",
    * "vector_rank", "lexical_score", "vector_distance", "fused"}], '[]' when nothing was found.
    */
   function retrieved_items(
      in_slice   in varchar2,
      in_lexical in clob,
      in_vector  in clob,
      in_limit   in pls_integer,
      in_exclude in clob
   ) return clob;

   /**
    * The turns next to the best recalled turns (PostgreSQL: ctxasm.adjacent_turns and select_window's adjacent
    * step): of in_retrieved's conversation items, the in_limit best by fused score, the message turns just
    * before and just after each in its thread, in scope and in effect, that neither in_retrieved nor in_exclude
    * holds: [{"ref", "origin": "adjacent", "slice": "recalled_history", "next_to"}], '[]' when none.
    * A conversation answers where it was asked: the turn that matches a question is often the one before the
    * answer. Reads by (tenant, thread, turn_index).
    */
   function adjacent_items(
      in_tenant_id       in varchar2,
      in_user_id         in varchar2,
      in_agent_id        in varchar2,
      in_evaluation_time in timestamp with time zone,
      in_retrieved       in clob,
      in_limit           in pls_integer,
      in_exclude         in clob
   ) return clob;

   /**
    * The retrieval step of select_window for one slice and one question, for callers that retrieve and
    * score nothing else (CTX_ASSEMBLY.retrieve_for_question, behind it CTX_TOOLS.search_memory; PostgreSQL:
    * ctxasm.retrieve_for_question): the best in_depth rows by Oracle Text and the best in_depth by VECTOR_DISTANCE
    * to the query vector (in_query_embedding, else the model MINILM's if the schema has it, else none), on the live
    * tables of in_tenant_id, in scope and in effect at the evaluation time, fused by reciprocal rank (k = 60), the
    * best in_limit kept. The caller has checked the scope against the session's claim.
    * @return a CLOB holding {"method": "lexical-oracle-text" | "hybrid-oracle-text-hnsw-rrf-60",
    *         "items": [{"ref": [type, id, version], "origin": "retrieval", "slice", "lexical_rank",
    *         "vector_rank", "lexical_score", "vector_distance", "fused"}]}, items by fused desc, type, id,
    *         version
    */
   function retrieve_for_question(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_slice           in varchar2,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_question        in clob,
      in_query_embedding in clob,
      in_depth           in pls_integer,
      in_limit           in pls_integer
   ) return clob;
end ctx_retrieval;
/
