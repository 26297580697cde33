--liquibase formatted sql

-- One candidate row of a window's selection as it passes from step to step (CTX_SOURCES reads it, each step of
-- CTX_SELECTION fills its own attributes, CTX_ASSEMBLY.select_window writes the document from it). A SQL object
-- type, not a package record, because the steps read the rows with TABLE() inside SQL (window functions for the
-- ranks), and SQL sees only schema-level types there. The attribute names are the column names the steps have
-- always used; the PostgreSQL twin is the composite type ctxasm.selection_candidate
-- (db/postgresql/internal/ctx_selection.sql). FORCE: a changed definition replaces the type although the
-- collection type ctx_selection_candidates depends on it (no table stores either).

--changeset ctxasm:ora-type-ctx-selection-candidate dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace type ctx_selection_candidate force as object (
   -- the position in its collection: a step writes what it computed in SQL back by it
   row_no                 number,
   -- the source entry (CTX_SOURCES.merged_sources)
   memory_type            varchar2(32),
   table_name             varchar2(32),
   origin                 varchar2(16),
   item_slice             varchar2(32),
   precedence             number,
   next_to                varchar2(128),
   retrieved              number,
   source_lexical_rank    number,
   source_vector_rank     number,
   source_lexical_score   number,
   source_vector_distance number,
   source_fused           number,
   source_logit           number,
   source_bm25            number,
   source_similarity      number,
   source_thread_logit    number,
   source_adjacent_logit  number,
   source_length_logit    number,
   -- the row the source names (CTX_SOURCES.live_rows, rows_as_of)
   id                     varchar2(128),
   version                number,
   user_id                varchar2(64),
   agent_id               varchar2(64),
   thread_id              varchar2(64),
   status                 varchar2(16),
   valid_from             timestamp with time zone,
   valid_until            timestamp with time zone,
   deleted_at             timestamp with time zone,
   content                clob,
   content_json           clob,
   source_refs            clob,
   confidence             number,
   key_name               varchar2(512),
   subject                varchar2(256),
   predicate              varchar2(256),
   title                  varchar2(512),
   turn_index             number,
   role                   varchar2(16),
   event_type             varchar2(64),
   extra                  clob,
   content_tokens         number,
   similarity_raw         number,
   text_key               varchar2(32),
   -- generated: candidate row attributes from contract/memory_types.toml; edit the catalogue, then regenerate
   pointer_text           varchar2(64),
   -- end generated: candidate row attributes
   -- scope_step
   scope_level            number,
   authority_rank         number,
   slice                  varchar2(32),
   -- lifecycle_step: NULL reason = in effect
   lifecycle_reason       varchar2(32),
   claim_key              clob,
   claim_hash             varchar2(64),
   -- dedup_step
   is_duplicate           number,
   kept_type              varchar2(32),
   kept_id                varchar2(128),
   kept_version           number,
   -- conflict_step: key_rank among the fixed slices' rows of one key, the winner of a lost claim, and whether
   -- the row still competes (in effect, in a dynamic slice, neither a duplicate nor a lost claim)
   key_rank               number,
   winner_type            varchar2(32),
   winner_id              varchar2(128),
   winner_version         number,
   competing              number,
   -- required_step: history's notes on what it cites, and whether the row is a current fact history requires
   notes                  clob,
   required               number,
   -- score_step
   bm25_raw               number,
   own_logit              number,
   bm25                   number,
   similarity             number,
   adjacent_logit         number,
   thread_logit           number,
   length_logit           number,
   logit                  number,
   rerank                 number,
   confidence_score       number,
   recency                number,
   -- priority_step
   priority               number,
   -- tie_break_step
   slice_rank             number,
   slice_limit            number,
   -- limit_step
   cut                    number
)
/
--rollback drop type ctx_selection_candidate force;
