--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-rules-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_rules authid definer is
   /**
    * The selection rules CTX_ASSEMBLY.select_window applies row by row (docs/assembly.md): how narrow a scope
    * is, the hybrid scorer, a row's claim identity and which copy of a duplicate is kept. The twin of
    * PostgreSQL's db/postgresql/internal/ctx_rules.sql (schema ctxasm), function for function. Engine-internal
    * and never granted to CTXASM_APP: declared in a spec only because the SQL of select_window calls them, and
    * SQL cannot call a routine that is private to a package body (PLS-00231). Pure functions: they read no
    * table and write nothing.
    */

   -- scores and logits are rounded to this many places (PostgreSQL: round(..., 6))
   co_score_places constant pls_integer := 6;

   -- the slices a row competes for (docs/assembly.md); the other packages take these names from here
   co_guidelines constant varchar2(32) := 'guidelines';
   co_persona    constant varchar2(32) := 'persona';
   co_tools      constant varchar2(32) := 'tools';
   co_facts      constant varchar2(32) := 'durable_facts';
   co_evidence   constant varchar2(32) := 'evidence';
   co_history    constant varchar2(32) := 'recalled_history';
   co_tail       constant varchar2(32) := 'volatile_tail';

   /**
    * How narrow a row's scope is, by containment (docs/assembly.md): a thread lies within a user, a user within
    * an agent's deployment, an agent within the tenant. The narrowest column set decides: 3 thread, 2 user,
    * 1 agent, 0 the whole tenant. Narrower wins a key or a claim.
    */
   function scope_level(
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type
   ) return number deterministic;

   /**
    * The hybrid scorer hybrid-calibrated-2: round(12 (similarity - 0.35) + 1.5 text_score / best_text_score,
    * 6), a NULL similarity or text score counting 0 (PostgreSQL: ctxasm.hybrid_logit, with BM25 where Oracle
    * has the Oracle Text SCORE).
    */
   function hybrid_logit(in_similarity in number, in_text_score in number, in_best_text_score in number)
      return number deterministic;

   /**
    * What a recalled turn's length adds to its relevance (logits): LN(in_tokens / in_mean_tokens), its stored
    * token count against the mean of the recalled turns of its voice it competes with, within -in_cap and
    * in_cap, rounded to 6 places
    * (PostgreSQL: ctxasm.length_logit, the same). One embedding averages every topic of a long turn, so a long
    * turn that answers sits below a short one that only echoes the question; and the facts are in the long turns.
    */
   function length_logit(in_tokens in number, in_mean_tokens in number, in_cap in number)
      return number deterministic;

   /**
    * The claim identity 'subject|predicate|conditions' (conditions as canonical JSON text, '{}' when absent):
    * from the columns for entity rows, from content_json.claim for derived rows; NULL for a row that makes
    * no claim. Compared only with other claim keys of this engine.
    */
   function claim_key(
      in_subject      in entity_memory.subject%type,
      in_predicate    in entity_memory.predicate%type,
      in_content_json in clob
   ) return clob deterministic;

   /**
    * Which copy of a duplicate is kept (lower wins): entity 1, workflow 2, kb_chunk and kb_document 3,
    * summary 4, conversation 5, anything else 9.
    */
   function authority(in_memory_type in varchar2) return number deterministic;

   /**
    * 1 when the question asks about the present ("is it still ...", "what is the latest ..."): then recency
    * counts in full in the priority; otherwise it only breaks near-ties (docs/assembly.md, "Choosing the
    * weights"). Whole words, any case; 0 otherwise, and 0 for a question that names a year or a month (it asks
    * about that time; "may" only next to a number). PostgreSQL: ctxasm.asks_about_present.
    */
   function asks_about_present(in_question in clob) return pls_integer deterministic;

   /**
    * A text as the words a name is looked for in: lower case, every run of characters that are not letters or
    * digits one space, and a space at each end, so that ' maya ' is found only as whole words ("Maya's" is
    * ' maya s '). PostgreSQL: ctxasm.question_words, the same.
    */
   function question_words(in_text in clob) return clob deterministic;

   /**
    * 1 when the question (its question_words) names a turn's speaker: all of the speaker's words, in order, as
    * whole words of the question; 0 for no speaker, for a name with no letter or digit, and otherwise
    * (PostgreSQL: ctxasm.names_speaker, true or false). Called from the SQL of score_step.
    */
   function names_speaker(in_question_words in clob, in_speaker in varchar2) return number deterministic;

   /**
    * The time a question (its question_words) names, as [out_from, out_to), UTC: a day ("on 7 July 2023", "on
    * May 3rd, 2023") is that day; a month and year ("in December 2023") is that month and the week after it, when
    * what happened in it is still told; a day or a month without a year ("on 7 July", "in June") is the latest
    * such day or month on or before in_evaluation_time (a month alone only after "in" or "during": "may" is a
    * word too). The first form found in that order counts; both NULL for none, and for a day its month does not
    * have. PostgreSQL: ctxasm.question_period, the same. Called by score_step before its query.
    */
   procedure question_period(
      in_question_words  in  clob,
      in_evaluation_time in  timestamp with time zone,
      out_from           out timestamp with time zone,
      out_to             out timestamp with time zone
   );
end ctx_rules;
/
