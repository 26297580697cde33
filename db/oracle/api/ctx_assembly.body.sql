--liquibase formatted sql logicalFilePath:db/packages/oracle/body/0060_ctx_assembly.sql

--changeset ctxasm:ora-pkg-0060-ctx-assembly-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_assembly is
   -- The twin of db/postgresql/api/ctx_assembly.sql: its public routines in the same order, select_window's
   -- steps under the same names. The engine-internal functions they call live where PostgreSQL keeps theirs,
   -- one package per file of the same name: CTX_RULES (internal/ctx_rules.sql: scope level, hybrid logit, claim
   -- key, authority), CTX_RETRIEVAL (internal/ctx_retrieval.sql), CTX_SOURCES (internal/ctx_sources.sql);
   -- JSON values are read, and timestamps and vector text written and checked, through CTX_JSON (what
   -- PostgreSQL's jsonb operators and text casts give). docs/oracle-assembly.md maps each step. Every statement
   -- is static, every value a bind, every table named in the code, with one exception here: PREDICTION names
   -- its model in the SQL text, so that call is dynamic (reranker_scores) and the package compiles and runs
   -- without the model.
   -- Every read names the tenant. The live tables are read as they are; only a replay (in_snapshot) reads the
   -- rows AS OF the recorded SCN, through the second branch of each table in select_window and in the budget
   -- step, which a NULL snapshot switches off (a filter on a bind, decided before the branch runs).

   co_engine            constant varchar2(30) := 'oracle';
   -- generated (contract/selection.toml): a digest of the selection code of this engine
   co_selection_version constant varchar2(30) := 'selection-521abdb4d56c';
   co_hybrid_scorer     constant varchar2(30) := 'hybrid-calibrated-2';
   co_external_scorer   constant varchar2(30) := 'external';
   co_recorded_scorer   constant varchar2(30) := 'recorded';
   -- the in-database ONNX cross-encoder (a regression model: PREDICTION gives the raw logit) and its scorer name
   co_reranker_model    constant varchar2(30) := 'BGE_RERANKER';
   co_reranker_scorer   constant varchar2(64) := 'bge-reranker:oracle:BGE_RERANKER';
   co_budget_key        constant guideline_memory.guideline_key%type := ctx_budget.co_budget_key;
   -- characters; bounds the work one call can ask for
   co_max_question      constant pls_integer := 8000;
   -- entries of in_sources and of in_scores (replay inputs)
   co_max_replay_items  constant pls_integer := 10000;

   co_snapshot_pattern constant varchar2(30) := '^[0123456789]{1,38}$';
   co_hash_pattern     constant varchar2(30) := '^[0123456789abcdef]{64}$';
   co_version_pattern  constant varchar2(30) := ctx_json.co_version_pattern;
   co_hash_length      constant pls_integer := 64;
   co_case_sensitive   constant varchar2(1) := 'c';
   co_dimensions       constant pls_integer := 384;

   -- scoring
   co_score_places       constant pls_integer := ctx_rules.co_score_places;
   co_seconds_per_day    constant number := 86400;
   co_default_confidence constant number := 0.5;

   -- the slices
   co_facts      constant varchar2(32) := ctx_rules.co_facts;
   co_evidence   constant varchar2(32) := ctx_rules.co_evidence;
   co_history    constant varchar2(32) := ctx_rules.co_history;
   co_tail       constant varchar2(32) := ctx_rules.co_tail;

   -- retrieval: rows each retriever ranks at least (the slice's limit when larger), twice that kept after fusion
   co_retrieval_depth  constant pls_integer := 50;
   co_fused_factor     constant pls_integer := 2;
   -- durable facts are enumerated while the scope holds at most this many row versions of them
   co_facts_enumerated constant pls_integer := 100;
   -- how far below its thread neighbour's relevance a recalled turn may fall (logits; PostgreSQL the same)
   co_adjacent_margin  constant number := 2.5;
   -- a recalled turn gains this share of its thread's best relevance (logits; PostgreSQL the same)
   co_thread_weight    constant number := 0.3;
   -- confidence and recency break near-ties of relevance: their weights count at this share, and recency's in
   -- full only when the question asks about the present (ctx_rules.asks_about_present; PostgreSQL the same)
   co_tie_share        constant number := 0.005;
   -- stands for a neighbour that is not a candidate (greatest would return NULL for a missing one)
   co_no_logit         constant number := -1e9;
   co_method_recorded  constant varchar2(40) := 'recorded';
   co_method_lexical   constant varchar2(40) := ctx_retrieval.co_method_lexical;
   co_method_hybrid    constant varchar2(40) := ctx_retrieval.co_method_hybrid;

   -- the manifest rows
   co_conversation     constant varchar2(30) := 'conversation';
   co_manifest_prefix  constant varchar2(30) := 'manifest_';
   co_manifest_event   constant conversation_memory.event_type%type := 'context_manifest';
   co_event_role       constant conversation_memory.role%type := 'event';
   co_derived_manifest constant context_source_ref.derived_type%type := 'manifest';
   co_active           constant context_source_ref.status%type := 'active';
   co_max_quote        constant pls_integer := 200;
   co_type_length      constant pls_integer := 32;
   co_id_length        constant pls_integer := 128;
   co_scope_length     constant pls_integer := 64;

   e_invalid_scn exception;
   pragma exception_init(e_invalid_scn, -8181);
   e_snapshot_not_found exception;
   pragma exception_init(e_snapshot_not_found, -8180);
   e_table_changed exception;
   pragma exception_init(e_table_changed, -1466);
   e_json_syntax exception;
   pragma exception_init(e_json_syntax, -40441);

   function selection_version return varchar2 deterministic is
   begin
      return co_selection_version;
   end selection_version;

   -- ------------------------------------------------------------------------------------------------------
   -- select_window: the arguments and the budget step

   -- in_scores as a JSON array [{"k": "type:id:version", "v": logit}, ...] that SQL can join; NULL for NULL
   function score_rows(in_scores in clob) return clob is
      co_message constant varchar2(100) := 'in_scores must be a JSON object of "type:id:version" -> logit';
      l_element json_element_t;
      l_scores  json_object_t;
      l_keys    json_key_list;
      l_value   json_element_t;
      l_entry   json_object_t;
      l_rows    json_array_t := json_array_t();
   begin
      if in_scores is null then
         return null;
      end if;
      begin
         l_element := json_element_t.parse(in_scores);
      exception
         when e_json_syntax then
            l_element := null;
      end;
      if l_element is null or not l_element.is_object() then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_argument, in_detail => co_message);
      end if;
      l_scores := treat(l_element as json_object_t);
      if l_scores.get_size() > co_max_replay_items then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_sources and in_scores may hold at most ' || to_char(co_max_replay_items) || ' entries each'
         );
      end if;
      l_keys := l_scores.get_keys();
      if l_keys is not null then
         for i in 1 .. l_keys.count loop
            l_value := l_scores.get(l_keys(i));
            if l_value.is_number() then
               l_entry := json_object_t();
               l_entry.put('k', l_keys(i));
               l_entry.put('v', l_scores.get_number(l_keys(i)));
               l_rows.append(l_entry);
            elsif not l_value.is_null() then
               ctx_errors.raise_error(
                  in_code   => ctx_errors.co_invalid_argument,
                  in_detail => co_message || '; ' || ctx_errors.quoted(in_text => substr(l_keys(i), 1, co_max_quote))
                               || ' is not a number'
               );
            end if;
         end loop;
      end if;
      return l_rows.to_clob();
   end score_rows;

   -- in_sources (replay: the source list a manifest recorded), checked to be a JSON array; NULL for NULL
   function source_items(in_sources in clob) return clob is
      co_message constant varchar2(100) := 'in_sources must be a JSON array of source items';
      l_element json_element_t;
   begin
      if in_sources is null then
         return null;
      end if;
      begin
         l_element := json_element_t.parse(in_sources);
      exception
         when e_json_syntax then
            l_element := null;
      end;
      if l_element is null or not l_element.is_array() then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_argument, in_detail => co_message);
      end if;
      if l_element.get_size() > co_max_replay_items then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_sources and in_scores may hold at most ' || to_char(co_max_replay_items) || ' entries each'
         );
      end if;
      return in_sources;
   end source_items;

   -- ------------------------------------------------------------------------------------------------------
   -- the in-database models (dynamic SQL: the package compiles and runs without them)

   -- 1 when the owner's schema has the ONNX cross-encoder BGE_RERANKER, else 0 (looked up once per call)
   function reranker_present return pls_integer is
      l_models pls_integer;
   begin
      select count(*)
        into l_models
        from user_mining_models m
       where m.model_name = co_reranker_model;
      return case when l_models > 0 then 1 else 0 end;
   end reranker_present;

   -- The cross-encoder's logits for the candidates of a selection (in_window, the document select_window
   -- builds): one PREDICTION per (question, full text) pair, rounded to 6 places, as the JSON array
   -- [{"k": "type:id:version", "v": logit}] that score_rows makes of in_scores; NULL when there is no candidate.
   -- Only the candidates are scored (the dynamic slices after dedup, conflict and the limit per slice), never
   -- fixed or excluded rows. The logit is unbounded; the sigmoid is applied in one place, the score step.
   function reranker_scores(in_question in clob, in_window in clob) return clob is
      l_sql    varchar2(2000);
      l_scores clob;
   begin
      l_sql := 'select json_arrayagg(json_object('
               || '''k'' value c.memory_type || '':'' || c.id || '':'' || to_char(c.version), '
               || '''v'' value round(prediction('
               || sys.dbms_assert.simple_sql_name(str => co_reranker_model)
               || ' using :b_question as first_input, c.content as second_input), '
               || to_char(co_score_places)
               || ') returning clob) format json returning clob)'
               || ' from json_table(:b_window, ''$.candidates[*]'' columns ('
               || 'memory_type varchar2(32) path ''$.ref[0]'', '
               || 'id varchar2(128) path ''$.ref[1]'', '
               || 'version number path ''$.ref[2]'', '
               || 'content clob path ''$.tiers.full'')) c';
      execute immediate l_sql into l_scores using in_question, in_window;
      return l_scores;
   end reranker_scores;

   -- ------------------------------------------------------------------------------------------------------
   -- select_window

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
   ) return clob is
      l_tenant_id      ctx_tenant.tenant_id%type;
      l_snapshot_scn   number;
      l_read_scn       number;
      l_scores         clob;
      l_sources        clob;
      l_text_scores    clob;
      l_query_vector   clob;
      l_method         varchar2(40);
      l_scorer         varchar2(64);
      l_use_reranker   pls_integer := 0;
      l_use_sources    pls_integer := 0;
      l_scoring        pls_integer := 0;
      l_budget_id      guideline_memory.id%type;
      l_budget_version guideline_memory.version%type;
      l_budget_json    clob;
      l_budget         ctx_budget.t_budget;
      l_w_rerank       number;
      l_w_confidence   number;
      l_w_recency      number;
      l_recency_days   number;
      l_require        pls_integer;
      l_limits         json_object_t;
      l_limits_json    clob;
      l_limit_facts    pls_integer;
      l_limit_evidence pls_integer;
      l_limit_history  pls_integer;
      l_limit_tail     pls_integer;
      l_words          ctx_json.t_text_tab;
      l_with_facts     pls_integer;
      l_slices         ctx_json.t_text_tab := ctx_json.t_text_tab(co_evidence, co_history, co_facts);
      l_slice          varchar2(32);
      l_depth          pls_integer;
      l_enumerated     clob;
      l_lexical        clob;
      l_retrieved      clob;
      l_result         clob;
      l_present        pls_integer := 0;
   begin
      l_tenant_id := ctx_session.require_scope(in_user_id => in_user_id, in_agent_id => in_agent_id);
      if nvl(length(trim(in_question)), 0) = 0 then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_question, in_detail => 'the question must not be empty');
      end if;
      if length(in_question) > co_max_question then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_question,
            in_detail => 'in_question is ' || to_char(length(in_question)) || ' characters long, at most '
                         || to_char(co_max_question) || ' are allowed'
         );
      end if;
      -- Does the question ask about the present? Then recency counts in full (step priority).
      l_present := ctx_rules.asks_about_present(in_question => in_question);
      if in_evaluation_time is null then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_evaluation_time must be given'
         );
      end if;
      l_sources := source_items(in_sources => in_sources);
      l_scores := score_rows(in_scores => in_scores);
      if in_query_embedding is not null and not ctx_json.is_vector_text(in_text => in_query_embedding, in_dimensions => co_dimensions)
      then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_query_embedding must be a vector of ' || to_char(co_dimensions) || ' numbers, ''[x,y,...]'''
         );
      end if;
      -- Replay reads the rows exactly as they were at the recorded SCN; a live window reads the live tables and
      -- records the SCN it started at.
      if in_snapshot is null then
         l_read_scn := sys.dbms_flashback.get_system_change_number();
      elsif regexp_like(in_snapshot, co_snapshot_pattern) then
         l_snapshot_scn := to_number(in_snapshot);
         l_read_scn := l_snapshot_scn;
      else
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_snapshot,
            in_detail => ctx_errors.quoted(in_text => substr(in_snapshot, 1, co_max_quote))
                         || ' is not an SCN from capture_snapshot'
         );
      end if;
      -- The relevance scorer: the caller's logits, the recorded ones (replay), else the in-database
      -- cross-encoder, else the hybrid scorer. Only the last two compute signals (text score, similarity).
      if in_sources is not null then
         l_use_sources := 1;
      end if;
      if in_scores is not null then
         l_scorer := co_external_scorer;
      elsif in_sources is not null then
         l_scorer := co_recorded_scorer;
      else
         l_scoring := 1;
         l_use_reranker := reranker_present();
         l_scorer := case when l_use_reranker = 1 then co_reranker_scorer else co_hybrid_scorer end;
      end if;
      -- The query vector: the caller's, else (for a live window) the in-database model's, else none.
      if in_query_embedding is not null then
         l_query_vector := in_query_embedding;
      elsif in_sources is null then
         l_query_vector := ctx_retrieval.question_embedding(in_question => in_question);
      end if;

      begin
         -- Step: budget. The narrowest context_budget guideline in effect for this scope at the evaluation time,
         -- with the fields the database uses, checked (CTX_BUDGET).
         l_budget := ctx_budget.budget_in_effect(
            in_tenant_id       => l_tenant_id,
            in_user_id         => in_user_id,
            in_agent_id        => in_agent_id,
            in_thread_id       => in_thread_id,
            in_intent          => in_intent,
            in_evaluation_time => in_evaluation_time,
            in_snapshot_scn    => l_snapshot_scn,
            in_read_scn        => l_read_scn
         );
         l_budget_id := l_budget.id;
         l_budget_version := l_budget.version;
         l_budget_json := l_budget.content_json;
         l_w_rerank := l_budget.w_rerank;
         l_w_confidence := l_budget.w_confidence;
         l_w_recency := l_budget.w_recency;
         l_recency_days := l_budget.recency_days;
         l_require := l_budget.require_facts;

         -- Step: candidate limits.
         l_limits := ctx_budget.candidate_limits(in_budget_name => l_budget.name, in_budget => l_budget.content,
                                                 in_intent => in_intent);
         l_limits_json := l_limits.to_clob();
         l_limit_facts := l_limits.get_number(co_facts);
         l_limit_evidence := l_limits.get_number(co_evidence);
         l_limit_history := l_limits.get_number(co_history);
         l_limit_tail := l_limits.get_number(co_tail);

         -- Step: sources. Live: what the window enumerates (fixed slices, the thread's tail, few durable facts),
         -- what retrieval finds for each retrieved slice, then what the recalled history cites and the claims of
         -- those citations. Replay: exactly the sources the manifest recorded.
         if in_sources is null then
            l_words := ctx_retrieval.question_words(in_question => in_question);
            l_with_facts := case
                               when ctx_sources.facts_enumerable(
                                       in_tenant_id => l_tenant_id, in_user_id => in_user_id, in_agent_id => in_agent_id,
                                       in_thread_id => in_thread_id, in_limit => co_facts_enumerated)
                               then 1
                               else 0
                            end;
            l_enumerated := ctx_sources.enumerated_sources(
               in_tenant_id  => l_tenant_id,
               in_user_id    => in_user_id,
               in_agent_id   => in_agent_id,
               in_thread_id  => in_thread_id,
               in_tail_limit => l_limit_tail,
               in_with_facts => l_with_facts
            );
            l_sources := l_enumerated;
            for i in 1 .. l_slices.count loop
               l_slice := l_slices(i);
               l_depth := greatest(
                  co_retrieval_depth,
                  case l_slice when co_evidence then l_limit_evidence when co_history then l_limit_history
                               else l_limit_facts end
               );
               -- Enumerated facts are not retrieved, but their text scores come from the same lexical query.
               l_lexical := ctx_retrieval.lexical_hits(
                  in_tenant_id       => l_tenant_id,
                  in_slice           => l_slice,
                  in_user_id         => in_user_id,
                  in_agent_id        => in_agent_id,
                  in_thread_id       => in_thread_id,
                  in_evaluation_time => in_evaluation_time,
                  in_probe           => ctx_retrieval.text_probe(in_slice => l_slice, in_words => l_words),
                  in_depth           => case when l_slice = co_facts and l_with_facts = 1 then co_facts_enumerated
                                             else l_depth end
               );
               l_text_scores := ctx_json.array_union(in_first => l_text_scores, in_second => l_lexical);
               if not (l_slice = co_facts and l_with_facts = 1) then
                  -- the thread's tail is shown as turns; retrieval recalls the rest of the history
                  l_retrieved := ctx_retrieval.retrieved_items(
                     in_slice   => l_slice,
                     in_lexical => l_lexical,
                     in_vector  => ctx_retrieval.nearest(
                                      in_tenant_id       => l_tenant_id,
                                      in_slice           => l_slice,
                                      in_user_id         => in_user_id,
                                      in_agent_id        => in_agent_id,
                                      in_thread_id       => in_thread_id,
                                      in_evaluation_time => in_evaluation_time,
                                      in_vector          => l_query_vector,
                                      in_depth           => l_depth
                                   ),
                     in_limit   => co_fused_factor * l_depth,
                     in_exclude => l_enumerated
                  );
                  l_sources := ctx_json.array_union(in_first => l_sources, in_second => l_retrieved);
                  if l_slice = co_history then
                     l_sources := ctx_json.array_union(
                        in_first  => l_sources,
                        in_second => ctx_retrieval.adjacent_items(
                                        in_tenant_id       => l_tenant_id,
                                        in_user_id         => in_user_id,
                                        in_agent_id        => in_agent_id,
                                        in_evaluation_time => in_evaluation_time,
                                        in_retrieved       => l_retrieved,
                                        in_limit           => l_limit_history,
                                        in_exclude         => l_enumerated
                                     )
                     );
                  end if;
               end if;
            end loop;
            l_sources := ctx_json.array_union(
               in_first  => l_sources,
               in_second => ctx_sources.claim_sources(
                               in_tenant_id => l_tenant_id,
                               in_user_id   => in_user_id,
                               in_agent_id  => in_agent_id,
                               in_thread_id => in_thread_id,
                               in_sources   => l_sources
                            )
            );
            l_method := case when l_query_vector is null then co_method_lexical else co_method_hybrid end;
         else
            l_method := co_method_recorded;
         end if;
         l_text_scores := coalesce(l_text_scores, to_clob(ctx_json.co_empty_array));


         -- Steps scope .. limit and the tiers, in one statement over the rows the sources name. With the
         -- in-database cross-encoder the statement runs twice: once with the hybrid logits, then with the model's
         -- logits for exactly the candidates of the first run (reranker_scores), as if they had been passed as
         -- in_scores (PostgreSQL: the assembler's second select_window with in_scores and in_sources).
         loop
            with
            -- The source list as rows (PostgreSQL: ctxasm.merged_sources).
            source_entries as (
               select e.memory_type, e.id, e.version, e.origin, e.slice, e.lexical_rank, e.vector_rank,
                      e.lexical_score, e.vector_distance, e.fused, e.logit, e.bm25, e.similarity, e.next_to,
                      e.adjacent_logit, e.thread_logit,
                      case e.origin
                         when 'tail' then 1
                         when 'scope' then 2
                         when 'retrieval' then 3
                         when 'adjacent' then 4
                         when 'claim' then 5
                         when 'cited' then 6
                      end as precedence
                 from json_table(l_sources, '$[*]'
                         columns (
                            memory_type     varchar2(32)  path '$.ref[0]',
                            id              varchar2(128) path '$.ref[1]',
                            version         number        path '$.ref[2]',
                            origin          varchar2(16)  path '$.origin',
                            slice           varchar2(32)  path '$.slice',
                            lexical_rank    number        path '$.lexical_rank',
                            vector_rank     number        path '$.vector_rank',
                            lexical_score   number        path '$.lexical_score',
                            vector_distance number        path '$.vector_distance',
                            fused           number        path '$.fused',
                            logit           number        path '$.logit',
                            bm25            number        path '$.bm25',
                            similarity      number        path '$.similarity',
                            next_to         varchar2(128) path '$.next_to',
                            adjacent_logit  number        path '$.adjacent_logit',
                            thread_logit    number        path '$.thread_logit'
                         )
                      ) e
                where e.memory_type is not null
                  and e.id is not null
                  and e.version is not null
            ),
            -- One entry per row version: the first origin by precedence (the thread's tail, enumeration,
            -- retrieval, a turn next to a retrieved one, a claim, a citation), with the figures of the retrieval
            -- entry for it.
            sources as (
               select s.memory_type, s.id, s.version,
                      min(s.origin) keep (dense_rank first order by s.precedence) as origin,
                      min(s.next_to) keep (dense_rank first order by s.precedence) as next_to,
                      coalesce(max(case when s.origin = 'retrieval' then s.adjacent_logit end),
                               min(s.adjacent_logit) keep (dense_rank first order by s.precedence))
                         as adjacent_logit,
                      coalesce(max(case when s.origin = 'retrieval' then s.thread_logit end),
                               min(s.thread_logit) keep (dense_rank first order by s.precedence))
                         as thread_logit,
                      min(s.slice) keep (dense_rank first order by s.precedence) as item_slice,
                      min(s.precedence) as precedence,
                      max(case when s.origin = 'retrieval' then 1 else 0 end) as retrieved,
                      max(case when s.origin = 'retrieval' then s.lexical_rank end) as lexical_rank,
                      max(case when s.origin = 'retrieval' then s.vector_rank end) as vector_rank,
                      max(case when s.origin = 'retrieval' then s.lexical_score end) as lexical_score,
                      max(case when s.origin = 'retrieval' then s.vector_distance end) as vector_distance,
                      max(case when s.origin = 'retrieval' then s.fused end) as fused,
                      coalesce(max(case when s.origin = 'retrieval' then s.logit end),
                               min(s.logit) keep (dense_rank first order by s.precedence)) as logit,
                      coalesce(max(case when s.origin = 'retrieval' then s.bm25 end),
                               min(s.bm25) keep (dense_rank first order by s.precedence)) as bm25,
                      coalesce(max(case when s.origin = 'retrieval' then s.similarity end),
                               min(s.similarity) keep (dense_rank first order by s.precedence)) as similarity
                 from source_entries s
                group by s.memory_type, s.id, s.version
            ),
            -- The rows the sources name, by primary key, each read led by the tenant (PostgreSQL:
            -- ctxasm.source_rows): the live table, or, for a replay, the table AS OF the recorded SCN. The
            -- embedding is compared with the question's here (similarity), so no vector travels further. JSON
            -- columns travel as CLOB text.
            memory_rows as (
               -- generated: memory rows from contract/memory_types.toml; edit the catalogue, then regenerate
               select cast('guideline' as varchar2(32)) as memory_type,
                      cast('guideline_memory' as varchar2(32)) as table_name,
                      f.origin, f.item_slice, f.retrieved, f.lexical_rank as source_lexical_rank,
                      f.vector_rank as source_vector_rank, f.lexical_score as source_lexical_score,
                      f.vector_distance as source_vector_distance, f.fused as source_fused, f.logit as source_logit,
                      f.bm25 as source_bm25, f.similarity as source_similarity,
                      f.thread_logit as source_thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob) as content_json,
                      json_serialize(t.source_refs returning clob) as source_refs,
                      cast(null as number) as confidence, cast(t.guideline_key as varchar2(512)) as key_name,
                      cast(null as varchar2(256)) as subject, cast(null as varchar2(256)) as predicate,
                      cast(null as varchar2(512)) as title, cast(null as number) as turn_index,
                      cast(null as varchar2(16)) as role, cast(null as varchar2(64)) as event_type,
                      to_clob(null) as extra,
                      t.content_tokens,
                      cast(null as number) as similarity_raw,
                      cast(null as varchar2(32)) as text_key,
                      cast(null as varchar2(64)) as pointer_text
                 from sources f
                 join guideline_memory t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'guideline' and l_snapshot_scn is null
               union all
               select 'guideline', 'guideline_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.guideline_key, null, null, null, null, null, null,
                      to_clob(null),
                      t.content_tokens,
                      null,
                      null, null
                 from sources f
                 join guideline_memory as of scn l_read_scn t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'guideline' and l_snapshot_scn is not null
               union all
               select 'persona', 'persona_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.persona_key, null, null, null, null, null, null,
                      to_clob(null),
                      t.content_tokens,
                      null,
                      null, null
                 from sources f
                 join persona_memory t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'persona' and l_snapshot_scn is null
               union all
               select 'persona', 'persona_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.persona_key, null, null, null, null, null, null,
                      to_clob(null),
                      t.content_tokens,
                      null,
                      null, null
                 from sources f
                 join persona_memory as of scn l_read_scn t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'persona' and l_snapshot_scn is not null
               union all
               select 'toolbox', 'toolbox_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.tool_name, null, null, null, null, null, null,
                      json_object('tool_schema' value t.tool_schema, 'usage_notes' value t.usage_notes,
                                  'tool_handler' value t.tool_handler, 'access_policy' value t.access_policy
                                  null on null returning clob),
                      t.content_tokens,
                      null,
                      null, null
                 from sources f
                 join toolbox_memory t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'toolbox' and l_snapshot_scn is null
               union all
               select 'toolbox', 'toolbox_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.tool_name, null, null, null, null, null, null,
                      json_object('tool_schema' value t.tool_schema, 'usage_notes' value t.usage_notes,
                                  'tool_handler' value t.tool_handler, 'access_policy' value t.access_policy
                                  null on null returning clob),
                      t.content_tokens,
                      null,
                      null, null
                 from sources f
                 join toolbox_memory as of scn l_read_scn t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'toolbox' and l_snapshot_scn is not null
               union all
               select 'entity', 'entity_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank, f.vector_rank,
                      f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity, f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      t.confidence, null, t.subject, t.predicate, null, null, null, null,
                      to_clob(null),
                      t.content_tokens,
                      case
                         when l_scoring = 1 and l_query_vector is not null and t.embedding is not null
                         then 1 - cast(vector_distance(t.embedding, to_vector(l_query_vector, 384, float32), cosine) as number)
                      end,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join entity_memory t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'entity' and l_snapshot_scn is null
               union all
               select 'entity', 'entity_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank, f.vector_rank,
                      f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity, f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      t.confidence, null, t.subject, t.predicate, null, null, null, null,
                      to_clob(null),
                      t.content_tokens,
                      case
                         when l_scoring = 1 and l_query_vector is not null and t.embedding is not null
                         then 1 - cast(vector_distance(t.embedding, to_vector(l_query_vector, 384, float32), cosine) as number)
                      end,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join entity_memory as of scn l_read_scn t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'entity' and l_snapshot_scn is not null
               union all
               select 'workflow', 'workflow_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.workflow_key, null, null, null, null, null, null,
                      to_clob(null),
                      t.content_tokens,
                      case
                         when l_scoring = 1 and l_query_vector is not null and t.embedding is not null
                         then 1 - cast(vector_distance(t.embedding, to_vector(l_query_vector, 384, float32), cosine) as number)
                      end,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join workflow_memory t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'workflow' and l_snapshot_scn is null
               union all
               select 'workflow', 'workflow_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.workflow_key, null, null, null, null, null, null,
                      to_clob(null),
                      t.content_tokens,
                      case
                         when l_scoring = 1 and l_query_vector is not null and t.embedding is not null
                         then 1 - cast(vector_distance(t.embedding, to_vector(l_query_vector, 384, float32), cosine) as number)
                      end,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join workflow_memory as of scn l_read_scn t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'workflow' and l_snapshot_scn is not null
               union all
               select 'kb_document', 'knowledge_base_document', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.collection, null, null, t.title, null, null, null,
                      json_object('source_uri' value t.source_uri,
                                  'published_at' value ctx_json.iso_utc(in_timestamp => t.published_at)
                                  null on null returning clob),
                      t.content_tokens,
                      null,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join knowledge_base_document t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'kb_document' and l_snapshot_scn is null
               union all
               select 'kb_document', 'knowledge_base_document', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.collection, null, null, t.title, null, null, null,
                      json_object('source_uri' value t.source_uri,
                                  'published_at' value ctx_json.iso_utc(in_timestamp => t.published_at)
                                  null on null returning clob),
                      t.content_tokens,
                      null,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join knowledge_base_document as of scn l_read_scn t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'kb_document' and l_snapshot_scn is not null
               union all
               select 'kb_chunk', 'knowledge_base_chunk', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.document_id, null, null, t.title, t.chunk_index, null, null,
                      json_object('document_version' value t.document_version null on null returning clob),
                      t.content_tokens,
                      case
                         when l_scoring = 1 and l_query_vector is not null and t.embedding is not null
                         then 1 - cast(vector_distance(t.embedding, to_vector(l_query_vector, 384, float32), cosine) as number)
                      end,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join knowledge_base_chunk t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'kb_chunk' and l_snapshot_scn is null
               union all
               select 'kb_chunk', 'knowledge_base_chunk', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.document_id, null, null, t.title, t.chunk_index, null, null,
                      json_object('document_version' value t.document_version null on null returning clob),
                      t.content_tokens,
                      case
                         when l_scoring = 1 and l_query_vector is not null and t.embedding is not null
                         then 1 - cast(vector_distance(t.embedding, to_vector(l_query_vector, 384, float32), cosine) as number)
                      end,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join knowledge_base_chunk as of scn l_read_scn t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'kb_chunk' and l_snapshot_scn is not null
               union all
               select 'conversation', 'conversation_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, null, null, null, null, t.turn_index, t.role, t.event_type,
                      to_clob(null),
                      t.content_tokens,
                      case
                         when l_scoring = 1 and l_query_vector is not null and t.embedding is not null
                         then 1 - cast(vector_distance(t.embedding, to_vector(l_query_vector, 384, float32), cosine) as number)
                      end,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join conversation_memory t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'conversation' and l_snapshot_scn is null
               union all
               select 'conversation', 'conversation_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, null, null, null, null, t.turn_index, t.role, t.event_type,
                      to_clob(null),
                      t.content_tokens,
                      case
                         when l_scoring = 1 and l_query_vector is not null and t.embedding is not null
                         then 1 - cast(vector_distance(t.embedding, to_vector(l_query_vector, 384, float32), cosine) as number)
                      end,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join conversation_memory as of scn l_read_scn t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'conversation' and l_snapshot_scn is not null
               union all
               select 'summary', 'summarization_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.summary_key, null, null, null, null, null, null,
                      json_object('period_start' value ctx_json.iso_utc(in_timestamp => t.period_start),
                                  'period_end' value ctx_json.iso_utc(in_timestamp => t.period_end)
                                  null on null returning clob),
                      t.content_tokens,
                      case
                         when l_scoring = 1 and l_query_vector is not null and t.embedding is not null
                         then 1 - cast(vector_distance(t.embedding, to_vector(l_query_vector, 384, float32), cosine) as number)
                      end,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join summarization_memory t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'summary' and l_snapshot_scn is null
               union all
               select 'summary', 'summarization_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, t.summary_key, null, null, null, null, null, null,
                      json_object('period_start' value ctx_json.iso_utc(in_timestamp => t.period_start),
                                  'period_end' value ctx_json.iso_utc(in_timestamp => t.period_end)
                                  null on null returning clob),
                      t.content_tokens,
                      case
                         when l_scoring = 1 and l_query_vector is not null and t.embedding is not null
                         then 1 - cast(vector_distance(t.embedding, to_vector(l_query_vector, 384, float32), cosine) as number)
                      end,
                      coalesce(t.text_key, ctx_memory.text_key(in_text => t.content)),
                      coalesce(t.pointer_text, ctx_memory.pointer_line(in_text => t.content))
                 from sources f
                 join summarization_memory as of scn l_read_scn t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'summary' and l_snapshot_scn is not null
               -- end generated: memory rows
            ),
            -- Sources whose row version is erased now, looked up by primary key, for a replay only: read AS OF an
            -- earlier SCN, undo still holds their text, and the contract never returns it (PostgreSQL: the
            -- history copies are deleted with the erasure, so a replay finds no such row). A live window reads
            -- the erased status itself and excludes the row as erased, as PostgreSQL does.
            erased_now as (
               -- generated: erased now from contract/memory_types.toml; edit the catalogue, then regenerate
               select f.memory_type, f.id, f.version
                 from sources f
                 join guideline_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'guideline' and l_snapshot_scn is not null and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join persona_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'persona' and l_snapshot_scn is not null and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join toolbox_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'toolbox' and l_snapshot_scn is not null and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join entity_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'entity' and l_snapshot_scn is not null and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join workflow_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'workflow' and l_snapshot_scn is not null and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join knowledge_base_document e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'kb_document' and l_snapshot_scn is not null and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join knowledge_base_chunk e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'kb_chunk' and l_snapshot_scn is not null and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join conversation_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'conversation' and l_snapshot_scn is not null and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join summarization_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'summary' and l_snapshot_scn is not null and e.status = 'erased'
               -- end generated: erased now
            ),
            -- Step: scope. Other tenants are invisible (every read names the tenant; VPD); user, agent and thread
            -- must match or be NULL (wider); a user's turns in other threads are recalled history; events are not
            -- memory. Checked again here because replay takes its source list from the caller.
            step_scope as (
               select r.*,
                      ctx_rules.scope_level(in_user_id => r.user_id, in_agent_id => r.agent_id,
                                               in_thread_id => r.thread_id) as scope_level,
                      ctx_rules.authority(in_memory_type => r.memory_type) as authority_rank,
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
                      end as slice
                 from memory_rows r
                where (r.user_id is null or r.user_id = in_user_id)
                  and (r.agent_id is null or r.agent_id = in_agent_id)
                  and (r.thread_id is null or r.thread_id = in_thread_id
                       or (r.memory_type = 'conversation' and r.user_id = in_user_id))
                  and (r.memory_type <> 'conversation' or r.event_type = 'message')
                  and not (r.memory_type = 'guideline' and r.key_name = co_budget_key)
                  and not exists (select 1
                                    from erased_now x
                                   where x.memory_type = r.memory_type and x.id = r.id and x.version = r.version)
            ),
            -- Step: lifecycle, at the one evaluation time. NULL reason = in effect. The claim identity of every
            -- row, in effect or not (a cited row out of effect names its claim's winner), as sha256 of its text:
            -- Oracle cannot partition or join on a CLOB.
            lifecycle_keys as (
               select s.*,
                      case
                         when s.status = 'erased' then 'erased'
                         when s.deleted_at is not null then 'deleted'
                         when s.valid_from > in_evaluation_time then 'not_yet_effective'
                         when s.valid_until is not null and s.valid_until <= in_evaluation_time then
                            case when s.status = 'superseded' then 'superseded' else 'expired' end
                      end as lifecycle_reason,
                      ctx_rules.claim_key(
                         in_subject      => s.subject,
                         in_predicate    => s.predicate,
                         in_content_json => s.content_json
                      ) as claim_key
                 from step_scope s
            ),
            step_lifecycle as (
               select k.*,
                      case when k.claim_key is not null then ctx_memory.sha256_hex(in_text => k.claim_key) end
                         as claim_hash
                 from lifecycle_keys k
            ),
            -- A row cited by history only competes when it is in effect; otherwise it is the annotation's source.
            effective as (
               select l.*
                 from step_lifecycle l
                where l.lifecycle_reason is null
            ),
            -- Fixed slices: per (type, key) the narrowest scope wins; the rest are excluded as conflicts.
            fixed_ranked as (
               select e.*,
                      row_number() over (
                         partition by e.memory_type, e.key_name
                         order by e.scope_level desc, e.valid_from desc, e.id
                      ) as key_rank
                 from effective e
                where e.slice in ('guidelines', 'persona', 'tools')
            ),
            dynamic_rows as (
               select e.*
                 from effective e
                where e.slice not in ('guidelines', 'persona', 'tools')
            ),
            -- Step: dedup. Identical normalized text (the stored text_key) keeps the most authoritative copy,
            -- where claim identities agree.
            dedup_ranked as (
               select d.*,
                      row_number() over (
                         partition by d.text_key
                         order by d.authority_rank, d.scope_level desc, d.valid_from desc, d.table_name, d.id
                      ) as text_rank
                 from dynamic_rows d
            ),
            step_dedup as (
               select d.*,
                      case
                         when k.id is not null
                              and not (d.memory_type = k.memory_type and d.id = k.id and d.version = k.version)
                              and (d.claim_hash is null or k.claim_hash is null or d.claim_hash = k.claim_hash)
                         then 1
                         else 0
                      end as is_duplicate,
                      k.memory_type as kept_type,
                      k.id as kept_id,
                      k.version as kept_version
                 from dedup_ranked d
                 left join dedup_ranked k
                   on k.text_key = d.text_key
                  and k.text_rank = 1
            ),
            -- Step: conflicts. Within a claim, canonical facts beat derived claims and the narrower scope wins.
            conflict_ranked as (
               select d.*,
                      case
                         when d.claim_hash is not null then
                            row_number() over (
                               partition by d.claim_hash
                               order by d.authority_rank, d.scope_level desc, d.valid_from desc, d.table_name, d.id
                            )
                      end as claim_rank
                 from step_dedup d
                where d.is_duplicate = 0
            ),
            step_conflict as (
               select c.*,
                      w.memory_type as winner_type,
                      w.id as winner_id,
                      w.version as winner_version
                 from conflict_ranked c
                 left join conflict_ranked w
                   on w.claim_hash = c.claim_hash
                  and w.claim_rank = 1
                  and c.claim_rank > 1
            ),
            survivors as (
               select c.*
                 from step_conflict c
                where c.winner_id is null
            ),
            -- History that cites a version no longer in effect stays, labelled, pointing at the claim's current
            -- winner (whatever its row id), or, for a row that makes no claim, at the current version of the same
            -- row.
            cited_sources as (
               select s.memory_type, s.id, s.version, j.ref_ord, j.ref_type, j.ref_id, j.ref_version
                 from survivors s,
                      json_table(s.source_refs, '$[*]'
                         columns (
                            ref_ord     for ordinality,
                            ref_type    varchar2(32)  path '$.type',
                            ref_id      varchar2(128) path '$.id',
                            ref_version number        path '$.version'
                         )
                      ) j
                where s.memory_type in ('summary', 'conversation')
            ),
            annotation_candidates as (
               select a.memory_type, a.id, a.version, a.ref_ord,
                      src.memory_type as src_type,
                      src.id as src_id,
                      src.version as src_version,
                      cur.memory_type as cur_type,
                      cur.id as cur_id,
                      cur.version as cur_version,
                      cur.content as cur_content,
                      row_number() over (
                         partition by a.memory_type, a.id, a.version, a.ref_ord
                         order by cur.authority_rank, cur.scope_level desc, cur.valid_from desc, cur.table_name, cur.id
                      ) as cur_rank
                 from cited_sources a
                 join step_lifecycle src
                   on src.memory_type = a.ref_type
                  and src.id = a.ref_id
                  and src.version = a.ref_version
                  and src.lifecycle_reason is not null
                 left join survivors cur
                   on cur.memory_type not in ('summary', 'conversation')
                  and ((src.claim_hash is not null and cur.claim_hash = src.claim_hash)
                       or (src.claim_hash is null and cur.memory_type = src.memory_type and cur.id = src.id))
            ),
            annotation_links as (
               select c.*
                 from annotation_candidates c
                where c.cur_rank = 1
            ),
            annotations as (
               select a.memory_type, a.id, a.version,
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
                      ) as notes
                 from annotation_links a
                group by a.memory_type, a.id, a.version
            ),
            -- Step: required. The current facts history points at, when the budget requires them.
            required_refs as (
               select distinct a.cur_type, a.cur_id, a.cur_version
                 from annotation_links a
                where l_require = 1
                  and a.cur_id is not null
            ),
            -- Step: score. Relevance is the reranker's logit when scores are given, the recorded logit on replay,
            -- or the hybrid scorer's (ctx_assembly.hybrid_logit) from the candidate's embedding similarity and its
            -- Oracle Text score within its slice (the lexical query's SCORE; 0 for a row it did not find, and for
            -- the thread's tail).
            signals as (
               select v.*,
                      case
                         when l_scoring = 1 then
                            case
                               when v.slice in ('durable_facts', 'evidence', 'recalled_history')
                               then coalesce(ts.text_score, 0)
                               else 0
                            end
                      end as bm25_raw
                 from survivors v
                 left join json_table(l_text_scores, '$[*]'
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
            ),
            scored_logit as (
               select g.*,
                      case
                         when l_scores is not null then sc.score_logit
                         -- the recorded logit less its thread share, which adjacent_scored adds back
                         when l_use_sources = 1 then
                            g.source_logit
                            - coalesce(round(co_thread_weight * g.source_thread_logit, co_score_places), 0)
                         when g.slice in ('durable_facts', 'evidence', 'recalled_history') then
                            ctx_rules.hybrid_logit(
                               in_similarity      => g.similarity_raw,
                               in_text_score      => g.bm25_raw,
                               in_best_text_score => max(g.bm25_raw) over (partition by g.slice)
                            )
                      end as own_logit,
                      case
                         when l_use_sources = 1 then g.source_bm25
                         else round(g.bm25_raw, co_score_places)
                      end as bm25,
                      case
                         when l_use_sources = 1 then g.source_similarity
                         else round(g.similarity_raw, co_score_places)
                      end as similarity,
                      in_evaluation_time - g.valid_from as age
                 from signals g
                 left join json_table(coalesce(l_scores, to_clob(ctx_json.co_empty_array)), '$[*]'
                         columns (
                            score_key   varchar2(4000) path '$.k',
                            score_logit number         path '$.v'
                         )
                      ) sc
                   on sc.score_key = g.memory_type || ':' || g.id || ':' || to_char(g.version)
            ),
            -- A recalled turn is worth at least its neighbour in the thread less co_adjacent_margin: an answer
            -- sits next to the question that matched. Live hybrid scoring only; a replay takes the figure it
            -- recorded (its recorded logit already includes it), a reranker's scores are taken as they are.
            adjacency as (
               select r.*,
                      case
                         when l_scores is not null then null
                         when l_use_sources = 1 then
                            (select s.adjacent_logit
                               from sources s
                              where s.memory_type = r.memory_type
                                and s.id = r.id
                                and s.version = r.version)
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
                      -- The thread's best relevance among the recalled turns (live hybrid scoring; replay takes
                      -- the recorded figure). An episode summary of a thread (summary_key 'thread:<thread_id>')
                      -- stands for its turns and shares their thread's figure.
                      case
                         when l_scores is not null then null
                         when l_use_sources = 1 then r.source_thread_logit
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
            ),
            step_score as (
               select p.*,
                      case when p.logit is null then 0 else round(1 / (1 + exp(-p.logit)), co_score_places) end
                         as rerank,
                      round(coalesce(p.confidence, co_default_confidence), co_score_places) as confidence_score,
                      round(
                         greatest(
                            0,
                            1 - (extract(day from p.age) * co_seconds_per_day
                                 + extract(hour from p.age) * 3600
                                 + extract(minute from p.age) * 60
                                 + extract(second from p.age)) / co_seconds_per_day / l_recency_days
                         ),
                         co_score_places
                      ) as recency
                 from adjacent_scored p
            ),
            -- Step: priority. w_rerank * rerank, then confidence and recency at co_tie_share of their weights
            -- (recency in full when the question asks about the present): they break near-ties of relevance.
            step_priority as (
               select p.*,
                      round(
                         l_w_rerank * p.rerank + co_tie_share * l_w_confidence * p.confidence_score
                         + case when l_present = 1 then 1 else co_tie_share end * l_w_recency * p.recency,
                         co_score_places
                      ) as priority,
                      case when q.cur_id is not null then 1 else 0 end as required
                 from step_score p
                 left join required_refs q
                   on q.cur_type = p.memory_type
                  and q.cur_id = p.id
                  and q.cur_version = p.version
            ),
            -- Step: tie-break. Priority desc, valid_from desc, source table, row id; the tail keeps the latest turns.
            step_tie_break as (
               select p.*,
                      row_number() over (
                         partition by p.slice
                         order by case when p.slice = 'volatile_tail' then p.turn_index end desc nulls last,
                                  case when p.slice <> 'volatile_tail' then p.priority end desc,
                                  p.valid_from desc,
                                  p.table_name,
                                  p.id,
                                  p.version
                      ) as slice_rank,
                      case p.slice
                         when 'durable_facts' then l_limit_facts
                         when 'evidence' then l_limit_evidence
                         when 'recalled_history' then l_limit_history
                         else l_limit_tail
                      end as slice_limit
                 from step_priority p
            ),
            -- Step: limit. Each slice keeps its first candidate_limits[slice]; required ones are always kept.
            step_limit as (
               select o.*,
                      case when o.slice_rank > o.slice_limit and o.required = 0 then 1 else 0 end as cut
                 from step_tie_break o
            ),
            kept as (
               select l.*
                 from step_limit l
                where l.cut = 0
            ),
            -- The summary tier: the row version's newest active compression, by index, read as the rows are.
            compression_rows as (
               select k.source_type, k.source_id, k.source_version, k.id, k.version, k.valid_from, k.content,
                      k.content_tokens, k.source_hash, k.generating_model, k.prompt_version
                 from kept o
                 join context_compression k
                   on k.tenant_id = l_tenant_id
                  and k.source_type = o.memory_type
                  and k.source_id = o.id
                  and k.source_version = o.version
                where l_snapshot_scn is null
                  and k.status = 'active'
                  and k.deleted_at is null
               union all
               select k.source_type, k.source_id, k.source_version, k.id, k.version, k.valid_from, k.content,
                      k.content_tokens, k.source_hash, k.generating_model, k.prompt_version
                 from kept o
                 join context_compression as of scn l_read_scn k
                   on k.tenant_id = l_tenant_id
                  and k.source_type = o.memory_type
                  and k.source_id = o.id
                  and k.source_version = o.version
                where l_snapshot_scn is not null
                  and k.status = 'active'
                  and k.deleted_at is null
                  -- a compression erased since the SCN is not returned (see erased_now)
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
                               when 'entity' then 'current'
                               when 'workflow' then 'current'
                               when 'summary' then 'historical'
                               when 'conversation' then 'unverified'
                               else 'evidence'
                            end,
                         'required' value case when t.required = 1 then 'true' else 'false' end format json,
                         'selection_rank' value t.slice_rank,
                         'role' value t.role,
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
                         'annotations' value coalesce(a.notes, to_clob(ctx_json.co_empty_array)) format json
                         null on null returning clob
                      ) as candidate
                 from tiered t
                 left join annotations a
                   on a.memory_type = t.memory_type
                  and a.id = t.id
                  and a.version = t.version
            ),
            -- What the limit cut, once per slice: how many rows, and the priority below which they fell.
            cuts as (
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
                      ) as items
                 from (
                         select c.slice, max(c.slice_limit) as slice_limit, count(*) as cut_rows,
                                max(c.priority) as below_priority
                           from step_limit c
                          where c.cut = 1
                          group by c.slice
                      ) l
            ),
            fixed_items as (
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
                      ) as items
                 from fixed_ranked f
                where f.key_rank = 1
            ),
            excluded_rows as (
               select l.memory_type as ref_type, l.id as ref_id, l.version as ref_version,
                      cast('lifecycle' as varchar2(16)) as exclusion_rule,
                      cast(l.lifecycle_reason as varchar2(1000)) as detail,
                      cast(null as varchar2(32)) as kept_type,
                      cast(null as varchar2(128)) as kept_id,
                      cast(null as number) as kept_version
                 from step_lifecycle l
                where l.lifecycle_reason is not null
               union all
               select f.memory_type, f.id, f.version, 'conflict',
                      'a narrower ' || f.memory_type || ' with key ' || f.key_name || ' is in effect',
                      null, null, null
                 from fixed_ranked f
                where f.key_rank > 1
               union all
               select d.memory_type, d.id, d.version, 'dedup', null, d.kept_type, d.kept_id, d.kept_version
                 from step_dedup d
                where d.is_duplicate = 1
               union all
               select c.memory_type, c.id, c.version, 'conflict', null, c.winner_type, c.winner_id, c.winner_version
                 from step_conflict c
                where c.winner_id is not null
            ),
            excluded_items as (
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
                      ) as items
                 from excluded_rows x
            ),
            -- The source list as the manifest records it: one entry per row version, with the figures it was
            -- scored by (logit, bm25, similarity; absent when it was not scored).
            recorded_sources as (
               select json_arrayagg(
                         json_mergepatch(
                            case
                               when s.retrieved = 1 then
                                  json_object(
                                     'ref' value json_array(s.memory_type, s.id, s.version),
                                     'origin' value s.origin,
                                     'slice' value s.item_slice,
                                     'lexical_rank' value s.lexical_rank,
                                     'vector_rank' value s.vector_rank,
                                     'lexical_score' value s.lexical_score,
                                     'vector_distance' value s.vector_distance,
                                     'fused' value s.fused
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
                               'thread_logit' value p.thread_logit
                               absent on null returning clob
                            )
                            returning clob
                         ) format json
                         order by s.precedence, s.item_slice, s.fused desc nulls last, s.memory_type, s.id, s.version
                         returning clob
                      ) as items
                 from sources s
                 left join step_priority p
                   on p.memory_type = s.memory_type
                  and p.id = s.id
                  and p.version = s.version
            )
            select json_object(
                      'engine' value co_engine,
                      'snapshot' value coalesce(in_snapshot, to_char(l_read_scn)),
                      'tenant_id' value l_tenant_id,
                      'evaluation_time' value ctx_json.iso_utc(in_timestamp => in_evaluation_time),
                      'selection_version' value co_selection_version,
                      'scorer' value l_scorer,
                      'budget' value json_object(
                         'ref' value json_array('guideline', l_budget_id, l_budget_version),
                         'content_json' value l_budget_json format json
                         null on null returning clob
                      ) format json,
                      'fixed' value coalesce((select fi.items from fixed_items fi), to_clob(ctx_json.co_empty_array)) format json,
                      'candidates' value coalesce(
                         (select json_arrayagg(c.candidate format json order by c.slice, c.slice_rank returning clob)
                            from candidates c),
                         to_clob(ctx_json.co_empty_array)
                      ) format json,
                      'required_refs' value coalesce(
                         (select json_arrayagg(
                                    json_array(q.cur_type, q.cur_id, q.cur_version)
                                    order by q.cur_type, q.cur_id, q.cur_version
                                    returning clob
                                 )
                            from required_refs q),
                         to_clob(ctx_json.co_empty_array)
                      ) format json,
                      'candidate_limits' value l_limits_json format json,
                      'candidate_cuts' value coalesce((select cu.items from cuts cu), to_clob(ctx_json.co_empty_array)) format json,
                      'retrieval' value json_object(
                         'method' value l_method,
                         'depth' value co_retrieval_depth,
                         'items' value coalesce((select rs.items from recorded_sources rs), to_clob(ctx_json.co_empty_array))
                                       format json
                         null on null returning clob
                      ) format json,
                      'excluded' value coalesce((select ei.items from excluded_items ei), to_clob(ctx_json.co_empty_array)) format json
                      null on null returning clob
                   )
              into l_result
              from dual;
            exit when l_use_reranker = 0 or l_scores is not null;
            l_scores := reranker_scores(in_question => in_question, in_window => l_result);
            exit when l_scores is null;
         end loop;
      exception
         when e_invalid_scn or e_snapshot_not_found or e_table_changed then
            if in_snapshot is null then
               raise;
            end if;
            ctx_errors.raise_error(
               in_code   => ctx_errors.co_invalid_snapshot,
               in_detail => ctx_errors.quoted(in_text => in_snapshot) || ' is not an SCN Oracle can read: ' || sqlerrm
            );
      end;
      return l_result;
   end select_window;

   -- ------------------------------------------------------------------------------------------------------
   -- record_manifest

   -- a member that must be an array (memories, excluded, required_refs)
   function manifest_array(in_manifest in json_object_t, in_field in varchar2) return json_array_t is
      l_value json_element_t;
   begin
      l_value := in_manifest.get(in_field);
      if l_value is null or not l_value.is_array() then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_manifest, in_detail => in_field || ' must be an array');
      end if;
      return treat(l_value as json_array_t);
   end manifest_array;

   -- One dependency of a manifest, checked as PostgreSQL checks it (an array of a type string, an id string and
   -- a whole number of at most 9 digits; invalid_manifest naming the relation and quoting the reference to 200
   -- characters), appended to io_rows as {"n", "r", "t", "i", "v", "w"} (its number, relation, the reference,
   -- and the version as text for the row's content).
   procedure add_dependency(
      io_rows     in out nocopy json_array_t,
      in_ref      in json_element_t,
      in_relation in varchar2
   ) is
      l_ref     json_array_t;
      l_type    json_element_t;
      l_id      json_element_t;
      l_version varchar2(32767);
      l_quoted  varchar2(32767);
      l_row     json_object_t;
   begin
      if in_ref is not null and in_ref.is_array() then
         l_ref := treat(in_ref as json_array_t);
         if l_ref.get_size() = 3 then
            l_type := l_ref.get(0);
            l_id := l_ref.get(1);
            l_version := ctx_json.element_text(in_ref => l_ref, in_index => 2);
         end if;
      end if;
      if l_type is null or not l_type.is_string() or l_id is null or not l_id.is_string()
         or l_version is null or not regexp_like(l_version, co_version_pattern)
      then
         l_quoted := case when in_ref is null then 'null' else to_char(substr(in_ref.to_clob(), 1, co_max_quote)) end;
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_manifest,
            in_detail => 'a ' || in_relation || ' reference must be [type, id, version], not ' || l_quoted
         );
      end if;
      -- the columns' lengths, checked here because the rows are inserted without CTX_MEMORY
      if length(l_ref.get_string(0)) > co_type_length then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_field,
            in_detail => 'source_ref.source_type: longer than ' || to_char(co_type_length) || ' characters'
         );
      elsif length(l_ref.get_string(1)) > co_id_length then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_field,
            in_detail => 'source_ref.source_id: longer than ' || to_char(co_id_length) || ' characters'
         );
      end if;
      l_row := json_object_t();
      l_row.put('n', io_rows.get_size() + 1);
      l_row.put('r', in_relation);
      l_row.put('t', l_ref.get_string(0));
      l_row.put('i', l_ref.get_string(1));
      l_row.put('v', to_number(l_version));
      l_row.put('w', l_version);
      io_rows.append(l_row);
   end add_dependency;

   -- a scope column of the manifest's event row no longer than the column (64 characters), named as
   -- CTX_MEMORY.put_memory names a field that is too long
   procedure check_scope_length(in_field in varchar2, in_value in varchar2) is
   begin
      if length(in_value) > co_scope_length then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_field,
            in_detail => co_conversation || '.' || in_field || ': longer than ' || to_char(co_scope_length)
                         || ' characters'
         );
      end if;
   end check_scope_length;

   function record_manifest(in_manifest in clob) return varchar2 is
      co_not_object constant varchar2(100) := 'the manifest must be a JSON object';
      l_tenant_id   ctx_tenant.tenant_id%type;
      l_id          conversation_memory.id%type;
      l_element     json_element_t;
      l_manifest    json_object_t;
      l_memories    json_array_t;
      l_excluded    json_array_t;
      l_required    json_array_t;
      l_budget_ref  json_array_t;
      l_scope       json_object_t;
      l_value       json_element_t;
      l_notes       json_array_t;
      l_hash        varchar2(4000);
      l_user_id     varchar2(4000);
      l_agent_id    varchar2(4000);
      l_thread_id   varchar2(4000);
      l_content     varchar2(4000);
      l_rows        json_array_t := json_array_t();
      l_rows_json   clob;
      l_last        pls_integer;
      l_last_note   pls_integer;
   begin
      -- The scope first, as PostgreSQL reads in_manifest -> 'scope' before anything else: a manifest that is
      -- not an object, or has no scope object, has a NULL user and agent, which a claim naming them refuses.
      if in_manifest is not null then
         begin
            l_element := json_element_t.parse(in_manifest);
         exception
            when e_json_syntax then
               l_element := null;
         end;
      end if;
      if l_element is not null and l_element.is_object() then
         l_manifest := treat(l_element as json_object_t);
         l_scope := ctx_json.object_member(in_object => l_manifest, in_key => 'scope');
      end if;
      if l_scope is not null then
         l_user_id := ctx_json.member_text(in_object => l_scope, in_key => 'user_id');
         l_agent_id := ctx_json.member_text(in_object => l_scope, in_key => 'agent_id');
         l_thread_id := ctx_json.member_text(in_object => l_scope, in_key => 'thread_id');
      end if;
      l_tenant_id := ctx_session.require_scope(in_user_id => l_user_id, in_agent_id => l_agent_id);
      l_id := co_manifest_prefix || lower(rawtohex(sys_guid()));
      if l_manifest is null then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_manifest, in_detail => co_not_object);
      end if;
      l_memories := manifest_array(in_manifest => l_manifest, in_field => 'memories');
      l_excluded := manifest_array(in_manifest => l_manifest, in_field => 'excluded');
      l_required := manifest_array(in_manifest => l_manifest, in_field => 'required_refs');
      l_value := l_manifest.get('request_hash');
      if l_value is not null and l_value.is_string() then
         l_hash := substr(l_manifest.get_string('request_hash'), 1, 4000);
      elsif l_value is not null and not l_value.is_null() then
         l_hash := substr(l_value.to_string(), 1, 4000);
      end if;
      if l_hash is null or length(l_hash) <> co_hash_length or not regexp_like(l_hash, co_hash_pattern, co_case_sensitive) then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_manifest, in_detail => 'request_hash must be 64 lower-case hex digits');
      end if;
      l_value := l_manifest.get('budget_ref');
      if l_value is not null and l_value.is_array() then
         l_budget_ref := treat(l_value as json_array_t);
      end if;
      if l_budget_ref is null or l_budget_ref.get_size() <> 3 then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_manifest, in_detail => 'budget_ref must be [type, id, version]');
      end if;

      -- The context_manifest event by one static insert, as PostgreSQL writes it: not through CTX_MEMORY.put_memory,
      -- which would serialize the whole manifest again, parse it again and parse a dynamic statement per call.
      -- Every column is set here, so only the scope's lengths can be wrong: they are checked first and named as
      -- put_memory names them, and the stored text columns are computed as put_memory computes them.
      check_scope_length(in_field => 'user_id', in_value => l_user_id);
      check_scope_length(in_field => 'agent_id', in_value => l_agent_id);
      check_scope_length(in_field => 'thread_id', in_value => l_thread_id);
      l_content := 'context manifest: ' || to_char(l_memories.get_size()) || ' memories rendered, '
                   || to_char(l_excluded.get_size()) || ' excluded, request ' || l_hash;
      insert into conversation_memory (
         tenant_id, id, version, status, user_id, agent_id, thread_id, role, event_type, content, content_json,
         text_key, pointer_text
      ) values (
         l_tenant_id, l_id, 1, co_active, l_user_id, l_agent_id, l_thread_id, co_event_role, co_manifest_event,
         l_content, json(in_manifest), ctx_memory.text_key(in_text => l_content),
         ctx_memory.pointer_line(in_text => l_content)
      );

      -- Every row the window depended on, so retention and erasure can follow the sources, in the order of
      -- PostgreSQL's ctxasm.manifest_refs: 1 rendered, 2 compression, 3 annotation_source (memory order, then
      -- note order), 4 excluded, 5 budget. All are checked first, then written in one statement.
      l_last := l_memories.get_size() - 1;
      for i in 0 .. l_last loop
         add_dependency(io_rows => l_rows, in_ref => ctx_json.member_of(in_value => l_memories.get(i), in_key => 'ref'),
                        in_relation => 'rendered');
      end loop;
      for i in 0 .. l_last loop
         l_value := ctx_json.member_of(in_value => l_memories.get(i), in_key => 'summary_ref');
         if l_value is not null and l_value.is_array() then
            add_dependency(io_rows => l_rows, in_ref => l_value, in_relation => 'compression');
         end if;
      end loop;
      for i in 0 .. l_last loop
         l_value := ctx_json.member_of(in_value => l_memories.get(i), in_key => 'annotation_refs');
         if l_value is not null and not l_value.is_null() then
            if not l_value.is_array() then
               ctx_errors.raise_error(
                  in_code   => ctx_errors.co_invalid_manifest,
                  in_detail => 'memories[' || to_char(i) || '].annotation_refs must be an array'
               );
            end if;
            l_notes := treat(l_value as json_array_t);
            l_last_note := l_notes.get_size() - 1;
            for j in 0 .. l_last_note loop
               add_dependency(io_rows => l_rows, in_ref => ctx_json.member_of(in_value => l_notes.get(j), in_key => 'source'),
                              in_relation => 'annotation_source');
            end loop;
         end if;
      end loop;
      l_last := l_excluded.get_size() - 1;
      for i in 0 .. l_last loop
         add_dependency(io_rows => l_rows, in_ref => ctx_json.member_of(in_value => l_excluded.get(i), in_key => 'ref'),
                        in_relation => 'excluded');
      end loop;
      add_dependency(io_rows => l_rows, in_ref => l_budget_ref, in_relation => 'budget');

      l_rows_json := l_rows.to_clob();
      -- each row carries the manifest's scope, so a session whose claim names a user and agent writes rows it
      -- may write (the scope was checked by require_scope above, the event row by CTX_MEMORY)
      insert into context_source_ref (
         tenant_id, id, version, status, user_id, agent_id, thread_id, derived_type, derived_id, derived_version,
         source_type, source_id, source_version, relation, content
      )
      select l_tenant_id, l_id || ':' || to_char(r.ref_number), 1, co_active, l_user_id, l_agent_id, l_thread_id,
             co_derived_manifest, l_id, 1, r.ref_type, r.ref_id, r.ref_version, r.relation,
             'manifest ' || l_id || ' ' || r.relation || ' ' || r.ref_type || ':' || r.ref_id || '@' || r.version_text
        from json_table(l_rows_json, '$[*]'
                columns (
                   ref_number   number        path '$.n',
                   relation     varchar2(32)  path '$.r',
                   ref_type     varchar2(32)  path '$.t',
                   ref_id       varchar2(128) path '$.i',
                   ref_version  number        path '$.v',
                   version_text varchar2(40)  path '$.w'
                )
             ) r;
      return l_id;
   end record_manifest;

   function read_manifest(in_manifest_id in conversation_memory.id%type) return clob is
      l_tenant_id ctx_tenant.tenant_id%type;
      l_manifest  clob;
   begin
      l_tenant_id := ctx_session.require_tenant();
      select json_serialize(m.content_json returning clob)
        into l_manifest
        from conversation_memory m
       where m.tenant_id = l_tenant_id
         and m.id = in_manifest_id
         and m.event_type = co_manifest_event
         and m.status = 'active';
      return l_manifest;
   exception
      when no_data_found then
         return null;
   end read_manifest;

   function latest_manifest_id(
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type
   ) return varchar2 is
      l_tenant_id ctx_tenant.tenant_id%type;
      l_id        conversation_memory.id%type;
   begin
      l_tenant_id := ctx_session.require_scope(in_user_id => in_user_id, in_agent_id => in_agent_id);
      select m.id
        into l_id
        from conversation_memory m
       where m.tenant_id = l_tenant_id
         and m.event_type = co_manifest_event
         and m.status = 'active'
         and decode(m.user_id, in_user_id, 1, 0) = 1
         and decode(m.agent_id, in_agent_id, 1, 0) = 1
         and decode(m.thread_id, in_thread_id, 1, 0) = 1
       order by m.created_at desc, m.id desc
       fetch first 1 row only;
      return l_id;
   exception
      when no_data_found then
         return null;
   end latest_manifest_id;

   -- ------------------------------------------------------------------------------------------------------
   -- retrieval for one slice (CTX_TOOLS.search_memory): the scope checked here, the work done by CTX_RETRIEVAL

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
   ) return clob is
      l_tenant_id ctx_tenant.tenant_id%type;
   begin
      l_tenant_id := ctx_session.require_scope(in_user_id => in_user_id, in_agent_id => in_agent_id);
      return ctx_retrieval.retrieve_for_question(
         in_tenant_id       => l_tenant_id,
         in_slice           => in_slice,
         in_user_id         => in_user_id,
         in_agent_id        => in_agent_id,
         in_thread_id       => in_thread_id,
         in_evaluation_time => in_evaluation_time,
         in_question        => in_question,
         in_query_embedding => in_query_embedding,
         in_depth           => in_depth,
         in_limit           => in_limit
      );
   end retrieve_for_question;
end ctx_assembly;
/
