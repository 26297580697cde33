--liquibase formatted sql logicalFilePath:db/packages/oracle/spec/0050_ctx_memory.sql

--changeset ctxasm:ora-pkg-0050-ctx-memory-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_memory authid definer is
   /**
    * The write API of the memory tables and their point-in-time reads (docs/contract.md, CTX_MEMORY).
    * Granted to CTXASM_APP, which has no INSERT, UPDATE or DELETE of its own. Definer's rights: the package
    * writes as the owner, and the VPD policy <TABLE>_TENANT (update_check) keeps every row it reads or
    * writes inside the session's tenant. Nothing here commits: the caller ends the transaction.
    *
    * in_memory_type is one of guideline, persona, toolbox, entity, workflow, kb_document, kb_chunk,
    * conversation, summary, compression, source_ref. in_record is a CLOB holding one JSON object whose keys
    * are column names of that type's table (lowercase). Timestamps are ISO 8601 strings, JSON columns take
    * any JSON value (tool_schema an object, source_refs an array), embedding an array of 384 numbers.
    */

   /**
    * Writes version 1 of a new memory in the session's tenant.
    * Reads USER_TAB_COLUMNS (the table's columns) and the type's table; inserts one row
    * (tenant_id = the session tenant, version 1, status active, the stored text columns from content; missing
    * columns take their defaults).
    * @param in_memory_type the memory type
    * @param in_record the row as JSON; id and content are required, valid_from defaults to now
    * @return the id of the new memory
    * @throws -20102 tenant_not_set, -20103 invalid_memory_type,
    *         -20104 invalid_field (a key that is no column, tenant_id other than the session's, version,
    *         status, created_at, text_key or pointer_text given, a value of the wrong type, too long, out of
    *         range or missing;
    *         the message names <type>.<field>), -20105 duplicate_memory (the id exists for the tenant)
    */
   function put_memory(in_memory_type in varchar2, in_record in clob) return varchar2;

   /**
    * Writes the next turn of a thread: a conversation message (role user or assistant) whose turn_index is
    * the highest turn_index of the thread's messages + 1 (1 for a new thread), otherwise as put_memory.
    * Locks the tenant's CTX_TENANT row (FOR UPDATE) until the caller ends the transaction, so two turns of a
    * thread never get the same index; reads the thread's messages; inserts one row.
    * @param in_record the turn as JSON: id, role, content and thread_id are required; turn_index and
    *        event_type are assigned, not given
    * @return the turn_index given to the turn
    * @throws as put_memory, and -20104 invalid_field when thread_id is missing, role is not user or
    *         assistant, or turn_index or event_type is given
    */
   function add_turn(in_record in clob) return number;

   /**
    * Replaces the active version of a memory, in one transaction: the active version becomes superseded
    * with valid_until = the new valid_from, and version + 1 is inserted with the active version's fields
    * overlaid by in_record (valid_from defaults to now; valid_until and deleted_at are not inherited; a new
    * content brings new stored text columns and no inherited content_tokens).
    * Reads and locks (FOR UPDATE) the active version; updates it and inserts the new one.
    * @param in_memory_type the memory type
    * @param in_id the id of the memory; an id in in_record must be the same
    * @param in_record the fields that change, as JSON
    * @return the new version number
    * @throws as put_memory (without duplicate_memory), and -20106 memory_not_found when the memory has
    *         no active version; -20104 invalid_field when the new valid_from is before the active one's
    */
   function supersede(in_memory_type in varchar2, in_id in varchar2, in_record in clob) return number;

   /**
    * Soft-deletes a memory: its active version gets status deleted and deleted_at. The row version stays
    * for provenance and for rows_as_of.
    * Updates one row of the type's table.
    * @param in_memory_type the memory type
    * @param in_id the id of the memory
    * @param in_deleted_at the deletion time (NULL or omitted: now)
    * @throws -20102 tenant_not_set, -20103 invalid_memory_type,
    *         -20106 memory_not_found when the memory has no active version
    */
   procedure delete_memory(
      in_memory_type in varchar2,
      in_id          in varchar2,
      in_deleted_at  in timestamp with time zone default systimestamp
   );

   /**
    * Erases one memory and every copy of its text the database keeps, and says what went. Every version of
    * the row keeps its keys and scope, but its text columns become '[erased]' (NOT NULL) or NULL, its JSON
    * payloads empty, its embedding and source_hash NULL, and its status erased. Followed the same way, until
    * nothing new turns up: compressions of an erased row; conversation events (tool results, model responses,
    * recorded requests) whose source_refs cite an erased row; rows a context_source_ref names as derived from
    * an erased row, when that reference's own user and agent could have written them; the chunks of an erased
    * kb_document; the windows (manifests) that rendered an erased row and every event recorded for them. The
    * manifests keep their references (no memory text), get erased_dependencies, and lose the question when it
    * contained an erased text. "erased" lists only the rows erased (not those VPD hides from the session).
    * Oracle keeps the pre-erasure row images in undo (and in a Flashback Time Travel archive if one is
    * enabled) until their retention ends; rows_as_of and select_window do not return versions erased now
    * (docs/security.md).
    * @param in_memory_type the memory type
    * @param in_id the id of the memory
    * @return a CLOB holding {"erased": [[type, id], ...], "tables": {table: {"rows", "history_rows"}},
    *         "manifests_marked", "total"} (history_rows is 0: Oracle keeps no history table)
    * @throws -20102 tenant_not_set, -20103 invalid_memory_type, -20106 memory_not_found when no version of
    *         the memory exists for the tenant, -20119 scope_not_allowed when a version is outside the claim's
    *         user or agent
    */
   function erase_report(in_memory_type in varchar2, in_id in varchar2) return clob;

   /**
    * erase_report, returning only the number of row versions erased (its "total").
    * @throws as erase_report
    */
   function erase(in_memory_type in varchar2, in_id in varchar2) return number;

   /**
    * The current system change number as text, to pass to rows_as_of later.
    * Reads SYS.DBMS_FLASHBACK.GET_SYSTEM_CHANGE_NUMBER; writes nothing. Raises nothing of ours.
    */
   function capture_snapshot return varchar2;

   /**
    * Every row version of the type that was visible at the snapshot and is not erased now, for the session's
    * tenant only, as one column ROW_JSON (a CLOB holding a JSON object of the common and type-specific columns),
    * ordered by id and version.
    * Reads the type's table AS OF SCN (undo: history lasts for the undo retention); writes nothing.
    * @param in_memory_type the memory type
    * @param in_snapshot a value returned by capture_snapshot
    * @throws -20102 tenant_not_set, -20103 invalid_memory_type,
    *         -20107 invalid_snapshot when in_snapshot is not an SCN or Oracle rejects it (ORA-08180,
    *         ORA-08181, ORA-01466)
    */
   function rows_as_of(in_memory_type in varchar2, in_snapshot in varchar2) return sys_refcursor;

   /**
    * One active conversation event of the session's tenant (a tool result, a recorded request).
    * Reads CONVERSATION_MEMORY; writes nothing.
    * @param in_event_id the event's id
    * @return a CLOB holding {"event_type", "content", "content_json"}, or NULL when there is no such event
    * @throws -20102 tenant_not_set
    */
   function read_event(in_event_id in conversation_memory.id%type) return clob;

   /**
    * For each [type, id, version] of in_refs: the row version's status now and at the snapshot (AS OF SCN),
    * for replay to check before it selects again. Versions the session cannot see now are left out.
    * Reads the types' tables now and AS OF SCN; writes nothing.
    * @param in_refs a JSON array of at most 10,000 [type, id, version] references
    * @param in_snapshot a value returned by capture_snapshot
    * @return a CLOB holding {"type:id:version": [status now, status then or null]}
    * @throws -20102 tenant_not_set, -20103 invalid_memory_type, -20107 invalid_snapshot,
    *         -20108 invalid_argument when in_refs is not such an array
    */
   function row_states(in_refs in clob, in_snapshot in varchar2) return clob;

   /**
    * The stored compressions in_refs names, as they are now (not AS OF): replay reads the compressions a window
    * wrote after its SCN through this, never through a model. Versions the session cannot see are left out.
    * Reads CONTEXT_COMPRESSION; writes nothing.
    * @param in_refs a JSON array of at most 10,000 ["compression", id, version] references
    * @return a CLOB holding {"compression:id:version": {"status", "content", "content_tokens", "source",
    *         "source_hash", "generating_model", "prompt_version"}}
    * @throws -20102 tenant_not_set, -20108 invalid_argument when in_refs is not such an array
    */
   function read_compressions(in_refs in clob) return clob;

   /**
    * The threads of the session's tenant (of one user and agent when given) that have active message turns
    * their episode summary does not cover yet, most such turns first, at most in_limit of them. A thread's
    * episode summary is the active summary row whose summary_key is 'thread:' || thread_id; it covers the turns
    * up to its content_json.episode.last_turn. summarize-threads reads this to pick the threads it summarizes,
    * and the summary it continues.
    * Reads CONVERSATION_MEMORY and SUMMARIZATION_MEMORY; writes nothing.
    * @param in_user_id the user whose threads (NULL: every user's, when the claim names none)
    * @param in_agent_id the agent whose threads (NULL: every agent's, when the claim names none)
    * @param in_limit at most this many threads, 1..10000
    * @return a CLOB holding [{"thread_id", "user_id", "agent_id", "turns", "new_turns", "last_turn_index",
    *         "last_turn_at", "summarized_through", "summary": null or {"ref", "content", "episode",
    *         "valid_from"}}]
    * @throws -20102 tenant_not_set, -20108 invalid_argument (in_limit), -20119 scope_not_allowed
    */
   function thread_activity(
      in_user_id  in conversation_memory.user_id%type,
      in_agent_id in conversation_memory.agent_id%type,
      in_limit    in number
   ) return clob;

   /**
    * A thread's active message turns after turn in_after_turn, in turn order, at most in_limit of them; a claim
    * that names a user (an agent) reads that user's (agent's) turns only.
    * Reads CONVERSATION_MEMORY; writes nothing.
    * @param in_thread_id the thread
    * @param in_after_turn the turn_index after which to start (NULL or 0: from the first)
    * @param in_limit at most this many turns, 1..10000
    * @return a CLOB holding [{"ref", "turn_index", "role", "content", "valid_from", "user_id", "agent_id"}]
    * @throws -20102 tenant_not_set, -20108 invalid_argument (in_limit)
    */
   function thread_turns(
      in_thread_id  in conversation_memory.thread_id%type,
      in_after_turn in number,
      in_limit      in number
   ) return clob;

   /**
    * Facts (ENTITY_MEMORY rows) whose subject starts with in_subject_prefix, of the claim's user and agent when
    * it names them, at most in_limit row versions: without in_id the active ones, newest first; with in_id every
    * version of that fact (erased ones left out), oldest first. The read an adapter lists, gets and versions its
    * own facts through: the session tenant's rows only, by a tenant-leading index.
    * Reads ENTITY_MEMORY; writes nothing.
    * @param in_subject_prefix the start of the subject ('' is not allowed: Oracle reads it as NULL)
    * @param in_predicate the predicate (NULL: any)
    * @param in_id the fact whose versions to read (NULL: the active facts)
    * @param in_limit at most this many row versions, 1..1000
    * @return a CLOB holding [{"ref", "subject", "predicate", "content", "content_json", "status", "valid_from",
    *         "first_valid_from", "deleted_at", "user_id", "agent_id"}]
    * @throws -20102 tenant_not_set, -20108 invalid_argument (in_limit, in_subject_prefix)
    */
   function read_facts(
      in_subject_prefix in entity_memory.subject%type,
      in_predicate      in entity_memory.predicate%type,
      in_id             in entity_memory.id%type,
      in_limit          in number
   ) return clob;

   /**
    * The session's row versions counted per memory type and status.
    * Reads every memory table; writes nothing.
    * @return a CLOB holding [{"memory_type", "status", "rows"}], by type (the order of the memory types) and
    *         status
    * @throws -20102 tenant_not_set
    */
   function inventory return clob;

   /*
    * The stored text columns. put_memory and supersede store, with every row version of a table that has them
    * (entity, workflow, kb_document, kb_chunk, conversation, summary), text_key = text_key(content) and
    * pointer_text = pointer_line(content): computed once when the row is written, never per assembly
    * (PostgreSQL: generated columns over ctxasm.normalized_text and ctxasm.pointer_line). A caller cannot set
    * them. Engine-internal helpers, declared here so CTX_ASSEMBLY can use them too: pure functions that read no
    * table and write nothing.
    */

   /**
    * The text identity of the dedup step: the lower-case hex md5 of the text's UTF-8 bytes after folding
    * (ASCII letters lower-cased, each run of white space one space, trimmed), as PostgreSQL's
    * md5(ctxasm.normalized_text(content)). Texts of any length are read to their end.
    */
   -- contract:internal
   function text_key(in_text in clob) return varchar2 deterministic;

   /**
    * The pointer tier's line: the first sentence (up to the first '. ') with white space folded, cut at a word
    * boundary to at most 60 characters plus '...'; NULL for an empty line (PostgreSQL: '').
    */
   -- contract:internal
   function pointer_line(in_text in clob) return varchar2 deterministic;

   /**
    * The lower-case hex sha256 of the text's UTF-8 bytes; NULL and the empty text (one value in Oracle) both
    * give the hash of the empty string. The summary tier's freshness check (context_compression.source_hash).
    */
   -- contract:internal
   function sha256_hex(in_text in clob) return varchar2 deterministic;
end ctx_memory;
/
