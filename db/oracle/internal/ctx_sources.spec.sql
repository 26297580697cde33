--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-sources-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_sources authid definer is
   /**
    * The candidate sources of one window (docs/assembly.md, step sources). Selection never reads "every row in
    * scope": it reads a bounded list of sources, each a [type, id, version] reference with where it came from,
    * then the rows those name by primary key. window_sources makes that list for a live window (what it
    * enumerates, what CTX_RETRIEVAL finds, what recalled history cites); merged_sources makes one entry per row
    * version of it, and live_rows / rows_as_of read the rows, as the candidates CTX_SELECTION's steps take. The twin of PostgreSQL's
    * db/postgresql/internal/ctx_sources.sql (schema ctxasm). Engine-internal, for CTX_ASSEMBLY.select_window;
    * never granted to CTXASM_APP. Definer's rights: they read the live memory tables as the owner, every read
    * led by the tenant the caller passes (the session's, which the caller checked), or, for a replay, AS OF the
    * recorded SCN (rows_as_of); they write nothing.
    */

   /**
    * Whether the durable facts in scope are few enough (at most in_limit row versions) to enumerate them
    * all; beyond that they are retrieved like evidence. Reads at most in_limit + 1 rows (scope indexes).
    */
   function facts_enumerable(
      in_tenant_id in ctx_tenant.tenant_id%type,
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type,
      in_limit     in pls_integer
   ) return boolean;

   /**
    * The sources a window enumerates rather than retrieves: every version in scope of the guidelines, persona
    * and tools (small by nature; the lifecycle step decides), the thread's latest in_tail_limit messages by
    * turn index, and, when in_with_facts is 1, every version of the durable facts in scope. A JSON array of
    * source items {"ref", "origin", "slice"}.
    */
   function enumerated_sources(
      in_tenant_id  in ctx_tenant.tenant_id%type,
      in_user_id    in conversation_memory.user_id%type,
      in_agent_id   in conversation_memory.agent_id%type,
      in_thread_id  in conversation_memory.thread_id%type,
      in_tail_limit in pls_integer,
      in_with_facts in pls_integer
   ) return clob;

   /**
    * What history depends on: the rows the recalled summaries and turns among in_sources cite (their
    * source_refs; origin cited, no slice), and, for a cited row that makes a claim, every active canonical fact
    * of that claim in scope (origin claim), so the conflict step can name the claim's current winner whatever
    * its row id. Every read by primary key or by the claim index, led by the tenant.
    */
   function claim_sources(
      in_tenant_id in ctx_tenant.tenant_id%type,
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type,
      in_sources   in clob
   ) return clob;
   /**
    * The sources of a live window: what it enumerates (the fixed slices, the thread's latest in_limits
    * volatile_tail messages, the durable facts in scope when they are few), what retrieval finds for each
    * retrieved slice (Oracle Text and the vector index, fused; the tail's turns left out; for recalled history
    * also the turns next to the best ones), then what the recalled history cites and the claims of those
    * citations: a JSON array of source items. out_text_scores: the lexical query's SCORE of each row it found
    * ({"t", "i", "v", "s"}), the hybrid scorer's text signal. in_limits: CTX_BUDGET.candidate_limits.
    */
   function window_sources(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_question        in clob,
      in_query_vector    in clob,
      in_limits          in json_object_t,
      out_text_scores    out clob
   ) return clob;

   /**
    * The source list (a JSON array of source items: select_window's in_sources on replay, else what the window
    * enumerated and retrieved) as one entry per row version: the first origin by precedence (the thread's tail,
    * enumeration, retrieval, a turn next to a retrieved one, a claim, a citation), with the figures of the
    * retrieval entry for it. Only the source attributes of each ctx_selection_candidate are filled (row_no is
    * NULL). Reads no table.
    */
   function merged_sources(in_sources in clob) return ctx_selection_candidates;

   /**
    * The rows in_sources name, read live by primary key, each read led by in_tenant_id, as candidates carrying
    * their source entry's figures. The embedding is compared with in_query_vector here when in_scoring is 1
    * (similarity_raw), so no vector travels further; JSON columns travel as CLOB text. A source naming no row
    * gives no candidate.
    */
   function live_rows(
      in_tenant_id    in ctx_tenant.tenant_id%type,
      in_sources      in ctx_selection_candidates,
      in_query_vector in clob,
      in_scoring      in pls_integer
   ) return ctx_selection_candidates;

   /**
    * As live_rows, for a replay: the rows AS OF in_read_scn, except those whose row version is erased now (undo
    * still holds their text, and the contract never returns it; PostgreSQL deletes the history copies with the
    * erasure, so a replay finds no such row there either).
    */
   function rows_as_of(
      in_tenant_id    in ctx_tenant.tenant_id%type,
      in_sources      in ctx_selection_candidates,
      in_read_scn     in number,
      in_query_vector in clob,
      in_scoring      in pls_integer
   ) return ctx_selection_candidates;
end ctx_sources;
/
