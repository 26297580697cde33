--liquibase formatted sql logicalFilePath:db/packages/oracle/spec/0060_ctx_assembly.sql

--changeset ctxasm:ora-pkg-0060-ctx-assembly-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_assembly authid definer is
   /**
    * The assembler's database half (docs/assembly.md): select_window makes the selection for one context
    * window, record_manifest records what the window used (through CTX_MANIFEST_STORE, which stores and reads
    * manifests outside the selection version's digest). The Oracle twin of the PostgreSQL schema
    * ctx_assembly (db/postgresql/api/ctx_assembly.sql); the engine-internal functions it calls are in the
    * packages named as PostgreSQL's files: CTX_RULES (internal/ctx_rules.sql), CTX_RETRIEVAL
    * (internal/ctx_retrieval.sql), CTX_SOURCES (internal/ctx_sources.sql), CTX_BUDGET (internal/ctx_budget.sql),
    * CTX_SELECTION (internal/ctx_selection.sql: one routine per selection step) and CTX_JSON;
    * docs/oracle-assembly.md maps the two step by step. Granted to CTXASM_APP. Definer's rights: the package
    * reads and writes as the owner, and the VPD policy <TABLE>_TENANT keeps every row it touches inside the
    * session's tenant; every read also names the tenant itself. Nothing here commits: the caller ends the
    * transaction.
    *
    * Needs, granted directly to the owner (roles do not count in definer's-rights code): EXECUTE on
    * SYS.DBMS_FLASHBACK (the SCN), SYS.DBMS_CRYPTO (through CTX_MEMORY: the summary tier's freshness) and
    * CTXSYS.CTX_QUERY (COUNT_HITS: how many documents a question word matches). Retrieval needs Oracle Text
    * (the CONTEXT indexes of db/oracle/schema/retrieval_indexes.sql and selection_indexes.sql), the
    * HNSW vector indexes for the vector half and, only to embed the question in the database, an ONNX
    * embedding model MINILM in the owner's schema. Scoring with the in-database cross-encoder needs the ONNX
    * regression model BGE_RERANKER in the owner's schema (scripts/oracle-load-models loads both); without it
    * the hybrid scorer is used.
    *
    * Errors are raised through CTX_ERRORS (-20110 .. -20114 for the assembly's own).
    */

   /**
    * The version of the selection rules this deployment runs; replay compares it with the manifest's
    * before it reads anything. Reads nothing.
    * @return 'selection-<12 hex>': a digest of this engine's selection code, written by the generator
    *         (contract/selection.toml), so a change of that code cannot keep the old version
    */
   function selection_version return varchar2 deterministic;

   /**
    * The selection for one context window, as one JSON document, with one evaluation time and a bounded
    * list of sources. The steps, in order: budget (the narrowest context_budget guideline by scope
    * containment), candidate limits, sources, the rows the sources name (by primary key), scope, lifecycle,
    * dedup (stored text identity), conflict (with the annotations of history naming each claim's current
    * winner, and the required current facts), score, priority, tie-break, the limit per slice; then each
    * candidate's tiers (full, summary, pointer).
    * Sources, live (in_sources NULL): every version in scope of the guidelines, persona and tools; the
    * thread's latest messages (as many as the volatile_tail limit); the durable facts in scope when they are
    * at most 100 row versions; for evidence, recalled history (the user's messages in any thread and the
    * summaries in scope) and, beyond 100, durable facts: the best max(50, limit) rows by Oracle Text (SCORE of
    * the rarest question words) and the best as many by VECTOR_DISTANCE (COSINE, HNSW), fused by reciprocal
    * rank (k = 60), the best twice that kept, minus the thread's tail; then the rows recalled history cites
    * and the active facts of their claims. Replay (in_sources given): exactly those sources, nothing is
    * retrieved. Every read names the tenant; the live tables are read as they are, and only with in_snapshot
    * are the rows read AS OF that SCN.
    * Reads the nine memory tables, CONTEXT_COMPRESSION, their Oracle Text and vector indexes
    * (session tenant only) and USER_MINING_MODELS; writes nothing. A live window sees the rows the calling
    * transaction wrote but has not committed, except through retrieval (the CONTEXT indexes sync on commit).
    * @param in_user_id the user of the window; rows of other users are out of scope (NULL rows are wider)
    * @param in_agent_id the agent; as in_user_id
    * @param in_thread_id the thread; the user's turns in other threads are recalled history
    * @param in_intent a key of the budget's shares
    * @param in_evaluation_time the one time the lifecycle and recency are judged at
    * @param in_question the question: retrieval's text query and, through its embedding, the hybrid scorer's
    * @param in_scores NULL or a JSON object "type:id:version" -> rerank logit (scorer external; a memory
    *        without an entry has no logit). NULL, live: if the owner's schema has the model BGE_RERANKER (one
    *        look at USER_MINING_MODELS per call), each candidate's logit is
    *        PREDICTION(BGE_RERANKER USING question AS first_input, full text AS second_input), rounded to 6
    *        places (scorer bge-reranker:oracle:BGE_RERANKER; the selection runs a second time with those
    *        logits); otherwise the hybrid logit 12 (similarity - 0.35) + 1.5 text_score / best text_score of
    *        the slice (scorer hybrid-calibrated-2)
    * @param in_snapshot NULL (now: the live tables, and the current SCN is recorded) or an SCN recorded
    *        earlier (replay: the rows and compressions are read AS OF it)
    * @param in_query_embedding NULL or the question's embedding as vector text '[0.1, ...]' (384 numbers,
    *        all-MiniLM-L6-v2). NULL: the model MINILM embeds the question if the schema has it; otherwise
    *        retrieval is lexical only and the similarity is unknown
    * @param in_sources NULL (gather the sources) or a JSON array of source items
    *        [{"ref": [type, id, version], "origin", "slice", "lexical_rank", "vector_rank", "lexical_score",
    *        "vector_distance", "fused", "logit", "bm25", "similarity"}], as a manifest recorded them in
    *        retrieval.items (replay, and the reranker's second pass): used as they are, with the recorded
    *        logits (scorer recorded when in_scores is NULL)
    * @return a CLOB holding the JSON object engine, snapshot, tenant_id, evaluation_time,
    *         selection_version, scorer, budget, fixed, candidates, required_refs, candidate_limits,
    *         candidate_cuts, retrieval, excluded; retrieval is {method: recorded | lexical-oracle-text |
    *         hybrid-oracle-text-hnsw-rrf-60, depth, items: the sources, one per row version, each with the
    *         logit, bm25 and similarity it was scored by}
    * @throws -20102 tenant_not_set, -20119 scope_not_allowed (the claim names another user or agent),
    *         -20113 invalid_question (empty question, or longer than 8000 characters),
    *         -20108 invalid_argument (NULL in_evaluation_time; in_sources not a JSON array; in_scores not a
    *         JSON object of numbers; in_query_embedding not 384 numbers),
    *         -20107 invalid_snapshot (in_snapshot not an SCN Oracle can read),
    *         -20111 budget_missing, -20112 invalid_budget (naming the field, e.g. candidate_limits.evidence, or
    *         naming both guidelines when two of the winning scope are in effect at once),
    *         -20110 unknown_intent
    */
   function select_window(
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_intent          in varchar2,
      in_evaluation_time in timestamp with time zone,
      in_question        in clob,
      in_scores          in clob default null,
      in_snapshot        in varchar2 default null,
      in_query_embedding in clob default null,
      in_sources         in clob default null
   ) return clob;

   /**
    * Records a composed window: the context_manifest event and one CONTEXT_SOURCE_REF row per dependency, in
    * the caller's transaction; does not commit. The work, the rows written and the bounds are
    * CTX_MANIFEST_STORE.record_manifest's (internal/ctx_manifest_store.*), outside this package's digest.
    * @param in_manifest the manifest (docs/assembly.md) as a JSON object in a CLOB
    * @return the manifest id, 'manifest_' and 32 hex digits; the source refs are '<manifest id>:<n>'
    * @throws -20102 tenant_not_set, -20119 scope_not_allowed (the manifest's scope names a user or agent the
    *         claim does not), -20114 invalid_manifest (not a manifest, or larger than the store's bounds, naming
    *         what is wrong), -20104 invalid_field (a scope value, or a reference's type or id, longer than its
    *         column)
    */
   function record_manifest(in_manifest in clob) return varchar2;

   /**
    * A recorded manifest of the session's tenant, or NULL (another tenant's manifest is as unknown as one that
    * never existed): CTX_MANIFEST_STORE.read_manifest.
    * @param in_manifest_id the id record_manifest returned
    * @return the manifest as a JSON object in a CLOB, or NULL
    * @throws -20102 tenant_not_set
    */
   function read_manifest(in_manifest_id in conversation_memory.id%type) return clob;

   /**
    * The scope's most recent window: the id of its latest active context_manifest event whose user, agent and
    * thread are exactly these (NULL matches NULL), or NULL: CTX_MANIFEST_STORE.latest_manifest_id.
    * @throws -20102 tenant_not_set, -20119 scope_not_allowed when the claim names another user or agent
    */
   function latest_manifest_id(
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type
   ) return varchar2;

   /**
    * The retrieval step of select_window for one slice and one question, for callers that retrieve and
    * score nothing else (CTX_TOOLS.search_memory): the best in_depth rows by Oracle Text and the best
    * in_depth by VECTOR_DISTANCE to the query vector (in_query_embedding, else the model MINILM's if the
    * schema has it, else none), on the live tables, in scope and in effect at the evaluation time, fused by
    * reciprocal rank (k = 60), the best in_limit kept. Engine-internal (PostgreSQL:
    * ctxasm.retrieve_for_question): checks the scope against the session's claim, then
    * CTX_RETRIEVAL.retrieve_for_question does the work. Reads what select_window's retrieval reads; writes
    * nothing.
    * @param in_slice evidence, recalled_history or durable_facts
    * @return a CLOB holding {"method": "lexical-oracle-text" | "hybrid-oracle-text-hnsw-rrf-60",
    *         "items": [{"ref": [type, id, version], "origin": "retrieval", "slice", "lexical_rank",
    *         "vector_rank", "lexical_score", "vector_distance", "fused"}]}, items by fused desc, type, id,
    *         version
    * @throws -20102 tenant_not_set, -20119 scope_not_allowed (the claim names another user or agent)
    */
   -- contract:internal
   function retrieve_for_question(
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
end ctx_assembly;
/
