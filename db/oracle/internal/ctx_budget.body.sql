--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-budget-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_budget is
   -- PostgreSQL: db/postgresql/internal/ctx_budget.sql (budget_in_effect, budget_weight, candidate_limits).

   -- the dynamic slices, whose candidates the limits count
   co_facts    constant varchar2(32) := ctx_rules.co_facts;
   co_evidence constant varchar2(32) := ctx_rules.co_evidence;
   co_history  constant varchar2(32) := ctx_rules.co_history;
   co_tail     constant varchar2(32) := ctx_rules.co_tail;
   co_dynamic_slices constant varchar2(100) := 'durable_facts, evidence, recalled_history, volatile_tail';
   -- candidate limits: 1.25 times the records of 25 tokens (a recalled turn with its line, the smallest record) a
   -- slice's share would hold, 10..1000, so a large budget can fill (the budget's candidate_limits overrides it,
   -- 1..1000)
   co_candidate_factor     constant number := 1.25;
   co_tokens_per_candidate constant pls_integer := 25;
   co_min_candidates       constant pls_integer := 10;
   co_max_candidates       constant pls_integer := 1000;
   co_max_limit            constant pls_integer := 1000;
   -- characters of a caller's text quoted in a message
   co_max_quote            constant pls_integer := 200;

   -- The budget fields the database uses, checked; the Python layer validates the rest.
   procedure check_fields(io_budget in out nocopy t_budget, in_intent in varchar2) is
      l_element json_element_t;
      l_weights json_object_t;
      l_shares  json_object_t;
   begin
      if io_budget.content_json is not null and to_char(substr(io_budget.content_json, 1, 1)) = '{' then
         l_element := json_element_t.parse(io_budget.content_json);
      end if;
      if l_element is null or not l_element.is_object() then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_budget,
            in_detail => io_budget.name || ': content_json must be a JSON object'
         );
      end if;
      io_budget.content := treat(l_element as json_object_t);
      l_weights := ctx_json.object_member(in_object => io_budget.content, in_key => 'weights');
      io_budget.w_rerank := budget_weight(in_budget_name => io_budget.name, in_weights => l_weights, in_field => 'rerank');
      io_budget.w_confidence := budget_weight(in_budget_name => io_budget.name, in_weights => l_weights,
                                              in_field => 'confidence');
      io_budget.w_recency := budget_weight(in_budget_name => io_budget.name, in_weights => l_weights,
                                           in_field => 'recency');
      io_budget.recency_days := ctx_json.number_member(in_object => io_budget.content, in_key => 'recency_days');
      if io_budget.recency_days is null or io_budget.recency_days <= 0 then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_budget,
            in_detail => io_budget.name || ': recency_days must be a number > 0'
         );
      end if;
      l_shares := ctx_json.object_member(in_object => io_budget.content, in_key => 'shares');
      -- as in PostgreSQL, where `shares ? NULL` is NULL: a NULL intent is not rejected here
      if l_shares is null or (in_intent is not null and not l_shares.has(in_intent)) then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_unknown_intent,
            in_detail => ctx_errors.quoted(in_text => in_intent) || ' is not one of the intents of budget ' || io_budget.id
                         || ' version ' || to_char(io_budget.version) || ' ('
                         || coalesce(case when l_shares is not null then ctx_json.listed_keys(in_object => l_shares) end, 'none')
                         || ')'
         );
      end if;
      l_element := io_budget.content.get('require_current_facts');
      if l_element is null then
         io_budget.require_facts := 1;
      elsif l_element.is_boolean() then
         io_budget.require_facts := case when io_budget.content.get_boolean('require_current_facts') then 1 else 0 end;
      else
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_budget,
            in_detail => io_budget.name || ': require_current_facts must be true or false'
         );
      end if;
   end check_fields;

   function budget_in_effect(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_intent          in varchar2,
      in_evaluation_time in timestamp with time zone,
      in_snapshot_scn    in number,
      in_read_scn        in number
   ) return t_budget is
      l_budget t_budget;
      l_count  pls_integer := 0;
      l_user   guideline_memory.user_id%type;
      l_agent  guideline_memory.agent_id%type;
      l_thread guideline_memory.thread_id%type;
   begin
      for r_budget in (
            select g.id, g.version, g.content_json, g.user_id, g.agent_id, g.thread_id
              from (
                      select r.id, r.version, r.user_id, r.agent_id, r.thread_id, r.valid_from, r.valid_until,
                             r.deleted_at, r.guideline_key, json_serialize(r.content_json returning clob) as content_json
                        from guideline_memory r
                       where r.tenant_id = in_tenant_id
                         and in_snapshot_scn is null
                      union all
                      select r.id, r.version, r.user_id, r.agent_id, r.thread_id, r.valid_from, r.valid_until,
                             r.deleted_at, r.guideline_key, json_serialize(r.content_json returning clob)
                        from guideline_memory as of scn in_read_scn r
                       where r.tenant_id = in_tenant_id
                         and in_snapshot_scn is not null
                         -- a budget erased since the SCN is not returned (select_window's erased_now)
                         and not exists (select 1
                                           from guideline_memory n
                                          where n.tenant_id = r.tenant_id and n.id = r.id
                                            and n.version = r.version and n.status = 'erased')
                   ) g
             where g.guideline_key = co_budget_key
               and (g.user_id is null or g.user_id = in_user_id)
               and (g.agent_id is null or g.agent_id = in_agent_id)
               and (g.thread_id is null or g.thread_id = in_thread_id)
               and g.deleted_at is null
               and g.valid_from <= in_evaluation_time
               and (g.valid_until is null or g.valid_until > in_evaluation_time)
             order by ctx_rules.scope_level(in_user_id => g.user_id, in_agent_id => g.agent_id,
                                               in_thread_id => g.thread_id) desc,
                      g.valid_from desc,
                      g.id
             fetch first 2 rows only
      ) loop
         l_count := l_count + 1;
         if l_count = 1 then
            l_budget.id := r_budget.id;
            l_budget.version := r_budget.version;
            l_budget.content_json := r_budget.content_json;
            l_user := r_budget.user_id;
            l_agent := r_budget.agent_id;
            l_thread := r_budget.thread_id;
         elsif l_count = 2
               and (r_budget.user_id = l_user or (r_budget.user_id is null and l_user is null))
               and (r_budget.agent_id = l_agent or (r_budget.agent_id is null and l_agent is null))
               and (r_budget.thread_id = l_thread or (r_budget.thread_id is null and l_thread is null))
         then
            -- two of the winning scope in effect at once would be picked by an arbitrary tie-break
            ctx_errors.raise_error(
               in_code   => ctx_errors.co_invalid_budget,
               in_detail => 'two context_budget guidelines of one scope ('
                            || coalesce(ltrim(case when l_user is not null then ', user ' || l_user end
                                              || case when l_agent is not null then ', agent ' || l_agent end
                                              || case when l_thread is not null then ', thread ' || l_thread end,
                                              ', '),
                                        'tenant-wide')
                            || ') are in effect at once: guideline ' || l_budget.id || ' version '
                            || to_char(l_budget.version) || ' and guideline ' || r_budget.id || ' version '
                            || to_char(r_budget.version)
            );
         end if;
      end loop;
      if l_count = 0 then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_budget_missing,
            in_detail => 'no context_budget guideline is in effect for agent ' || ctx_errors.quoted(in_text => in_agent_id)
                         || ' at ' || ctx_json.message_time(in_timestamp => in_evaluation_time)
         );
      end if;
      l_budget.name := 'guideline ' || l_budget.id || ' version ' || to_char(l_budget.version);
      check_fields(io_budget => l_budget, in_intent => in_intent);
      return l_budget;
   end budget_in_effect;

   -- weights.<in_field> must be a number >= 0
   function budget_weight(
      in_budget_name in varchar2,
      in_weights     in json_object_t,
      in_field       in varchar2
   ) return number is
      l_value  json_element_t;
      l_weight number;
   begin
      if in_weights is not null then
         l_value := in_weights.get(in_field);
      end if;
      if l_value is not null and l_value.is_number() then
         l_weight := in_weights.get_number(in_field);
      end if;
      if l_weight is null or l_weight < 0 then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_budget,
            in_detail => in_budget_name || ': weights.' || in_field || ' must be a number >= 0'
         );
      end if;
      return l_weight;
   end budget_weight;

   -- the spec says what: the budget's candidate_limits, checked, else a share of what the reserves leave
   function candidate_limits(in_budget_name in varchar2, in_budget in json_object_t, in_intent in varchar2)
      return json_object_t is
      l_element   json_element_t;
      l_given     json_object_t;
      l_shares    json_object_t;
      l_keys      ctx_json.t_key_tab;
      l_key       varchar2(32767);
      l_value     json_element_t;
      l_number    number;
      l_available number;
      l_slices    ctx_json.t_text_tab := ctx_json.t_text_tab(co_facts, co_evidence, co_history, co_tail);
      l_slice     varchar2(32);
      l_limits    json_object_t := json_object_t();
   begin
      l_element := in_budget.get('candidate_limits');
      if l_element is not null and not l_element.is_object() then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_budget,
            in_detail => in_budget_name || ': candidate_limits must be an object of slice -> count'
         );
      end if;
      l_given := ctx_json.object_member(in_object => in_budget, in_key => 'candidate_limits');
      if l_given is not null then
         l_keys := ctx_json.sorted_keys(in_object => l_given, in_by_length => true);
         for i in 1 .. l_keys.count loop
            l_key := l_keys(i);
            l_value := l_given.get(l_key);
            l_number := case when l_value.is_number() then l_given.get_number(l_key) end;
            if not ctx_json.is_listed(in_list => l_slices, in_text => l_key)
               or l_number is null or l_number <> trunc(l_number) or l_number not between 1 and co_max_limit
            then
               ctx_errors.raise_error(
                  in_code   => ctx_errors.co_invalid_budget,
                  in_detail => in_budget_name || ': candidate_limits.' || substr(l_key, 1, co_max_quote)
                               || ' must be a whole number 1..' || to_char(co_max_limit) || ' for one of the slices '
                               || co_dynamic_slices
               );
            end if;
         end loop;
      end if;
      l_available := greatest(
         0,
         coalesce(ctx_json.number_member(in_object => in_budget, in_key => 'usable_context'), 0)
         - coalesce(ctx_json.number_member(in_object => in_budget, in_key => 'output_reserve'), 0)
         - coalesce(ctx_json.number_member(in_object => in_budget, in_key => 'tool_reserve'), 0)
         - coalesce(ctx_json.number_member(in_object => in_budget, in_key => 'request_overhead_reserve'), 0)
      );
      if in_intent is not null then
         l_shares := ctx_json.object_member(in_object => ctx_json.object_member(in_object => in_budget, in_key => 'shares'),
                                   in_key => in_intent);
      end if;
      for i in 1 .. l_slices.count loop
         l_slice := l_slices(i);
         l_number := ctx_json.number_member(in_object => l_given, in_key => l_slice);
         if l_number is null then
            l_number := least(
               co_max_candidates,
               greatest(
                  co_min_candidates,
                  ceil(co_candidate_factor * l_available
                       * coalesce(ctx_json.number_member(in_object => l_shares, in_key => l_slice), 0)
                       / co_tokens_per_candidate)
               )
            );
         end if;
         l_limits.put(l_slice, l_number);
      end loop;
      return l_limits;
   end candidate_limits;end ctx_budget;
/
