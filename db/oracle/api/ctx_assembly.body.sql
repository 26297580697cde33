--liquibase formatted sql logicalFilePath:db/packages/oracle/body/0060_ctx_assembly.sql

--changeset ctxasm:ora-pkg-0060-ctx-assembly-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_assembly is
   -- The twin of db/postgresql/api/ctx_assembly.sql: its public routines in the same order. select_window is the
   -- orchestrator: the steps are CTX_SELECTION's, under the same names as PostgreSQL's. The engine-internal
   -- functions live where PostgreSQL keeps theirs, one package per file of the same name: CTX_RULES
   -- (internal/ctx_rules.sql: scope level, hybrid logit, claim key, authority), CTX_RETRIEVAL
   -- (internal/ctx_retrieval.sql), CTX_SOURCES (internal/ctx_sources.sql: the sources and the rows they name),
   -- CTX_BUDGET (internal/ctx_budget.sql), CTX_SELECTION (internal/ctx_selection.sql);
   -- JSON values are read, and timestamps and vector text written and checked, through CTX_JSON (what
   -- PostgreSQL's jsonb operators and text casts give). docs/oracle-assembly.md maps each step. Every statement
   -- is static, every value a bind, every table named in the code, with one exception here: PREDICTION names
   -- its model in the SQL text, so that call is dynamic (reranker_scores) and the package compiles and runs
   -- without the model.
   -- Every read names the tenant. The live tables are read as they are; only a replay (in_snapshot) reads the
   -- rows AS OF the recorded SCN (CTX_SOURCES.rows_as_of), and the budget and the compressions through the
   -- second branch of their queries, which a NULL snapshot switches off (a filter on a bind, decided before the
   -- branch runs).

   co_engine            constant varchar2(30) := 'oracle';
   -- generated (contract/selection.toml): a digest of the selection code of this engine
   co_selection_version constant varchar2(30) := 'selection-76a17e71c912';
   co_hybrid_scorer     constant varchar2(30) := 'hybrid-calibrated-2';
   co_external_scorer   constant varchar2(30) := 'external';
   co_recorded_scorer   constant varchar2(30) := 'recorded';
   -- the in-database ONNX cross-encoder (a regression model: PREDICTION gives the raw logit) and its scorer name
   co_reranker_model    constant varchar2(30) := 'BGE_RERANKER';
   co_reranker_scorer   constant varchar2(64) := 'bge-reranker:oracle:BGE_RERANKER';
   -- characters; bounds the work one call can ask for
   co_max_question      constant pls_integer := 8000;
   -- entries of in_sources and of in_scores (replay inputs)
   co_max_replay_items  constant pls_integer := 10000;

   co_snapshot_pattern constant varchar2(30) := '^[0123456789]{1,38}$';
   co_dimensions       constant pls_integer := 384;

   -- the places the reranker's logits are rounded to, as every score
   co_score_places     constant pls_integer := ctx_rules.co_score_places;

   -- the slices
   co_facts      constant varchar2(32) := ctx_rules.co_facts;
   co_evidence   constant varchar2(32) := ctx_rules.co_evidence;
   co_history    constant varchar2(32) := ctx_rules.co_history;
   co_tail       constant varchar2(32) := ctx_rules.co_tail;

   -- retrieval: rows each retriever ranks at least (the document's retrieval.depth; CTX_SOURCES the same)
   co_retrieval_depth  constant pls_integer := 50;
   co_method_recorded  constant varchar2(40) := 'recorded';
   co_method_lexical   constant varchar2(40) := ctx_retrieval.co_method_lexical;
   co_method_hybrid    constant varchar2(40) := ctx_retrieval.co_method_hybrid;

   -- the characters of a caller's text quoted in an error message
   co_max_quote        constant pls_integer := 200;

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
   -- select_window: the document

   -- The selection document select_window returns (docs/assembly.md): the same fields, in the same order, as
   -- PostgreSQL's.
   function window_document(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_snapshot        in varchar2,
      in_snapshot_scn    in number,
      in_read_scn        in number,
      in_evaluation_time in timestamp with time zone,
      in_scorer          in varchar2,
      in_budget          in ctx_budget.t_budget,
      in_limits          in clob,
      in_method          in varchar2,
      in_fixed           in clob,
      in_excluded        in clob,
      in_sources         in ctx_selection_candidates,
      in_rows            in ctx_selection_candidates
   ) return clob is
      l_budget_id      guideline_memory.id%type := in_budget.id;
      l_budget_version guideline_memory.version%type := in_budget.version;
      l_budget_json    clob := in_budget.content_json;
      l_candidates     clob;
      l_required       clob;
      l_cuts           clob;
      l_recorded       clob;
      l_result         clob;
   begin
      l_candidates := ctx_selection.candidate_items(in_rows => in_rows, in_tenant_id => in_tenant_id,
                                                    in_snapshot_scn => in_snapshot_scn, in_read_scn => in_read_scn,
                                                    in_evaluation_time => in_evaluation_time);
      l_required := ctx_selection.required_refs(in_rows => in_rows);
      l_cuts := ctx_selection.candidate_cuts(in_rows => in_rows);
      l_recorded := ctx_selection.recorded_sources(in_rows => in_rows, in_sources => in_sources);
      select json_object(
                'engine' value co_engine,
                'snapshot' value in_snapshot,
                'tenant_id' value in_tenant_id,
                'evaluation_time' value ctx_json.iso_utc(in_timestamp => in_evaluation_time),
                'selection_version' value co_selection_version,
                'scorer' value in_scorer,
                'budget' value json_object(
                   'ref' value json_array('guideline', l_budget_id, l_budget_version),
                   'content_json' value l_budget_json format json
                   null on null returning clob
                ) format json,
                'fixed' value in_fixed format json,
                'candidates' value l_candidates format json,
                'required_refs' value l_required format json,
                'candidate_limits' value in_limits format json,
                'candidate_cuts' value l_cuts format json,
                'retrieval' value json_object(
                   'method' value in_method,
                   'depth' value co_retrieval_depth,
                   'items' value l_recorded format json
                   null on null returning clob
                ) format json,
                'excluded' value in_excluded format json
                null on null returning clob
             )
        into l_result
        from dual;
      return l_result;
   end window_document;

   -- ------------------------------------------------------------------------------------------------------
   -- select_window: the orchestrator. Arguments, budget, sources, the rows they name, the steps of
   -- CTX_SELECTION in rule order, the document.

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
      l_tenant_id    ctx_tenant.tenant_id%type;
      l_snapshot_scn number;
      l_read_scn     number;
      l_scores       clob;
      l_sources      clob;
      l_text_scores  clob;
      l_query_vector clob;
      l_method       varchar2(40);
      l_scorer       varchar2(64);
      l_use_reranker pls_integer := 0;
      l_use_sources  pls_integer := 0;
      l_scoring      pls_integer := 0;
      l_budget       ctx_budget.t_budget;
      l_limits       json_object_t;
      l_source_rows  ctx_selection_candidates;
      l_rows         ctx_selection_candidates;
      l_scored       ctx_selection_candidates;
      l_fixed        clob;
      l_excluded     clob;
      l_result       clob;
      l_present      pls_integer := 0;
      l_question_words clob;
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
      -- The question's words, in which score_step looks for the speakers' names.
      l_question_words := ctx_rules.question_words(in_text => in_question);
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
         -- with the fields the database uses, checked; then the candidate limits (CTX_BUDGET).
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
         l_limits := ctx_budget.candidate_limits(in_budget_name => l_budget.name, in_budget => l_budget.content,
                                                 in_intent => in_intent);

         -- Step: sources. Live: enumerated and retrieved (CTX_SOURCES.window_sources). Replay: exactly the sources
         -- the manifest recorded. Then the rows they name, by primary key, live or AS OF the recorded SCN (CTX_SOURCES).
         if in_sources is null then
            l_sources := ctx_sources.window_sources(
               in_tenant_id       => l_tenant_id,
               in_user_id         => in_user_id,
               in_agent_id        => in_agent_id,
               in_thread_id       => in_thread_id,
               in_evaluation_time => in_evaluation_time,
               in_question        => in_question,
               in_query_vector    => l_query_vector,
               in_limits          => l_limits,
               out_text_scores    => l_text_scores
            );
            l_method := case when l_query_vector is null then co_method_lexical else co_method_hybrid end;
         else
            l_method := co_method_recorded;
         end if;
         l_text_scores := coalesce(l_text_scores, to_clob(ctx_json.co_empty_array));
         l_source_rows := ctx_sources.merged_sources(in_sources => l_sources);
         if l_snapshot_scn is null then
            l_rows := ctx_sources.live_rows(in_tenant_id => l_tenant_id, in_sources => l_source_rows,
                                            in_query_vector => l_query_vector, in_scoring => l_scoring);
         else
            l_rows := ctx_sources.rows_as_of(in_tenant_id => l_tenant_id, in_sources => l_source_rows,
                                             in_read_scn => l_read_scn, in_query_vector => l_query_vector,
                                             in_scoring => l_scoring);
         end if;

         -- Steps scope .. required (CTX_SELECTION): they do not depend on the scores, so they run once.
         l_rows := ctx_selection.scope_step(in_rows => l_rows, in_user_id => in_user_id, in_agent_id => in_agent_id,
                                            in_thread_id => in_thread_id);
         l_rows := ctx_selection.lifecycle_step(in_rows => l_rows, in_evaluation_time => in_evaluation_time);
         l_rows := ctx_selection.dedup_step(in_rows => l_rows);
         l_rows := ctx_selection.conflict_step(in_rows => l_rows);
         l_rows := ctx_selection.required_step(in_rows => l_rows, in_require => l_budget.require_facts);
         l_fixed := ctx_selection.fixed_items(in_rows => l_rows);
         l_excluded := ctx_selection.exclusions(in_rows => l_rows);

         -- Steps score .. limit and the document. With the in-database cross-encoder they run twice: once with
         -- the hybrid logits, then with the model's logits for exactly the candidates of the first run
         -- (reranker_scores), as if they had been passed as in_scores (PostgreSQL: the assembler's second
         -- select_window with in_scores and in_sources).
         loop
            l_scored := ctx_selection.score_step(
               in_rows            => l_rows,
               in_sources         => l_source_rows,
               in_scores          => l_scores,
               in_text_scores     => l_text_scores,
               in_scoring         => l_scoring,
               in_use_sources     => l_use_sources,
               in_evaluation_time => in_evaluation_time,
               in_recency_days    => l_budget.recency_days,
               in_question_words  => l_question_words
            );
            l_scored := ctx_selection.priority_step(
               in_rows         => l_scored,
               in_w_rerank     => l_budget.w_rerank,
               in_w_confidence => l_budget.w_confidence,
               in_w_recency    => l_budget.w_recency,
               in_present      => l_present
            );
            l_scored := ctx_selection.tie_break_step(in_rows => l_scored);
            l_scored := ctx_selection.limit_step(in_rows => l_scored, in_limits => l_limits);
            l_result := window_document(
               in_tenant_id       => l_tenant_id,
               in_snapshot        => coalesce(in_snapshot, to_char(l_read_scn)),
               in_snapshot_scn    => l_snapshot_scn,
               in_read_scn        => l_read_scn,
               in_evaluation_time => in_evaluation_time,
               in_scorer          => l_scorer,
               in_budget          => l_budget,
               in_limits          => l_limits.to_clob(),
               in_method          => l_method,
               in_fixed           => l_fixed,
               in_excluded        => l_excluded,
               in_sources         => l_source_rows,
               in_rows            => l_scored
            );
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
   -- the manifest: how it is stored and read is CTX_MANIFEST_STORE's (internal/ctx_manifest_store.*), outside
   -- this body, whose text is part of the selection version; these are its public names

   function record_manifest(in_manifest in clob) return varchar2 is
   begin
      return ctx_manifest_store.record_manifest(in_manifest => in_manifest);
   end record_manifest;

   function read_manifest(in_manifest_id in conversation_memory.id%type) return clob is
   begin
      return ctx_manifest_store.read_manifest(in_manifest_id => in_manifest_id);
   end read_manifest;

   function latest_manifest_id(
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type
   ) return varchar2 is
   begin
      return ctx_manifest_store.latest_manifest_id(
         in_user_id   => in_user_id,
         in_agent_id  => in_agent_id,
         in_thread_id => in_thread_id
      );
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
