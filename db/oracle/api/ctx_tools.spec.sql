--liquibase formatted sql logicalFilePath:db/packages/oracle/spec/0070_ctx_tools.sql

--changeset ctxasm:ora-pkg-0070-ctx-tools-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_tools authid definer is
   /**
    * The database half of the MCP tools (search_memory, lookup_entity, expand) and of the tool list the
    * server advertises (active_tools). The Oracle twin of the PostgreSQL schema ctx_tools
    * (db/postgresql/api/ctx_tools.sql). Granted to CTXASM_APP. Definer's rights: the package reads
    * as the owner, and the VPD policy <TABLE>_TENANT keeps every row inside the session's tenant. Read-only:
    * nothing here writes or commits. Every routine judges the lifecycle at one evaluation time, as
    * CTX_ASSEMBLY.select_window does: a row is in effect when it is not erased or deleted and
    * valid_from <= in_evaluation_time < valid_until (NULL = open); user and agent must match or be NULL.
    *
    * Retrieval is CTX_ASSEMBLY's (Oracle Text and, for the vector half, the query vector or the ONNX model
    * MINILM), on the live tables.
    *
    * Errors are raised through CTX_ERRORS (-20115 not_in_window, -20116 source_unavailable for expand).
    */

   /**
    * The toolbox rows in effect for a user and agent at one time, the tools slice of select_window: per
    * tool_name the narrowest scope wins (then the latest valid_from, then the row id). Rows scoped to a
    * thread are out of scope (there is no thread here).
    * Reads TOOLBOX_MEMORY (session tenant only); writes nothing.
    * @param in_user_id the user; rows of other users are out of scope (NULL rows are wider)
    * @param in_agent_id the agent; as in_user_id
    * @param in_evaluation_time the one time the lifecycle is judged at
    * @return a CLOB holding the JSON array, ordered by tool_name, of
    *         {"ref": ["toolbox", id, version], "tool_name", "tool_handler", "tool_schema" (JSON),
    *         "usage_notes", "access_policy" (JSON or null)}; [] when there is none
    * @throws -20102 tenant_not_set, -20108 invalid_argument (NULL in_evaluation_time)
    */
   function active_tools(
      in_user_id         in toolbox_memory.user_id%type,
      in_agent_id        in toolbox_memory.agent_id%type,
      in_evaluation_time in timestamp with time zone
   ) return clob;

   /**
    * Bounded hybrid retrieval for the search_memory tool: the retrieval step of select_window for the evidence
    * slice (CTX_ASSEMBLY.retrieve_for_question: Oracle Text over the question's rarest words and
    * VECTOR_DISTANCE over the HNSW index, depth 50 each, fused by reciprocal rank, k = 60) keeping the best
    * in_limit, with each item's text and provenance. Only rows in scope and in effect at the evaluation time,
    * of the session's tenant.
    * Reads KNOWLEDGE_BASE_CHUNK and KNOWLEDGE_BASE_DOCUMENT and their text and vector indexes; writes nothing.
    * @param in_user_id the user; as active_tools
    * @param in_agent_id the agent; as active_tools
    * @param in_thread_id the thread; rows of other threads are out of scope (NULL rows are wider)
    * @param in_evaluation_time the one time the lifecycle is judged at
    * @param in_query the query text, 1 to 500 characters, not blank
    * @param in_query_embedding NULL (the model MINILM embeds the query if the schema has it, else lexical
    *        only) or the query's embedding as vector text '[x, y, ...]' of 384 numbers
    * @param in_limit how many items at most, 1 to 20; outside that range it is refused, not clamped
    * @return a CLOB holding the JSON object {"retrieval": "lexical-oracle-text" |
    *         "hybrid-oracle-text-hnsw-rrf-60", "items": [{"ref",
    *         "title", "content", "collection", "source", "scores": {"lexical_rank", "vector_rank",
    *         "fused"}}]}, items by fused desc, then type, id, version; a chunk's collection and source
    *         (source_uri) are its document's
    * @throws -20102 tenant_not_set, -20108 invalid_argument naming in_evaluation_time, in_query, in_limit
    *         or in_query_embedding
    */
   function search_memory(
      in_user_id         in knowledge_base_chunk.user_id%type,
      in_agent_id        in knowledge_base_chunk.agent_id%type,
      in_thread_id       in knowledge_base_chunk.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_query           in clob,
      in_query_embedding in clob,
      in_limit           in pls_integer
   ) return clob;

   /**
    * A claim (subject, predicate) at one time: the version in effect (narrowest scope, then the latest
    * valid_from, then the row id, as the conflict step) and the earlier versions, newest first. Every
    * version stays in ENTITY_MEMORY with its status, so the table holds the whole history; erased rows (no
    * content left) and rows not yet in effect at the evaluation time are not shown. Rows scoped to a thread
    * are out of scope.
    * Reads ENTITY_MEMORY (session tenant only); writes nothing.
    * @param in_user_id the user; as active_tools
    * @param in_agent_id the agent; as active_tools
    * @param in_evaluation_time the one time the lifecycle is judged at
    * @param in_subject the claim's subject, e.g. 'model:helios-rag' (exact match)
    * @param in_predicate the claim's predicate, e.g. 'beir_ndcg10' (exact match)
    * @return a CLOB holding the JSON object {"current": {"ref", "content", "content_json", "confidence",
    *         "valid_from"} or null, "history": [{"ref", "content", "content_json", "status" (superseded |
    *         expired | deleted), "valid_from", "valid_to"}]}, history by valid_from desc, version desc, id;
    *         an unknown claim gives {"current": null, "history": []}
    * @throws -20102 tenant_not_set, -20108 invalid_argument naming in_evaluation_time, in_subject or
    *         in_predicate
    */
   function lookup_entity(
      in_user_id         in entity_memory.user_id%type,
      in_agent_id        in entity_memory.agent_id%type,
      in_evaluation_time in timestamp with time zone,
      in_subject         in entity_memory.subject%type,
      in_predicate       in entity_memory.predicate%type
   ) return clob;

   /**
    * The full text of a memory that a recorded window issued (a memories[*].id of the context_manifest
    * event in_manifest_id, 'M' and 12 decimal digits), while its source row version is still visible: it exists
    * for this tenant, is the current version (status active), is not deleted or erased, and is in effect at
    * the evaluation time.
    * Reads CONVERSATION_MEMORY (the manifest) and the source row's table (session tenant only); writes nothing.
    * @param in_manifest_id the manifest id record_manifest returned
    * @param in_memory_id the memory id as the window showed it
    * @param in_evaluation_time the one time the lifecycle is judged at
    * @return a CLOB holding the JSON object {"memory_id", "ref": [type, id, version], "type", "title"
    *         (title, subject or key of the row; null when it has none), "content" (the full text),
    *         "tier_in_window" (full | summary | pointer)}
    * @throws -20102 tenant_not_set, -20108 invalid_argument (a NULL argument),
    *         -20115 not_in_window (no such manifest for this tenant, or the id was not issued in it),
    *         -20116 source_unavailable (the source is gone, superseded, deleted, erased, expired or not yet
    *         in effect); both messages name the memory id
    */
   function expand(
      in_manifest_id     in conversation_memory.id%type,
      in_memory_id       in varchar2,
      in_evaluation_time in timestamp with time zone
   ) return clob;
end ctx_tools;
/
