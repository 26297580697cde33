--liquibase formatted sql

--changeset ctxasm:ora-pkg-0060-ctx-assembly-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_assembly authid definer is
   /**
    * The assembler's database half (docs/assembly.md): select_window makes the selection for one context
    * window, record_manifest records what the window used. The Oracle twin of the PostgreSQL schema
    * ctx_assembly (db/packages/postgresql/0050_ctx_assembly.sql); docs/oracle-assembly.md maps the two
    * step by step. Granted to CTXASM_APP. Definer's rights: the package reads and writes as the owner, and
    * the VPD policy <TABLE>_TENANT keeps every row it touches inside the session's tenant. Nothing here
    * commits: the caller ends the transaction.
    *
    * Needs, granted directly to the owner (roles do not count in definer's-rights code): EXECUTE on
    * SYS.DBMS_FLASHBACK (the SCN) and SYS.DBMS_CRYPTO (sha256 of the summary tier's source text). Retrieval
    * needs Oracle Text (the CONTEXT indexes of db/schema/oracle/0030_retrieval_indexes.sql) and, only to
    * embed the question in the database, an ONNX embedding model MINILM in the owner's schema. Scoring with
    * the in-database cross-encoder needs the ONNX regression model BGE_RERANKER in the owner's schema
    * (scripts/oracle-load-models loads both); without it the lexical scorer is used.
    *
    * Errors are raised through CTX_ERRORS (-20110 .. -20114 for the assembly's own).
    */

   /**
    * The selection for one context window, as one JSON document, with one evaluation time and one point in
    * time for every read: the SCN captured first (or in_snapshot), applied AS OF SCN to every table.
    * The steps, in order: budget, retrieval, scope, lifecycle, dedup, conflict (with the annotations of
    * history and the required current facts), score, tie-break; then each candidate's tiers (full, summary,
    * pointer).
    * Retrieval bounds the evidence: documents and chunks are candidates only if retrieved. Without
    * in_evidence, the best 50 rows by Oracle Text (CONTAINS on the question's words, SCORE) and the best 50
    * chunks by VECTOR_DISTANCE (COSINE) to the query vector, in scope and in effect at the evaluation time at
    * the SCN, are fused by reciprocal rank (k = 60) and the best 20 kept. With in_evidence, exactly those
    * items are used and nothing is retrieved (replay).
    * Reads, AS OF the SCN, the nine memory tables and CONTEXT_COMPRESSION (session tenant only), and the
    * CONTEXT indexes of KNOWLEDGE_BASE_DOCUMENT and KNOWLEDGE_BASE_CHUNK; writes nothing. Rows the calling
    * transaction has not committed are not seen (Flashback Query reads committed data only; the CONTEXT
    * indexes sync on commit).
    * @param in_user_id the user of the window; rows of other users are out of scope (NULL rows are wider)
    * @param in_agent_id the agent; as in_user_id
    * @param in_thread_id the thread; the user's turns in other threads are recalled history
    * @param in_intent a key of the budget's shares
    * @param in_evaluation_time the one time the lifecycle and recency are judged at
    * @param in_question the question; the lexical scorer compares it with each candidate
    * @param in_scores NULL or a JSON object "type:id:version" -> rerank logit (scorer external; a memory
    *        without an entry falls back to the lexical logit). NULL: if the owner's schema has the model
    *        BGE_RERANKER (one look at USER_MINING_MODELS per call), each candidate's logit is
    *        PREDICTION(BGE_RERANKER USING question AS first_input, full text AS second_input), rounded to 6
    *        places (scorer bge-reranker:oracle:BGE_RERANKER; the selection runs a second time with those
    *        logits); otherwise the lexical logit (scorer lexical-overlap-1). Replay passes the recorded
    *        logits here, so the model is never run again for a recorded window
    * @param in_snapshot NULL (now: a new SCN) or an SCN recorded earlier (replay)
    * @param in_query_embedding NULL or the question's embedding as vector text '[0.1, ...]' (384 numbers,
    *        all-MiniLM-L6-v2). NULL: the model MINILM embeds the question if the schema has it; otherwise
    *        retrieval is lexical only
    * @param in_evidence NULL (retrieve) or a JSON array of retrieval items
    *        [{"ref": [type, id, version], "lexical_rank", "vector_rank", "fused"}], as a manifest recorded
    *        them (replay): used as they are, nothing is retrieved
    * @return a CLOB holding the JSON object engine, snapshot, tenant_id, evaluation_time,
    *         selection_version, scorer, budget, fixed, candidates, required_refs, retrieval, excluded;
    *         retrieval is {method: recorded | lexical | hybrid-rrf-60, depth, limit, items ordered by fused
    *         desc, type, id, version}, and retrieved candidates' scores add lexical_rank, vector_rank, fused
    * @throws -20102 tenant_not_set, -20113 invalid_question (empty question),
    *         -20108 invalid_argument (NULL in_evaluation_time; in_evidence not a JSON array; in_scores not a
    *         JSON object of numbers),
    *         -20107 invalid_snapshot (in_snapshot not an SCN Oracle can read),
    *         -20111 budget_missing, -20112 invalid_budget, -20110 unknown_intent
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
      in_evidence        in clob default null
   ) return clob;

   /**
    * Records a composed window: the context_manifest event in CONVERSATION_MEMORY (role event, the manifest
    * as content_json) and one CONTEXT_SOURCE_REF row per dependency (rendered memories, their compressions,
    * annotation sources, excluded rows, the budget), in the caller's transaction, through CTX_MEMORY.
    * Inserts 1 + n rows (VPD: the session's tenant); does not commit.
    * @param in_manifest the manifest (docs/assembly.md) as a JSON object in a CLOB
    * @return the manifest id, 'manifest_' and 32 hex digits; the source refs are '<manifest id>:<n>'
    * @throws -20102 tenant_not_set, -20114 invalid_manifest (not an object; memories, excluded or
    *         required_refs not arrays; request_hash not 64 lower-case hex digits; a reference that is not
    *         [type, id, version]), -20104 invalid_field from CTX_MEMORY (a field too long or of a wrong type)
    */
   function record_manifest(in_manifest in clob) return varchar2;

   /**
    * A recorded manifest of the session's tenant: the content_json of its active context_manifest event, or
    * NULL when there is none (another tenant's manifest is as unknown as one that never existed).
    * Reads CONVERSATION_MEMORY (VPD: the session's tenant); writes nothing.
    * @param in_manifest_id the id record_manifest returned
    * @return the manifest as a JSON object in a CLOB, or NULL
    * @throws -20102 tenant_not_set
    */
   function read_manifest(in_manifest_id in conversation_memory.id%type) return clob;

   /**
    * The scope's most recent window: the id of its latest active context_manifest event (created_at desc,
    * id desc) whose user, agent and thread are exactly these (NULL matches NULL), or NULL.
    * Reads CONVERSATION_MEMORY; writes nothing.
    * @throws -20102 tenant_not_set, -20119 scope_not_allowed when the claim names another user or agent
    */
   function latest_manifest_id(
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type
   ) return varchar2;


   /**
    * The retrieval step of select_window on its own, for CTX_TOOLS.search_memory: the best in_depth
    * documents and chunks by Oracle Text (the question's words) and the best in_depth chunks by
    * VECTOR_DISTANCE to the query vector (in_query_embedding, else the model MINILM's if the schema has it,
    * else none), read AS OF in_scn, in scope and in effect at the evaluation time, fused by reciprocal rank
    * (k = 60), the best in_limit kept. Engine-internal (PostgreSQL: ctxasm.retrieve_evidence).
    * Reads what select_window's retrieval step reads; writes nothing.
    * @return a CLOB holding {"method": "lexical" | "hybrid-rrf-60", "items": [{"ref": [type, id, version],
    *         "lexical_rank", "vector_rank", "fused"}]}, items by fused desc, type, id, version
    * @throws -20102 tenant_not_set
    */
   -- contract:internal
   function retrieve_evidence(
      in_scn             in number,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_question        in clob,
      in_query_embedding in clob,
      in_depth           in pls_integer,
      in_limit           in pls_integer
   ) return clob;

   /*
    * The selection helpers. Engine-internal (PostgreSQL keeps them in schema ctxasm): they are declared here
    * only because the SQL of select_window calls them, and SQL cannot call a routine that is private to a
    * package body (PLS-00231). Pure functions: they read no table and write nothing.
    */

   /**
    * The lexical scorer lexical-overlap-1: the share of the question's distinct words (runs of ASCII letters
    * and digits, lower-cased, at least 3 long) that occur as words in the text, as a logit
    * round(8 * matched / total - 4, 6); -4 when the question has no such word.
    */
   -- contract:internal
   function lexical_logit(in_query in clob, in_text in clob) return number deterministic;

   /**
    * The dedup identity of a text: ASCII letters lower-cased, each run of white space one space, trimmed.
    */
   -- contract:internal
   function normalized_text(in_text in clob) return clob deterministic;

   /**
    * The claim identity 'subject|predicate|conditions' (conditions as canonical JSON text, '{}' when absent):
    * from the columns for entity rows, from content_json.claim for derived rows; NULL for a row that makes
    * no claim. Compared only with other claim keys of this engine.
    */
   -- contract:internal
   function claim_key(
      in_subject      in entity_memory.subject%type,
      in_predicate    in entity_memory.predicate%type,
      in_content_json in clob
   ) return clob deterministic;

   /**
    * Which copy of a duplicate is kept (lower wins): entity 1, workflow 2, kb_chunk and kb_document 3,
    * summary 4, conversation 5, anything else 9.
    */
   -- contract:internal
   function authority(in_memory_type in varchar2) return pls_integer deterministic;

   /**
    * The pointer tier: the first sentence (up to the first '. ') with white space folded, cut at a word
    * boundary to at most 100 characters plus '...'; NULL for an empty line.
    */
   -- contract:internal
   function pointer_line(in_text in clob) return varchar2 deterministic;

   /**
    * The lower-case hex sha256 of the text's UTF-8 bytes; NULL and the empty text (one value in Oracle)
    * both give the hash of the empty string.
    */
   -- contract:internal
   function sha256_hex(in_text in clob) return varchar2 deterministic;

   /**
    * A timestamp as ISO 8601 in UTC, fractional seconds without trailing zeros, offset '+00:00'
    * (the text PostgreSQL gives a timestamptz in JSON in a UTC session).
    */
   -- contract:internal
   function iso_utc(in_timestamp in timestamp with time zone) return varchar2 deterministic;
end ctx_assembly;
/
