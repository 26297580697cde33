--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-selection-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_selection is
   -- PostgreSQL: db/postgresql/internal/ctx_selection.sql (the same steps under the same names).
   -- A step that needs SQL (a window function, a join) selects what it computed with each row's row_no, and
   -- writes it back into the collection by that number; the rest is PL/SQL over the rows.

   co_budget_key         constant varchar2(32) := ctx_budget.co_budget_key;
   -- scoring
   co_score_places       constant pls_integer := ctx_rules.co_score_places;
   co_seconds_per_day    constant number := 86400;
   co_default_confidence constant number := 0.5;
   -- how far below its thread neighbour's relevance a recalled turn may fall (logits; PostgreSQL the same)
   co_adjacent_margin    constant number := 2.5;
   -- a recalled turn gains this share of its thread's best relevance (logits; PostgreSQL the same)
   co_thread_weight      constant number := 0.3;
   -- a recalled turn whose speaker the question names gains this much (logits; PostgreSQL the same)
   co_speaker_weight     constant number := 1.0;
   -- the most a recalled turn's length moves its logit either way (ctx_rules.length_logit; PostgreSQL the same)
   co_length_cap         constant number := 1.0;
   -- a recalled turn said in the time the question names gains this much (ctx_rules.question_period; logits;
   -- PostgreSQL the same)
   co_date_weight        constant number := 1.5;
   -- confidence and recency break near-ties of relevance: their weights count at this share, and recency's in
   -- full only when the question asks about the present (ctx_rules.asks_about_present; PostgreSQL the same)
   co_tie_share          constant number := 0.005;
   -- stands for a neighbour that is not a candidate (greatest would return NULL for a missing one)
   co_no_logit           constant number := -1e9;
   -- beyond this logit the rounded sigmoid is 0 or 1 (1 / (1 + e^40) is about 4e-18); EXP of a larger argument
   -- overflows NUMBER, whose largest value is below e^290 (ORA-01426), where PostgreSQL's numeric still gives 0
   co_sigmoid_bound      constant number := 40;
   -- the slices
   co_facts      constant varchar2(32) := ctx_rules.co_facts;
   co_evidence   constant varchar2(32) := ctx_rules.co_evidence;
   co_history    constant varchar2(32) := ctx_rules.co_history;
   co_tail       constant varchar2(32) := ctx_rules.co_tail;

   -- what a step's query gives back per row (row_no first)
   type t_numbers is table of number;
   type t_texts is table of varchar2(128);
   type t_clobs is table of clob;

   -- ------------------------------------------------------------------------------------------------------
   -- scope

   function scope_step(
      in_rows      in ctx_selection_candidates,
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type
   ) return ctx_selection_candidates is
      l_all       ctx_selection_candidates := in_rows;
      l_rows      ctx_selection_candidates := ctx_selection_candidates();
      r_row       ctx_selection_candidate;
      l_nos       t_numbers;
      l_levels    t_numbers;
      l_authority t_numbers;
      l_slices    t_texts;
   begin
      for i in 1 .. l_all.count loop
         r_row := l_all(i);
         r_row.row_no := i;
         l_all(i) := r_row;
      end loop;
      select r.row_no,
             ctx_rules.scope_level(in_user_id => r.user_id, in_agent_id => r.agent_id, in_thread_id => r.thread_id),
             ctx_rules.authority(in_memory_type => r.memory_type),
             case r.memory_type
                         -- generated: slice for type from contract/memory_types.toml; edit the catalogue, then regenerate
                         when 'guideline' then 'guidelines'
                         when 'persona' then 'persona'
                         when 'toolbox' then 'tools'
                         when 'entity' then 'durable_facts'
                         when 'workflow' then 'durable_facts'
                         when 'kb_document' then 'evidence'
                         when 'kb_chunk' then 'evidence'
                         when 'summary' then 'recalled_history'
                         when 'conversation' then
                            case when r.origin = 'tail' then 'volatile_tail' else 'recalled_history' end
                         -- end generated: slice for type
             end
        bulk collect into l_nos, l_levels, l_authority, l_slices
        from table(l_all) r
       where (r.user_id is null or r.user_id = in_user_id)
         and (r.agent_id is null or r.agent_id = in_agent_id)
         and (r.thread_id is null or r.thread_id = in_thread_id
              or (r.memory_type = 'conversation' and r.user_id = in_user_id))
         and (r.memory_type <> 'conversation' or r.event_type = 'message')
         and not (r.memory_type = 'guideline' and r.key_name = co_budget_key)
       order by r.row_no;
      l_rows.extend(l_nos.count);
      for i in 1 .. l_nos.count loop
         r_row := l_all(l_nos(i));
         r_row.row_no := i;
         r_row.scope_level := l_levels(i);
         r_row.authority_rank := l_authority(i);
         r_row.slice := l_slices(i);
         l_rows(i) := r_row;
      end loop;
      return l_rows;
   end scope_step;

   -- ------------------------------------------------------------------------------------------------------
   -- lifecycle

   function lifecycle_step(in_rows in ctx_selection_candidates, in_evaluation_time in timestamp with time zone)
      return ctx_selection_candidates is
      l_rows ctx_selection_candidates := in_rows;
      r_row  ctx_selection_candidate;
   begin
      for i in 1 .. l_rows.count loop
         r_row := l_rows(i);
         r_row.lifecycle_reason := case
                                      when r_row.status = 'erased' then 'erased'
                                      when r_row.deleted_at is not null then 'deleted'
                                      when r_row.valid_from > in_evaluation_time then 'not_yet_effective'
                                      when r_row.valid_until is not null and r_row.valid_until <= in_evaluation_time
                                      then case when r_row.status = 'superseded' then 'superseded' else 'expired' end
                                   end;
         r_row.claim_key := ctx_rules.claim_key(
            in_subject      => r_row.subject,
            in_predicate    => r_row.predicate,
            in_content_json => r_row.content_json
         );
         if r_row.claim_key is not null then
            r_row.claim_hash := ctx_memory.sha256_hex(in_text => r_row.claim_key);
         end if;
         l_rows(i) := r_row;
      end loop;
      return l_rows;
   end lifecycle_step;

   -- ------------------------------------------------------------------------------------------------------
   -- dedup

   function dedup_step(in_rows in ctx_selection_candidates) return ctx_selection_candidates is
      l_rows     ctx_selection_candidates := in_rows;
      r_row      ctx_selection_candidate;
      l_nos      t_numbers;
      l_types    t_texts;
      l_ids      t_texts;
      l_versions t_numbers;
   begin
      with
      -- a conversation turn that names its speaker is a copy only of the same words from the same speaker
      dedup_speakers as (
         select d.row_no, d.memory_type, d.id, d.version, d.text_key, d.claim_hash, d.authority_rank,
                d.scope_level, d.valid_from, d.table_name,
                case
                   when d.memory_type = 'conversation'
                   then json_value(d.extra, '$.speaker' returning varchar2(64))
                end as speaker
           from table(in_rows) d
          where d.lifecycle_reason is null
            and d.slice not in ('guidelines', 'persona', 'tools')
      ),
      dedup_ranked as (
         select d.row_no, d.memory_type, d.id, d.version, d.text_key, d.claim_hash, d.speaker,
                row_number() over (
                   partition by d.text_key, d.speaker
                   order by d.authority_rank, d.scope_level desc, d.valid_from desc, d.table_name, d.id
                ) as text_rank
           from dedup_speakers d
      )
      select d.row_no, k.memory_type, k.id, k.version
        bulk collect into l_nos, l_types, l_ids, l_versions
        from dedup_ranked d
        join dedup_ranked k
          on k.text_key = d.text_key
         and decode(k.speaker, d.speaker, 1, 0) = 1
         and k.text_rank = 1
       where not (d.memory_type = k.memory_type and d.id = k.id and d.version = k.version)
         and (d.claim_hash is null or k.claim_hash is null or d.claim_hash = k.claim_hash);
      for i in 1 .. l_rows.count loop
         r_row := l_rows(i);
         r_row.is_duplicate := 0;
         l_rows(i) := r_row;
      end loop;
      for i in 1 .. l_nos.count loop
         r_row := l_rows(l_nos(i));
         r_row.is_duplicate := 1;
         r_row.kept_type := l_types(i);
         r_row.kept_id := l_ids(i);
         r_row.kept_version := l_versions(i);
         l_rows(l_nos(i)) := r_row;
      end loop;
      return l_rows;
   end dedup_step;

   -- ------------------------------------------------------------------------------------------------------
   -- conflict

   function conflict_step(in_rows in ctx_selection_candidates) return ctx_selection_candidates is
      l_rows     ctx_selection_candidates := in_rows;
      r_row      ctx_selection_candidate;
      l_nos      t_numbers;
      l_ranks    t_numbers;
      l_types    t_texts;
      l_ids      t_texts;
      l_versions t_numbers;
   begin
      -- fixed slices: per (type, key) the narrowest scope wins; the rest are excluded as conflicts
      select f.row_no,
             row_number() over (
                partition by f.memory_type, f.key_name
                order by f.scope_level desc, f.valid_from desc, f.id
             )
        bulk collect into l_nos, l_ranks
        from table(in_rows) f
       where f.lifecycle_reason is null
         and f.slice in ('guidelines', 'persona', 'tools');
      for i in 1 .. l_nos.count loop
         r_row := l_rows(l_nos(i));
         r_row.key_rank := l_ranks(i);
         l_rows(l_nos(i)) := r_row;
      end loop;
      -- dynamic slices: within a claim, the most authoritative, narrowest, latest row wins
      with
      conflict_ranked as (
         select d.row_no, d.memory_type, d.id, d.version, d.claim_hash,
                case
                   when d.claim_hash is not null then
                      row_number() over (
                         partition by d.claim_hash
                         order by d.authority_rank, d.scope_level desc, d.valid_from desc, d.table_name, d.id
                      )
                end as claim_rank
           from table(in_rows) d
          where d.lifecycle_reason is null
            and d.slice not in ('guidelines', 'persona', 'tools')
            and d.is_duplicate = 0
      )
      select c.row_no, w.memory_type, w.id, w.version
        bulk collect into l_nos, l_types, l_ids, l_versions
        from conflict_ranked c
        join conflict_ranked w
          on w.claim_hash = c.claim_hash
         and w.claim_rank = 1
         and c.claim_rank > 1;
      for i in 1 .. l_nos.count loop
         r_row := l_rows(l_nos(i));
         r_row.winner_type := l_types(i);
         r_row.winner_id := l_ids(i);
         r_row.winner_version := l_versions(i);
         l_rows(l_nos(i)) := r_row;
      end loop;
      for i in 1 .. l_rows.count loop
         r_row := l_rows(i);
         r_row.competing := case
                               when r_row.lifecycle_reason is null
                                and r_row.slice not in ('guidelines', 'persona', 'tools')
                                and r_row.is_duplicate = 0
                                and r_row.winner_id is null
                               then 1
                               else 0
                            end;
         l_rows(i) := r_row;
      end loop;
      return l_rows;
   end conflict_step;

   -- ------------------------------------------------------------------------------------------------------
   -- required

   function required_step(in_rows in ctx_selection_candidates, in_require in pls_integer)
      return ctx_selection_candidates is
      l_rows  ctx_selection_candidates := in_rows;
      r_row   ctx_selection_candidate;
      l_nos   t_numbers;
      l_notes t_clobs;
      l_kinds t_numbers;
   begin
      for i in 1 .. l_rows.count loop
         r_row := l_rows(i);
         r_row.required := 0;
         l_rows(i) := r_row;
      end loop;
      with
      -- what the competing history cites
      cited_sources as (
         select s.row_no, j.ref_ord, j.ref_type, j.ref_id, j.ref_version
           from table(in_rows) s,
                json_table(s.source_refs, '$[*]'
                   columns (
                      ref_ord     for ordinality,
                      ref_type    varchar2(32)  path '$.type',
                      ref_id      varchar2(128) path '$.id',
                      ref_version number        path '$.version'
                   )
                ) j
          where s.competing = 1
            and s.memory_type in ('summary', 'conversation')
      ),
      -- a cited version out of effect, and the competing row that holds its claim now
      annotation_candidates as (
         select a.row_no, a.ref_ord,
                src.memory_type as src_type,
                src.id as src_id,
                src.version as src_version,
                cur.row_no as cur_no,
                cur.memory_type as cur_type,
                cur.id as cur_id,
                cur.version as cur_version,
                cur.content as cur_content,
                row_number() over (
                   partition by a.row_no, a.ref_ord
                   order by cur.authority_rank, cur.scope_level desc, cur.valid_from desc, cur.table_name, cur.id
                ) as cur_rank
           from cited_sources a
           join table(in_rows) src
             on src.memory_type = a.ref_type
            and src.id = a.ref_id
            and src.version = a.ref_version
            and src.lifecycle_reason is not null
           left join table(in_rows) cur
             on cur.competing = 1
            and cur.memory_type not in ('summary', 'conversation')
            and ((src.claim_hash is not null and cur.claim_hash = src.claim_hash)
                 or (src.claim_hash is null and cur.memory_type = src.memory_type and cur.id = src.id))
      ),
      annotation_links as (
         select c.*
           from annotation_candidates c
          where c.cur_rank = 1
      )
      -- kind 0: a history row's notes; kind 1: a current fact it points at, when those are required
      select a.row_no,
             json_arrayagg(
                json_object(
                   'source' value json_array(a.src_type, a.src_id, a.src_version),
                   'current' value
                      case
                         when a.cur_id is not null then json_array(a.cur_type, a.cur_id, a.cur_version)
                      end format json,
                   'current_content' value a.cur_content
                   null on null returning clob
                ) format json
                order by a.src_type, a.src_id, a.src_version
                returning clob
             ),
             0
        bulk collect into l_nos, l_notes, l_kinds
        from annotation_links a
       group by a.row_no
      union all
      select l.cur_no, to_clob(null), 1
        from annotation_links l
       where in_require = 1
         and l.cur_id is not null
       group by l.cur_no;
      for i in 1 .. l_nos.count loop
         r_row := l_rows(l_nos(i));
         if l_kinds(i) = 0 then
            r_row.notes := l_notes(i);
         else
            r_row.required := 1;
         end if;
         l_rows(l_nos(i)) := r_row;
      end loop;
      return l_rows;
   end required_step;

   -- ------------------------------------------------------------------------------------------------------
   -- score

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
   ) return ctx_selection_candidates is
      l_rows       ctx_selection_candidates := in_rows;
      r_row        ctx_selection_candidate;
      l_nos        t_numbers;
      l_bm25_raw   t_numbers;
      l_own        t_numbers;
      l_bm25       t_numbers;
      l_similarity t_numbers;
      l_adjacent   t_numbers;
      l_thread     t_numbers;
      l_length     t_numbers;
      l_logit      t_numbers;
      l_rerank     t_numbers;
      l_confidence t_numbers;
      l_recency    t_numbers;
      -- the time the question names (ctx_rules.question_period): both NULL for none
      l_period_from timestamp with time zone;
      l_period_to   timestamp with time zone;
   begin
      ctx_rules.question_period(
         in_question_words  => in_question_words,
         in_evaluation_time => in_evaluation_time,
         out_from           => l_period_from,
         out_to             => l_period_to
      );
      with
      -- the Oracle Text score within its slice (the lexical query's SCORE; 0 for a row it did not find, and for
      -- the thread's tail); live hybrid scoring only
      signals as (
         select v.row_no, v.memory_type, v.id, v.version, v.slice, v.thread_id, v.turn_index, v.key_name,
                v.valid_from, v.confidence, v.similarity_raw, v.source_logit, v.source_thread_logit,
                v.source_bm25, v.source_similarity,
                -- the figures the source list recorded that the row does not carry (a replay takes them)
                rec.source_adjacent_logit as recorded_adjacent_logit,
                rec.source_length_logit as recorded_length_logit,
                case
                   when in_scoring = 1 then
                      case
                         when v.slice in ('durable_facts', 'evidence', 'recalled_history')
                         then coalesce(ts.text_score, 0)
                         else 0
                      end
                end as bm25_raw,
                -- a recalled turn whose speaker the question names (live hybrid scoring only)
                case
                   when in_scoring = 1
                    and v.memory_type = 'conversation'
                    and ctx_rules.names_speaker(
                           in_question_words => in_question_words,
                           in_speaker        => json_value(v.extra, '$.speaker' returning varchar2(64))
                        ) = 1
                   then co_speaker_weight
                   else 0
                end as speaker_lift,
                -- a recalled turn said in the time the question names (live hybrid scoring only)
                case
                   when in_scoring = 1
                    and v.slice = 'recalled_history'
                    and v.memory_type = 'conversation'
                    and v.valid_from >= l_period_from
                    and v.valid_from < l_period_to
                   then co_date_weight
                   else 0
                end as date_lift,
                -- a recalled turn's length against the recalled turns of the same voice (role and speaker) it
                -- competes with (live hybrid scoring only; ctx_rules.length_logit): an assistant's answers are
                -- long by habit and a person's chat is short, so each is measured against its own kind
                case
                   when in_scoring = 1
                    and v.slice = 'recalled_history'
                    and v.memory_type = 'conversation'
                    and v.content_tokens > 0
                   then ctx_rules.length_logit(
                           in_tokens      => v.content_tokens,
                           in_mean_tokens => avg(case
                                                    when v.memory_type = 'conversation' and v.content_tokens > 0
                                                    then v.content_tokens
                                                 end) over (partition by v.slice, v.role,
                                                               json_value(v.extra, '$.speaker'
                                                                          returning varchar2(64))),
                           in_cap         => co_length_cap
                        )
                end as length_lift
           from table(in_rows) v
           left join json_table(in_text_scores, '$[*]'
                   columns (
                      score_type    varchar2(32)  path '$.t',
                      score_id      varchar2(128) path '$.i',
                      score_version number        path '$.v',
                      text_score    number        path '$.s'
                   )
                ) ts
             on ts.score_type = v.memory_type
            and ts.score_id = v.id
            and ts.score_version = v.version
           -- in_sources has one entry per row version (ctx_sources.merged_sources)
           left join table(in_sources) rec
             on rec.memory_type = v.memory_type
            and rec.id = v.id
            and rec.version = v.version
          where v.competing = 1
      ),
      scored_logit as (
         select g.*,
                case
                   when in_scores is not null then sc.score_logit
                   -- the recorded logit less its thread share, which adjacent_scored adds back
                   when in_use_sources = 1 then
                      g.source_logit
                      - coalesce(round(co_thread_weight * g.source_thread_logit, co_score_places), 0)
                   when g.slice in ('durable_facts', 'evidence', 'recalled_history') then
                      ctx_rules.hybrid_logit(
                         in_similarity      => g.similarity_raw,
                         in_text_score      => g.bm25_raw,
                         in_best_text_score => max(g.bm25_raw) over (partition by g.slice)
                      )
                      + g.speaker_lift + g.date_lift + coalesce(g.length_lift, 0)
                end as own_logit,
                -- the length's share of own_logit: a replay takes the recorded figure (its recorded logit has it)
                case
                   when in_scores is not null then null
                   when in_use_sources = 1 then g.recorded_length_logit
                   else g.length_lift
                end as length_logit,
                case
                   when in_use_sources = 1 then g.source_bm25
                   else round(g.bm25_raw, co_score_places)
                end as bm25,
                case
                   when in_use_sources = 1 then g.source_similarity
                   else round(g.similarity_raw, co_score_places)
                end as similarity,
                in_evaluation_time - g.valid_from as age
           from signals g
           left join json_table(coalesce(in_scores, to_clob(ctx_json.co_empty_array)), '$[*]'
                   columns (
                      score_key   varchar2(4000) path '$.k',
                      score_logit number         path '$.v'
                   )
                ) sc
             on sc.score_key = g.memory_type || ':' || g.id || ':' || to_char(g.version)
      ),
      -- A recalled turn is worth at least its neighbour in the thread less co_adjacent_margin: an answer sits
      -- next to the question that matched. Live hybrid scoring only; a replay takes the figure it recorded (its
      -- recorded logit already includes it), a reranker's scores are taken as they are.
      adjacency as (
         select r.*,
                case
                   when in_scores is not null then null
                   when in_use_sources = 1 then r.recorded_adjacent_logit
                   when r.slice = 'recalled_history' and r.memory_type = 'conversation' then
                      nullif(greatest(
                         coalesce(
                            case
                               when lag(r.turn_index) over (
                                       partition by r.slice, r.memory_type, r.thread_id
                                       order by r.turn_index, r.id
                                    ) = r.turn_index - 1
                               then lag(r.own_logit) over (
                                       partition by r.slice, r.memory_type, r.thread_id
                                       order by r.turn_index, r.id
                                    )
                            end,
                            co_no_logit
                         ),
                         coalesce(
                            case
                               when lead(r.turn_index) over (
                                       partition by r.slice, r.memory_type, r.thread_id
                                       order by r.turn_index, r.id
                                    ) = r.turn_index + 1
                               then lead(r.own_logit) over (
                                       partition by r.slice, r.memory_type, r.thread_id
                                       order by r.turn_index, r.id
                                    )
                            end,
                            co_no_logit
                         )
                      ), co_no_logit) - co_adjacent_margin
                end as adjacent_logit,
                -- The thread's best relevance among the recalled turns (live hybrid scoring; replay takes the
                -- recorded figure). An episode summary of a thread (summary_key 'thread:<thread_id>') stands for
                -- its turns and shares their thread's figure.
                case
                   when in_scores is not null then null
                   when in_use_sources = 1 then r.source_thread_logit
                   when r.slice = 'recalled_history'
                    and (r.memory_type = 'conversation' or r.thread_key is not null) then
                      max(case when r.memory_type = 'conversation' then r.own_logit end)
                         over (partition by r.slice, r.thread_key)
                end as thread_logit
           from (
                   select k.*,
                          case
                             when k.memory_type = 'conversation' then k.thread_id
                             when k.memory_type = 'summary' and k.key_name like 'thread:%'
                             then substr(k.key_name, 8)
                          end as thread_key
                     from scored_logit k
                ) r
      ),
      adjacent_scored as (
         select a.*,
                case when a.adjacent_logit > a.own_logit then a.adjacent_logit else a.own_logit end
                + coalesce(round(co_thread_weight * a.thread_logit, co_score_places), 0) as logit
           from adjacency a
      )
      select p.row_no, p.bm25_raw, p.own_logit, p.bm25, p.similarity, p.adjacent_logit, p.thread_logit,
             p.length_logit, p.logit,
             case
                when p.logit is null or p.logit < -co_sigmoid_bound then 0
                when p.logit > co_sigmoid_bound then 1
                else round(1 / (1 + exp(-p.logit)), co_score_places)
             end,
             round(coalesce(p.confidence, co_default_confidence), co_score_places),
             round(
                greatest(
                   0,
                   1 - (extract(day from p.age) * co_seconds_per_day
                        + extract(hour from p.age) * 3600
                        + extract(minute from p.age) * 60
                        + extract(second from p.age)) / co_seconds_per_day / in_recency_days
                ),
                co_score_places
             )
        bulk collect into l_nos, l_bm25_raw, l_own, l_bm25, l_similarity, l_adjacent, l_thread, l_length, l_logit,
                          l_rerank, l_confidence, l_recency
        from adjacent_scored p;
      for i in 1 .. l_nos.count loop
         r_row := l_rows(l_nos(i));
         r_row.bm25_raw := l_bm25_raw(i);
         r_row.own_logit := l_own(i);
         r_row.bm25 := l_bm25(i);
         r_row.similarity := l_similarity(i);
         r_row.adjacent_logit := l_adjacent(i);
         r_row.thread_logit := l_thread(i);
         r_row.length_logit := l_length(i);
         r_row.logit := l_logit(i);
         r_row.rerank := l_rerank(i);
         r_row.confidence_score := l_confidence(i);
         r_row.recency := l_recency(i);
         l_rows(l_nos(i)) := r_row;
      end loop;
      return l_rows;
   end score_step;

   -- ------------------------------------------------------------------------------------------------------
   -- priority, tie-break, limit

   function priority_step(
      in_rows         in ctx_selection_candidates,
      in_w_rerank     in number,
      in_w_confidence in number,
      in_w_recency    in number,
      in_present      in pls_integer
   ) return ctx_selection_candidates is
      l_rows ctx_selection_candidates := in_rows;
      r_row  ctx_selection_candidate;
      l_tie  number;
   begin
      for i in 1 .. l_rows.count loop
         r_row := l_rows(i);
         if r_row.competing = 1 then
            -- the tie share shrinks as rerank saturates (4 r (1 - r), 1 at r = 0.5): a near-tie is near in logits
            l_tie := co_tie_share * 4 * r_row.rerank * (1 - r_row.rerank);
            r_row.priority := round(
               in_w_rerank * r_row.rerank + l_tie * in_w_confidence * r_row.confidence_score
               + case when in_present = 1 then 1 else l_tie end * in_w_recency * r_row.recency,
               co_score_places
            );
            l_rows(i) := r_row;
         end if;
      end loop;
      return l_rows;
   end priority_step;

   function tie_break_step(in_rows in ctx_selection_candidates) return ctx_selection_candidates is
      l_rows  ctx_selection_candidates := in_rows;
      r_row   ctx_selection_candidate;
      l_nos   t_numbers;
      l_ranks t_numbers;
   begin
      select p.row_no,
             row_number() over (
                partition by p.slice
                order by case when p.slice = 'volatile_tail' then p.turn_index end desc nulls last,
                         case when p.slice <> 'volatile_tail' then p.priority end desc,
                         case when p.slice <> 'volatile_tail' then p.logit end desc nulls last,
                         p.valid_from desc,
                         p.table_name,
                         p.id,
                         p.version
             )
        bulk collect into l_nos, l_ranks
        from table(in_rows) p
       where p.competing = 1;
      for i in 1 .. l_nos.count loop
         r_row := l_rows(l_nos(i));
         r_row.slice_rank := l_ranks(i);
         l_rows(l_nos(i)) := r_row;
      end loop;
      return l_rows;
   end tie_break_step;

   function limit_step(in_rows in ctx_selection_candidates, in_limits in json_object_t)
      return ctx_selection_candidates is
      l_rows           ctx_selection_candidates := in_rows;
      r_row            ctx_selection_candidate;
      l_limit_facts    number := in_limits.get_number(co_facts);
      l_limit_evidence number := in_limits.get_number(co_evidence);
      l_limit_history  number := in_limits.get_number(co_history);
      l_limit_tail     number := in_limits.get_number(co_tail);
   begin
      for i in 1 .. l_rows.count loop
         r_row := l_rows(i);
         if r_row.competing = 1 then
            r_row.slice_limit := case r_row.slice
                                    when co_facts then l_limit_facts
                                    when co_evidence then l_limit_evidence
                                    when co_history then l_limit_history
                                    else l_limit_tail
                                 end;
            r_row.cut := case when r_row.slice_rank > r_row.slice_limit and r_row.required = 0 then 1 else 0 end;
            l_rows(i) := r_row;
         end if;
      end loop;
      return l_rows;
   end limit_step;

   -- ------------------------------------------------------------------------------------------------------
   -- exclusions

   function exclusions(in_rows in ctx_selection_candidates) return clob is
      l_items clob;
   begin
      with
      excluded_rows as (
         select l.memory_type as ref_type, l.id as ref_id, l.version as ref_version,
                cast('lifecycle' as varchar2(16)) as exclusion_rule,
                cast(l.lifecycle_reason as varchar2(1000)) as detail,
                cast(null as varchar2(32)) as kept_type,
                cast(null as varchar2(128)) as kept_id,
                cast(null as number) as kept_version
           from table(in_rows) l
          where l.lifecycle_reason is not null
         union all
         -- the row of the key in effect, and the order conflict_step ranked them by that put it first
         select f.memory_type, f.id, f.version, 'conflict',
                f.memory_type || ' ' || w.id || ' version ' || w.version || ' with key ' || f.key_name
                || ' is in effect: '
                || case
                      when w.scope_level > f.scope_level then 'the narrower scope wins'
                      when w.valid_from > f.valid_from then 'the later valid_from wins'
                      else 'of the same scope and valid_from, the first id wins'
                   end,
                null, null, null
           from table(in_rows) f
           join table(in_rows) w
             on w.memory_type = f.memory_type
            and w.key_name = f.key_name
            and w.key_rank = 1
          where f.key_rank > 1
         union all
         select d.memory_type, d.id, d.version, 'dedup', null, d.kept_type, d.kept_id, d.kept_version
           from table(in_rows) d
          where d.is_duplicate = 1
         union all
         select c.memory_type, c.id, c.version, 'conflict', null, c.winner_type, c.winner_id, c.winner_version
           from table(in_rows) c
          where c.winner_id is not null
      )
      select json_arrayagg(
                case
                   when x.kept_id is null then
                      json_object(
                         'ref' value json_array(x.ref_type, x.ref_id, x.ref_version),
                         'rule' value x.exclusion_rule,
                         'detail' value x.detail
                         null on null returning clob
                      )
                   else
                      json_object(
                         'ref' value json_array(x.ref_type, x.ref_id, x.ref_version),
                         'rule' value x.exclusion_rule,
                         'kept' value json_array(x.kept_type, x.kept_id, x.kept_version)
                         null on null returning clob
                      )
                end format json
                order by x.exclusion_rule, x.ref_type, x.ref_id, x.ref_version
                returning clob
             )
        into l_items
        from excluded_rows x;
      return coalesce(l_items, to_clob(ctx_json.co_empty_array));
   end exclusions;
   -- ------------------------------------------------------------------------------------------------------
   -- the document's parts

   -- the fixed slices' rows: per (type, key) the one in effect of the narrowest scope
   function fixed_items(in_rows in ctx_selection_candidates) return clob is
      l_items clob;
   begin
      select json_arrayagg(
                json_object(
                   'ref' value json_array(f.memory_type, f.id, f.version),
                   'type' value f.memory_type,
                   'slice' value f.slice,
                   'key' value f.key_name,
                   'content' value f.content,
                   'extra' value f.extra format json
                   null on null returning clob
                ) format json
                order by case f.slice when 'guidelines' then 1 when 'persona' then 2 else 3 end,
                         f.scope_level,
                         f.key_name,
                         f.id
                returning clob
             )
        into l_items
        from table(in_rows) f
       where f.key_rank = 1;
      return coalesce(l_items, to_clob(ctx_json.co_empty_array));
   end fixed_items;

   -- Step: tiers. Each kept candidate (competing, not cut) with its full, summary and pointer tiers: the summary
   -- tier is the row version's newest active compression, by index, read as the rows are (live, or AS OF
   -- in_read_scn when in_snapshot_scn is given), refused when it no longer matches the row's text.
   function candidate_items(
      in_rows            in ctx_selection_candidates,
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_snapshot_scn    in number,
      in_read_scn        in number,
      in_evaluation_time in timestamp with time zone
   ) return clob is
      l_items clob;
   begin
      with
      kept as (
         select o.*
           from table(in_rows) o
          where o.competing = 1
            and o.cut = 0
      ),
      compression_rows as (
         select k.source_type, k.source_id, k.source_version, k.id, k.version, k.valid_from, k.content,
                k.content_tokens, k.source_hash, k.generating_model, k.prompt_version
           from kept o
           join context_compression k
             on k.tenant_id = in_tenant_id
            and k.source_type = o.memory_type
            and k.source_id = o.id
            and k.source_version = o.version
          where in_snapshot_scn is null
            and k.status = 'active'
            and k.deleted_at is null
            and k.valid_from <= in_evaluation_time
            and (k.valid_until is null or k.valid_until > in_evaluation_time)
         union all
         select k.source_type, k.source_id, k.source_version, k.id, k.version, k.valid_from, k.content,
                k.content_tokens, k.source_hash, k.generating_model, k.prompt_version
           from kept o
           join context_compression as of scn in_read_scn k
             on k.tenant_id = in_tenant_id
            and k.source_type = o.memory_type
            and k.source_id = o.id
            and k.source_version = o.version
          where in_snapshot_scn is not null
            and k.status = 'active'
            and k.deleted_at is null
            and k.valid_from <= in_evaluation_time
            and (k.valid_until is null or k.valid_until > in_evaluation_time)
            -- a compression erased since the SCN is not returned (as CTX_SOURCES.rows_as_of's erased_now)
            and not exists (select 1
                              from context_compression n
                             where n.tenant_id = k.tenant_id and n.id = k.id
                               and n.version = k.version and n.status = 'erased')
      ),
      latest_compression as (
         select c.source_type, c.source_id, c.source_version, c.id, c.version, c.content, c.content_tokens,
                c.source_hash, c.generating_model, c.prompt_version
           from (
                   select r.source_type, r.source_id, r.source_version, r.id, r.version, r.content,
                          r.content_tokens, r.source_hash, r.generating_model, r.prompt_version,
                          row_number() over (
                             partition by r.source_type, r.source_id, r.source_version
                             order by r.valid_from desc, r.id
                          ) as compression_rank
                     from compression_rows r
                ) c
          where c.compression_rank = 1
      ),
      tiered as (
         select o.*,
                cm.id as compression_id,
                cm.version as compression_version,
                cm.content as compression_content,
                cm.content_tokens as compression_tokens,
                cm.generating_model as compression_model,
                cm.prompt_version as compression_prompt,
                -- refused when it no longer matches the row's text; hashed only where a compression exists
                case
                   when cm.id is null then 0
                   when cm.source_hash = ctx_memory.sha256_hex(in_text => o.content) then 1
                   else 0
                end as summary_matches
           from kept o
           left join latest_compression cm
             on cm.source_type = o.memory_type
            and cm.source_id = o.id
            and cm.source_version = o.version
      ),
      candidates as (
         select t.slice, t.slice_rank,
                json_object(
                   'ref' value json_array(t.memory_type, t.id, t.version),
                   'type' value t.memory_type,
                   'slice' value t.slice,
                   'origin' value t.origin,
                   'status' value
                      case t.memory_type
                         -- generated: candidate status from contract/memory_types.toml; edit the catalogue, then regenerate
                         when 'entity' then 'current'
                         when 'workflow' then 'current'
                         when 'conversation' then 'unverified'
                         when 'summary' then 'historical'
                         else 'evidence'
                         -- end generated: candidate status
                      end,
                   'required' value case when t.required = 1 then 'true' else 'false' end format json,
                   'selection_rank' value t.slice_rank,
                   'role' value t.role,
                   -- a conversation turn's speaker by name (the row's extra), which its line shows for the role
                   'speaker' value
                      case
                         when t.memory_type = 'conversation'
                         then json_value(t.extra, '$.speaker' returning varchar2(64))
                      end,
                   'turn_index' value t.turn_index,
                   'thread_id' value t.thread_id,
                   'title' value coalesce(t.title, t.subject, t.key_name),
                   'valid_from' value ctx_json.iso_utc(in_timestamp => t.valid_from),
                   -- the figures the candidate was scored by, and its retrieval ranks when it was retrieved
                   'scores' value json_object(
                      'rerank_logit' value t.logit,
                      'rerank' value t.rerank,
                      'confidence' value t.confidence_score,
                      'recency' value t.recency,
                      'priority' value t.priority,
                      'bm25' value t.bm25,
                      'similarity' value t.similarity,
                      'adjacent_logit' value
                         case when t.adjacent_logit >= t.own_logit then t.adjacent_logit end,
                      'thread_logit' value t.thread_logit,
                      'length_logit' value t.length_logit,
                      'lexical_rank' value t.source_lexical_rank,
                      'vector_rank' value t.source_vector_rank,
                      'fused' value t.source_fused
                      absent on null returning clob
                   ) format json,
                   'tiers' value json_object(
                      'full' value t.content,
                      'summary' value case when t.summary_matches = 1 then t.compression_content end,
                      'pointer' value t.pointer_text
                      null on null returning clob
                   ) format json,
                   'summary_ref' value
                      case
                         when t.summary_matches = 1
                         then json_array('compression', t.compression_id, t.compression_version)
                      end format json,
                   -- who wrote the text: the summary tier's compression, and a summary row (content_json)
                   'summary_by' value
                      case
                         when t.summary_matches = 1
                         then json_object('model' value t.compression_model,
                                          'prompt_version' value t.compression_prompt)
                      end format json,
                   'generated_by' value
                      case
                         when t.memory_type = 'summary'
                          and json_value(t.content_json, '$.generated_by.model') is not null
                          and json_value(t.content_json, '$.generated_by.prompt_version') is not null
                         then json_object(
                                 'model' value substr(json_value(t.content_json, '$.generated_by.model'), 1, 128),
                                 'prompt_version' value
                                    substr(json_value(t.content_json, '$.generated_by.prompt_version'), 1, 64))
                      end format json,
                   -- stored o200k_base counts of the full and summary texts (NULL: the fitter counts them)
                   'content_tokens' value t.content_tokens,
                   'summary_tokens' value case when t.summary_matches = 1 then t.compression_tokens end,
                   'annotations' value coalesce(t.notes, to_clob(ctx_json.co_empty_array)) format json
                   null on null returning clob
                ) as candidate
           from tiered t
      )
      select json_arrayagg(c.candidate format json order by c.slice, c.slice_rank returning clob)
        into l_items
        from candidates c;
      return coalesce(l_items, to_clob(ctx_json.co_empty_array));
   end candidate_items;

   -- What the limit cut, once per slice: how many rows, and the priority below which they fell.
   function candidate_cuts(in_rows in ctx_selection_candidates) return clob is
      l_items clob;
   begin
      select json_arrayagg(
                json_object(
                   'slice' value l.slice,
                   'rule' value 'candidate_limit',
                   'limit' value l.slice_limit,
                   'rows' value l.cut_rows,
                   'below_priority' value l.below_priority
                   null on null returning clob
                ) format json
                order by l.slice
                returning clob
             )
        into l_items
        from (
                select c.slice, max(c.slice_limit) as slice_limit, count(*) as cut_rows,
                       max(c.priority) as below_priority
                  from table(in_rows) c
                 where c.competing = 1
                   and c.cut = 1
                 group by c.slice
             ) l;
      return coalesce(l_items, to_clob(ctx_json.co_empty_array));
   end candidate_cuts;

   -- the current facts history requires (required_step), as references
   function required_refs(in_rows in ctx_selection_candidates) return clob is
      l_items clob;
   begin
      select json_arrayagg(
                json_array(q.memory_type, q.id, q.version)
                order by q.memory_type, q.id, q.version
                returning clob
             )
        into l_items
        from table(in_rows) q
       where q.required = 1;
      return coalesce(l_items, to_clob(ctx_json.co_empty_array));
   end required_refs;

   -- The source list as the manifest records it: one entry per row version, with the figures it was scored by
   -- (logit, bm25, similarity; absent when it was not scored).
   function recorded_sources(in_rows in ctx_selection_candidates, in_sources in ctx_selection_candidates)
      return clob is
      l_items clob;
   begin
      select json_arrayagg(
                json_mergepatch(
                   case
                      when s.retrieved = 1 then
                         json_object(
                            'ref' value json_array(s.memory_type, s.id, s.version),
                            'origin' value s.origin,
                            'slice' value s.item_slice,
                            'lexical_rank' value s.source_lexical_rank,
                            'vector_rank' value s.source_vector_rank,
                            'lexical_score' value s.source_lexical_score,
                            'vector_distance' value s.source_vector_distance,
                            'fused' value s.source_fused
                            null on null returning clob
                         )
                      when s.origin = 'adjacent' then
                         json_object(
                            'ref' value json_array(s.memory_type, s.id, s.version),
                            'origin' value s.origin,
                            'slice' value s.item_slice,
                            'next_to' value s.next_to
                            null on null returning clob
                         )
                      else
                         json_object(
                            'ref' value json_array(s.memory_type, s.id, s.version),
                            'origin' value s.origin,
                            'slice' value s.item_slice
                            null on null returning clob
                         )
                   end,
                   json_object(
                      'logit' value p.logit,
                      'bm25' value p.bm25,
                      'similarity' value p.similarity,
                      'adjacent_logit' value
                         case when p.adjacent_logit >= p.own_logit then p.adjacent_logit end,
                      'thread_logit' value p.thread_logit,
                      'length_logit' value p.length_logit
                      absent on null returning clob
                   )
                   returning clob
                ) format json
                order by s.precedence, s.item_slice, s.source_fused desc nulls last, s.memory_type, s.id, s.version
                returning clob
             )
        into l_items
        from table(in_sources) s
        left join table(in_rows) p
          on p.memory_type = s.memory_type
         and p.id = s.id
         and p.version = s.version
         and p.competing = 1;
      return coalesce(l_items, to_clob(ctx_json.co_empty_array));
   end recorded_sources;
end ctx_selection;
/
