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
   co_selection_version constant varchar2(30) := 'selection-38fc3c3beba4';
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
   co_hash_pattern     constant varchar2(30) := '^[0123456789abcdef]{64}$';
   co_version_pattern  constant varchar2(30) := ctx_json.co_version_pattern;
   co_hash_length      constant pls_integer := 64;
   co_case_sensitive   constant varchar2(1) := 'c';
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
                                                    in_snapshot_scn => in_snapshot_scn, in_read_scn => in_read_scn);
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
               in_recency_days    => l_budget.recency_days
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
