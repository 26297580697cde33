--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-selection-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_selection authid definer is
   /**
    * The selection rules of one window (docs/assembly.md), one routine per rule, in the order
    * CTX_ASSEMBLY.select_window runs them: scope_step, lifecycle_step, dedup_step, conflict_step, required_step,
    * score_step, priority_step, tie_break_step, limit_step; then exclusions, the manifest's excluded list built
    * from the reasons the steps wrote. Each step takes the window's candidate rows (ctx_selection_candidates,
    * as CTX_SOURCES read them) and returns them with its own attributes filled; only scope_step drops rows (those
    * out of scope, which the window never shows, not even as excluded). A row that a step excludes stays in the
    * collection with its reason, so the later steps see every row the original single statement saw.
    * The twin of PostgreSQL's db/postgresql/internal/ctx_selection.sql (schema ctxasm). Engine-internal, for
    * CTX_ASSEMBLY.select_window; never granted to CTXASM_APP. The steps read no table (the rows come in);
    * candidate_items reads the compressions, led by the tenant it is given. Writes nothing.
    */

   /**
    * Scope: user, agent and thread must match or be NULL (wider); a user's turns in other threads are recalled
    * history; events are not memory; budget guidelines are not shown. Checked again here because replay takes
    * its source list from the caller. Numbers the rows kept (row_no) and gives each its scope level, authority
    * and slice.
    */
   function scope_step(
      in_rows      in ctx_selection_candidates,
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type
   ) return ctx_selection_candidates;

   /**
    * Lifecycle, at the one evaluation time: lifecycle_reason (NULL = in effect; erased, deleted,
    * not_yet_effective, superseded, expired), and the claim identity of every row, in effect or not (a cited row
    * out of effect names its claim's winner), as sha256 of its text: Oracle cannot partition or join on a CLOB.
    */
   function lifecycle_step(in_rows in ctx_selection_candidates, in_evaluation_time in timestamp with time zone)
      return ctx_selection_candidates;

   /**
    * Dedup, among the rows in effect of the dynamic slices: identical normalized text (the stored text_key)
    * keeps the most authoritative copy, where claim identities agree; the others are duplicates naming it.
    */
   function dedup_step(in_rows in ctx_selection_candidates) return ctx_selection_candidates;

   /**
    * Conflict. Fixed slices: per (type, key) the narrowest scope wins (key_rank 1). Dynamic slices: within a
    * claim, canonical facts beat derived claims and the narrower scope wins; a loser names the winner. Marks the
    * rows that still compete (competing = 1).
    */
   function conflict_step(in_rows in ctx_selection_candidates) return ctx_selection_candidates;

   /**
    * Required. History that cites a version no longer in effect stays, with notes naming the claim's current
    * winner (whatever its row id) or, for a row that makes no claim, the current version of the same row; when
    * the budget requires current facts (in_require = 1), those winners are required (kept past the limit).
    */
   function required_step(in_rows in ctx_selection_candidates, in_require in pls_integer)
      return ctx_selection_candidates;

   /**
    * Score. Relevance is the caller's logit (in_scores, the JSON array of {"k": "type:id:version", "v": logit}),
    * the recorded one on replay (in_use_sources = 1), or the hybrid scorer's (CTX_RULES.hybrid_logit) from the
    * embedding similarity and the Oracle Text score within the slice (in_text_scores, when in_scoring = 1),
    * lifted for a recalled turn whose speaker the question names (in_question_words, CTX_RULES.question_words of
    * the question) and for one said in the time it names (CTX_RULES.question_period); a recalled turn is worth at least its thread neighbour less a margin, and gains a share of
    * its thread's best relevance; then rerank (the sigmoid), confidence and recency (linear over
    * in_recency_days).
    */
   function score_step(
      in_rows            in ctx_selection_candidates,
      in_sources         in ctx_selection_candidates,
      in_scores          in clob,
      in_text_scores     in clob,
      in_scoring         in pls_integer,
      in_use_sources     in pls_integer,
      in_evaluation_time in timestamp with time zone,
      in_recency_days    in number,
      in_question_words  in clob
   ) return ctx_selection_candidates;

   /**
    * Priority: w_rerank * rerank, then confidence and recency at a small share of their weights, times
    * 4 rerank (1 - rerank) (recency in full when the question asks about the present, in_present = 1): they
    * break near-ties of relevance, near in logits at any rerank.
    */
   function priority_step(
      in_rows         in ctx_selection_candidates,
      in_w_rerank     in number,
      in_w_confidence in number,
      in_w_recency    in number,
      in_present      in pls_integer
   ) return ctx_selection_candidates;

   /**
    * Tie-break: the rank in the slice by priority desc, logit desc (rerank rounds to 1 above a logit of about
    * 14), valid_from desc, source table, row id, version; the tail keeps the latest turns.
    */
   function tie_break_step(in_rows in ctx_selection_candidates) return ctx_selection_candidates;

   /**
    * Limit: each slice keeps its first in_limits[slice] (CTX_BUDGET.candidate_limits); required rows are always
    * kept (cut = 0).
    */
   function limit_step(in_rows in ctx_selection_candidates, in_limits in json_object_t)
      return ctx_selection_candidates;

   /**
    * The manifest's excluded list from the steps' reasons: lifecycle, the fixed slices' conflicts, duplicates
    * and lost claims, as a JSON array ordered by rule and reference.
    */
   function exclusions(in_rows in ctx_selection_candidates) return clob;

   -- The document's other parts, each a JSON array (empty when there is nothing), ordered as on PostgreSQL.

   /**
    * The fixed slices' rows (key_rank 1), by slice (guidelines, persona, tools), scope level, key and id.
    */
   function fixed_items(in_rows in ctx_selection_candidates) return clob;

   /**
    * Step tiers and the candidates: each kept row (competing, not cut) with its full, summary and pointer tiers,
    * by slice and selection rank. The summary tier is the row version's newest active compression in effect at
    * in_evaluation_time (valid_from <= t < valid_until, as every row the window reads), read by index
    * led by in_tenant_id, live or, with in_snapshot_scn, AS OF in_read_scn (one erased since is not returned),
    * refused when it no longer matches the row's text. Reads CONTEXT_COMPRESSION; the only part that reads.
    */
   function candidate_items(
      in_rows            in ctx_selection_candidates,
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_snapshot_scn    in number,
      in_read_scn        in number,
      in_evaluation_time in timestamp with time zone
   ) return clob;

   /**
    * What the limit cut, once per slice: how many rows, and the priority below which they fell.
    */
   function candidate_cuts(in_rows in ctx_selection_candidates) return clob;

   /**
    * The current facts history requires (required_step), as references by type, id, version.
    */
   function required_refs(in_rows in ctx_selection_candidates) return clob;

   /**
    * The source list as the manifest records it (in_sources: CTX_SOURCES.merged_sources): one entry per row
    * version, with the figures it was scored by (logit, bm25, similarity; absent when it was not scored).
    */
   function recorded_sources(in_rows in ctx_selection_candidates, in_sources in ctx_selection_candidates)
      return clob;
end ctx_selection;
/
