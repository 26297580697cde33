--liquibase formatted sql

-- utPLSQL v3 suite for CTX_ASSEMBLY: the selection of select_window (lifecycle, supersede -> current fact
-- plus labelled history, the exclusion rules, tenant isolation, errors, the budget and conflicts by scope
-- containment, candidate limits and their cuts, the claim's winner in annotations, replay from the recorded
-- sources), record_manifest (one statement for every dependency, each checked first; its bounds) and the stored
-- text columns. It mirrors the conformance scenarios 02-05, 20, 30 and 31 (db/tests/scenarios) with its own small
-- fixtures. Deployed only by liquibase/changelog-utplsql.yaml, after the main changelog.
--
-- Transactions: retrieval reads Oracle Text indexes that sync on commit, and a replay reads AS OF SCN, which
-- sees committed rows only, so the fixture is committed in seed_fixture and the suite is --%rollback(manual).
-- Each tenant's rows are committed while that tenant is set: Oracle Text syncs a CONTEXT index on commit under
-- the committing session's VPD context (docs/oracle.md). purge_fixture removes the fixture tenants and
-- everything under them (CTX_ADMIN.purge_tenant) and commits; undo_uncommitted rolls back what each test left
-- uncommitted (record_manifest's rows). snapshot_replays_the_past and text_index_sees_each_tenant commit rows
-- of their own (ut_f_replay, ut_text_*), so the other tests do not depend on the order they run in.
--
-- sqlfluff 4.5 (the parse gate) cannot parse a method call on a call result, so the chained form
-- ut.expect(x).to_equal(y) is written as l_expect := ut.expect(x); l_expect.to_equal(y); (same matcher,
-- same report line).

--changeset ctxasm:ora-test-0020-01-test-ctx-assembly-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package test_ctx_assembly authid definer is
   --%suite(CTX_ASSEMBLY: select_window and record_manifest)
   --%suitepath(ctxasm.oracle)
   --%rollback(manual)

   co_tenant        constant varchar2(64) := 'ut-assembly';
   co_other_tenant  constant varchar2(64) := 'ut-assembly-other';
   co_empty_tenant  constant varchar2(64) := 'ut-assembly-empty';
   co_limits_tenant constant varchar2(64) := 'ut-assembly-limits';
   co_claims_tenant constant varchar2(64) := 'ut-assembly-claims';

   --%beforeall
   procedure seed_fixture;

   --%afterall
   procedure purge_fixture;

   --%aftereach
   procedure undo_uncommitted;

   --%test(the window names the engine, the tenant, a numeric SCN and the scorer)
   procedure window_has_its_header;

   --%test(supersede: version 2 is the current fact, required, and version 1 is excluded as superseded)
   procedure superseded_fact_gives_way;

   --%test(the summary that cited version 1 stays as historical, annotated with version 2)
   procedure history_is_labelled;

   --%test(before the correction, version 1 is the fact and version 2 is not yet effective)
   procedure earlier_time_sees_version_one;

   --%test(lifecycle: expired, not yet effective and deleted rows are excluded, each with its reason)
   procedure lifecycle_rules_exclude;

   --%test(another tenant's rows are neither candidates nor exclusions)
   procedure other_tenant_is_invisible;

   --%test(a recorded SCN selects what was committed then, not a later supersede)
   procedure snapshot_replays_the_past;

   --%test(select_window without a session tenant raises tenant_not_set)
   --%throws(ctx_errors.e_tenant_not_set)
   procedure window_needs_a_tenant;

   --%test(select_window for a tenant with no context_budget raises budget_missing)
   --%throws(ctx_errors.e_budget_missing)
   procedure window_needs_a_budget;

   --%test(select_window for an intent the budget has no share for raises unknown_intent)
   --%throws(ctx_errors.e_unknown_intent)
   procedure window_rejects_unknown_intent;

   --%test(select_window with an empty question raises invalid_question)
   --%throws(ctx_errors.e_invalid_question)
   procedure window_rejects_empty_question;

   --%test(select_window with a snapshot that is not an SCN raises invalid_snapshot)
   --%throws(ctx_errors.e_invalid_snapshot)
   procedure window_rejects_bad_snapshot;

   --%test(record_manifest writes one context_manifest event and one source ref per dependency)
   procedure manifest_is_recorded;

   --%test(record_manifest with a request_hash that is not 64 hex digits raises invalid_manifest)
   --%throws(ctx_errors.e_invalid_manifest)
   procedure manifest_needs_a_request_hash;

   --%test(the stored text columns: text_key and pointer_text written with each version, over texts of any length)
   procedure text_columns_are_stored;

   --%test(selection_version names the rules this deployment runs, and the window carries it)
   procedure selection_version_is_named;

   --%test(the narrowest budget by containment wins: the thread's budget over the user's and agent's)
   procedure budget_narrowest_by_containment;

   --%test(candidate limits: the budget's limit keeps one durable fact and records the cut once per slice)
   procedure candidate_limit_cuts_are_recorded;

   --%test(a candidate limit outside 1..1000 raises invalid_budget naming candidate_limits.<slice>)
   procedure candidate_limit_is_checked;

   --%test(two budgets of one scope in effect at once raise invalid_budget naming both)
   procedure two_budgets_of_one_scope;

   --%test(conflict by containment: the thread's fact beats the user's own fact of the same claim)
   procedure conflict_narrowest_by_containment;

   --%test(a summary citing a superseded fact names the claim's winner, another row, which becomes required)
   procedure annotation_names_the_claim_winner;

   --%test(replay with the recorded sources selects the same candidates and names the scorer recorded)
   procedure recorded_sources_replay;

   --%test(record_manifest writes every dependency in one statement, numbered 1..n without a gap)
   procedure manifest_refs_are_set_based;

   --%test(record_manifest checks every reference before it writes one, naming the relation)
   procedure manifest_refs_are_checked_first;

   --%test(Oracle Text indexes each tenant's documents when each tenant commits its own rows)
   procedure text_index_sees_each_tenant;

   --%test(select_window with a question longer than 8000 characters raises invalid_question)
   --%throws(ctx_errors.e_invalid_question)
   procedure window_rejects_long_question;

   --%test(select_window for a user the session's claim does not name raises scope_not_allowed)
   --%throws(ctx_errors.e_scope_not_allowed)
   procedure window_outside_the_claim_scope;

   --%test(record_manifest under a claim for one user and agent writes every source ref with that user and agent)
   procedure manifest_refs_carry_the_claim_scope;

   --%test(record_manifest whose scope names another user than the claim raises scope_not_allowed)
   --%throws(ctx_errors.e_scope_not_allowed)
   procedure manifest_outside_the_claim_scope;

   --%test(record_manifest refuses a manifest longer than a stored JSON field, 2000000 characters, naming its size)
   procedure manifest_longer_than_a_json_field;

   --%test(record_manifest refuses more than 20000 dependency references before it writes one)
   procedure manifest_with_too_many_references;
end test_ctx_assembly;
/

--changeset ctxasm:ora-test-0020-02-test-ctx-assembly-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body test_ctx_assembly is
   co_question constant varchar2(200) := 'What is the BEIR score of Helios-RAG?';
   co_after    constant varchar2(40) := '2026-09-28 12:00:00 +00:00';
   co_before   constant varchar2(40) := '2026-08-01 12:00:00 +00:00';
   co_tz_mask  constant varchar2(40) := 'YYYY-MM-DD HH24:MI:SS TZH:TZM';
   co_hash     constant varchar2(64) := '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef';

   function at_time(in_text in varchar2) return timestamp with time zone is
   begin
      return to_timestamp_tz(in_text, co_tz_mask);
   end at_time;

   -- The budget of scenario 05 (shares for fact_check and comparison only) as content_json; in_limits adds
   -- candidate_limits.
   function budget_content(in_limits in varchar2 default null) return varchar2 is
   begin
      return '{"usable_context": 5000, "output_reserve": 400, "tool_reserve": 1000, '
             || '"request_overhead_reserve": 500, "max_rounds": 3, "max_tool_result_tokens": 1000, '
             || '"weights": {"rerank": 0.6, "confidence": 0.25, "recency": 0.15}, "recency_days": 60, '
             || '"shares": {"fact_check": {"durable_facts": 0.4, "evidence": 0.25, "recalled_history": 0.1, '
             || '"volatile_tail": 0.25}, "comparison": {"durable_facts": 0.15, "evidence": 0.6, '
             || '"recalled_history": 0.05, "volatile_tail": 0.2}}, '
             || '"overflow_order": ["evidence", "durable_facts", "volatile_tail", "recalled_history"]'
             || case when in_limits is not null then ', "candidate_limits": ' || in_limits end
             || '}';
   end budget_content;

   -- A context_budget guideline: in_scope holds its scope members ('"agent_id": "research-assistant"').
   function budget_json(
      in_id     in varchar2 default 'ut_budget',
      in_scope  in varchar2 default '"agent_id": "research-assistant"',
      in_from   in varchar2 default '2026-01-01T00:00:00Z',
      in_limits in varchar2 default null
   ) return clob is
   begin
      return '{"id": "' || in_id || '", "guideline_key": "context_budget", ' || in_scope || ', '
             || '"valid_from": "' || in_from || '", "content": "Context budget for the research assistant.", '
             || '"content_json": ' || budget_content(in_limits => in_limits) || '}';
   end budget_json;

   function fact_json(in_id in varchar2, in_predicate in varchar2, in_from in varchar2, in_content in varchar2,
                      in_until in varchar2 default null, in_subject in varchar2 default 'model:helios-rag',
                      in_user_id in varchar2 default null, in_agent_id in varchar2 default null,
                      in_thread_id in varchar2 default null, in_confidence in number default 0.9) return clob is
      l_record json_object_t := json_object_t();
   begin
      l_record.put('id', in_id);
      l_record.put('subject', in_subject);
      l_record.put('predicate', in_predicate);
      l_record.put('confidence', in_confidence);
      l_record.put('valid_from', in_from);
      if in_until is not null then
         l_record.put('valid_until', in_until);
      end if;
      if in_user_id is not null then
         l_record.put('user_id', in_user_id);
      end if;
      if in_agent_id is not null then
         l_record.put('agent_id', in_agent_id);
      end if;
      if in_thread_id is not null then
         l_record.put('thread_id', in_thread_id);
      end if;
      l_record.put('content', in_content);
      return l_record.to_clob();
   end fact_json;

   -- select_window for Jane's research thread (or another thread of hers).
   function window_at(in_time in varchar2, in_intent in varchar2 default 'fact_check',
                      in_question in varchar2 default co_question, in_snapshot in varchar2 default null,
                      in_thread in varchar2 default 'thread_main', in_sources in clob default null)
      return clob is
   begin
      return ctx_assembly.select_window(
                in_user_id         => 'jane',
                in_agent_id        => 'research-assistant',
                in_thread_id       => in_thread,
                in_intent          => in_intent,
                in_evaluation_time => at_time(in_time),
                in_question        => to_clob(in_question),
                in_snapshot        => in_snapshot,
                in_sources         => in_sources
             );
   end window_at;

   -- The message of the invalid_budget error (-20112) the limits tenant's window in a thread raises; NULL
   -- when the window assembles. Any other error is raised.
   function budget_error_in(in_thread in varchar2) return varchar2 is
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_limits_tenant));
      l_window := window_at(co_after, in_thread => in_thread);
      return null;
   exception
      when others then
         if sqlcode <> -20112 then
            raise;
         end if;
         return sqlerrm;
   end budget_error_in;

   -- 'status:required' of a candidate, NULL when the row is no candidate.
   function candidate_of(in_window in clob, in_type in varchar2, in_id in varchar2, in_version in number)
      return varchar2 is
      l_found varchar2(100);
   begin
      select max(c.status || ':' || c.required)
        into l_found
        from json_table(in_window, '$.candidates[*]'
                columns (
                   ref_type    varchar2(32)  path '$.ref[0]',
                   ref_id      varchar2(128) path '$.ref[1]',
                   ref_version number        path '$.ref[2]',
                   status      varchar2(16)  path '$.status',
                   required    varchar2(8)   path '$.required'
                )
             ) c
       where c.ref_type = in_type and c.ref_id = in_id and c.ref_version = in_version;
      return l_found;
   end candidate_of;

   -- 'rule:detail' of an excluded row, NULL when the row is not excluded.
   function exclusion_of(in_window in clob, in_type in varchar2, in_id in varchar2, in_version in number)
      return varchar2 is
      l_found varchar2(1100);
   begin
      select max(x.rule_name || ':' || x.detail)
        into l_found
        from json_table(in_window, '$.excluded[*]'
                columns (
                   ref_type    varchar2(32)   path '$.ref[0]',
                   ref_id      varchar2(128)  path '$.ref[1]',
                   ref_version number         path '$.ref[2]',
                   rule_name   varchar2(16)   path '$.rule',
                   detail      varchar2(1000) path '$.detail'
                )
             ) x
       where x.ref_type = in_type and x.ref_id = in_id and x.ref_version = in_version;
      return l_found;
   end exclusion_of;

   -- The current version a candidate's annotations point at, as 'type:id:version'.
   function annotation_of(in_window in clob, in_type in varchar2, in_id in varchar2, in_version in number)
      return varchar2 is
      l_current varchar2(300);
   begin
      select max(a.cur_type || ':' || a.cur_id || ':' || a.cur_version)
        into l_current
        from json_table(in_window, '$.candidates[*]'
                columns (
                   ref_type    varchar2(32)  path '$.ref[0]',
                   ref_id      varchar2(128) path '$.ref[1]',
                   ref_version number        path '$.ref[2]',
                   nested path '$.annotations[*]'
                      columns (
                         cur_type    varchar2(32)  path '$.current[0]',
                         cur_id      varchar2(128) path '$.current[1]',
                         cur_version number        path '$.current[2]'
                      )
                )
             ) a
       where a.ref_type = in_type and a.ref_id = in_id and a.ref_version = in_version;
      return l_current;
   end annotation_of;

   -- The required refs, as 'type:id:version' joined by ','.
   function required_of(in_window in clob) return varchar2 is
      l_refs varchar2(4000);
   begin
      select listagg(r.ref_type || ':' || r.ref_id || ':' || r.ref_version, ',')
                within group (order by r.ref_type, r.ref_id, r.ref_version)
        into l_refs
        from json_table(in_window, '$.required_refs[*]'
                columns (
                   ref_type    varchar2(32)  path '$[0]',
                   ref_id      varchar2(128) path '$[1]',
                   ref_version number        path '$[2]'
                )
             ) r;
      return l_refs;
   end required_of;

   -- 'rule:type:id:version' of the row an excluded row gave way to, NULL when none.
   function kept_of(in_window in clob, in_type in varchar2, in_id in varchar2, in_version in number)
      return varchar2 is
      l_kept varchar2(400);
   begin
      select max(x.rule_name || ':' || x.kept_type || ':' || x.kept_id || ':' || x.kept_version)
        into l_kept
        from json_table(in_window, '$.excluded[*]'
                columns (
                   ref_type     varchar2(32)  path '$.ref[0]',
                   ref_id       varchar2(128) path '$.ref[1]',
                   ref_version  number        path '$.ref[2]',
                   rule_name    varchar2(16)  path '$.rule',
                   kept_type    varchar2(32)  path '$.kept[0]',
                   kept_id      varchar2(128) path '$.kept[1]',
                   kept_version number        path '$.kept[2]'
                )
             ) x
       where x.ref_type = in_type and x.ref_id = in_id and x.ref_version = in_version;
      return l_kept;
   end kept_of;

   -- The candidates of one slice (all slices for NULL) as 'type:id:version' joined by ',', in selection order.
   function candidates_of(in_window in clob, in_slice in varchar2 default null) return varchar2 is
      l_refs varchar2(32767);
   begin
      select listagg(c.ref_type || ':' || c.ref_id || ':' || c.ref_version, ',')
                within group (order by c.slice_name, c.selection_rank)
        into l_refs
        from json_table(in_window, '$.candidates[*]'
                columns (
                   ref_type       varchar2(32)  path '$.ref[0]',
                   ref_id         varchar2(128) path '$.ref[1]',
                   ref_version    number        path '$.ref[2]',
                   slice_name     varchar2(32)  path '$.slice',
                   selection_rank number        path '$.selection_rank'
                )
             ) c
       where in_slice is null or c.slice_name = in_slice;
      return l_refs;
   end candidates_of;

   -- How often an id occurs as a candidate or an exclusion.
   function mentions_of(in_window in clob, in_id in varchar2) return number is
      l_count number;
   begin
      select count(*)
        into l_count
        from (
           select c.ref_id
             from json_table(in_window, '$.candidates[*]' columns (ref_id varchar2(128) path '$.ref[1]')) c
           union all
           select x.ref_id
             from json_table(in_window, '$.excluded[*]' columns (ref_id varchar2(128) path '$.ref[1]')) x
        ) m
       where m.ref_id = in_id;
      return l_count;
   end mentions_of;

   -- How often search_memory's result lists an id.
   function hits_of(in_result in clob, in_id in varchar2) return number is
      l_count number;
   begin
      select count(*)
        into l_count
        from json_table(in_result, '$.items[*]' columns (ref_id varchar2(128) path '$.ref[1]')) h
       where h.ref_id = in_id;
      return l_count;
   end hits_of;

   -- search_memory for the session's tenant, lexical unless the schema has the embedding model.
   function search(in_query in varchar2) return clob is
   begin
      return ctx_tools.search_memory(
                in_user_id         => null,
                in_agent_id        => null,
                in_thread_id       => null,
                in_evaluation_time => systimestamp,
                in_query           => to_clob(in_query),
                in_query_embedding => null,
                in_limit           => 5
             );
   end search;

   procedure seed_fixture is
      l_id      varchar2(128);
      l_version number;
   begin
      -- first remove what an interrupted earlier run left behind
      purge_fixture;
      ctx_admin.register_tenant(in_tenant_id => co_tenant, in_display_name => 'utPLSQL assembly tenant');
      ctx_admin.register_tenant(in_tenant_id => co_other_tenant, in_display_name => 'utPLSQL other tenant');
      ctx_admin.register_tenant(in_tenant_id => co_empty_tenant, in_display_name => 'utPLSQL tenant, no budget');
      ctx_admin.register_tenant(in_tenant_id => co_limits_tenant, in_display_name => 'utPLSQL candidate limits');
      ctx_admin.register_tenant(in_tenant_id => co_claims_tenant, in_display_name => 'utPLSQL claims by containment');

      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_id := ctx_memory.put_memory(in_memory_type => 'guideline', in_record => budget_json());
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'persona',
                 in_record      => '{"id": "ut_persona", "persona_key": "research_assistant", '
                                   || '"agent_id": "research-assistant", "valid_from": "2026-01-01T00:00:00Z", '
                                   || '"content": "You are a careful research assistant."}'
              );
      -- the worked example: version 1 (0.92) superseded by version 2 (0.78) on 17 August
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_f_helios', 'beir_ndcg10', '2026-05-01T00:00:00Z',
                                             'Helios-RAG scores 0.92 nDCG@10 on BEIR.')
              );
      l_version := ctx_memory.supersede(
                      in_memory_type => 'entity',
                      in_id          => 'ut_f_helios',
                      in_record      => '{"valid_from": "2026-08-17T00:00:00Z", "confidence": 0.78, '
                                        || '"content": "Helios-RAG scores 0.78 nDCG@10 on BEIR (corrected)."}'
                   );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'summary',
                 in_record      => '{"id": "ut_s_july", "user_id": "jane", "agent_id": "research-assistant", '
                                   || '"valid_from": "2026-07-31T00:00:00Z", '
                                   || '"content": "In July the team preferred Helios-RAG for its 0.92 BEIR score.", '
                                   || '"source_refs": [{"type": "entity", "id": "ut_f_helios", "version": 1}]}'
              );
      -- one row per lifecycle reason
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_f_expired', 'latency_ms', '2026-02-01T00:00:00Z',
                                             'Helios-RAG answers in 900 ms.', '2026-09-01T00:00:00Z')
              );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_f_future', 'license', '2026-12-01T00:00:00Z',
                                             'Helios-RAG will be relicensed in December.')
              );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_f_deleted', 'owner', '2026-03-01T00:00:00Z',
                                             'Helios-RAG is maintained by the search team.')
              );
      ctx_memory.delete_memory(in_memory_type => 'entity', in_id => 'ut_f_deleted',
                               in_deleted_at => at_time('2026-09-01 00:00:00 +00:00'));
      -- superseded by snapshot_replays_the_past only, so the other tests do not depend on test order
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_f_replay', 'latency_p50', '2026-04-01T00:00:00Z',
                                             'Helios-RAG answers in 400 ms at the median.')
              );
      -- one tenant's rows per commit (Oracle Text syncs on commit under the session's VPD context)
      commit;

      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_other_tenant));
      l_id := ctx_memory.put_memory(in_memory_type => 'guideline', in_record => budget_json());
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_f_other_tenant', 'beir_ndcg10', '2026-05-01T00:00:00Z',
                                             'Helios-RAG scores 0.99 nDCG@10 on BEIR (another tenant).')
              );
      commit;

      -- Budgets by containment: the user's and agent's budget names two scope columns, the thread's one; the
      -- thread's is narrower and limits the durable facts to one candidate. Three facts of three claims.
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_limits_tenant));
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'guideline',
                 in_record      => budget_json(in_id => 'ut_budget_user',
                                               in_scope => '"user_id": "jane", "agent_id": "research-assistant"')
              );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'guideline',
                 in_record      => budget_json(in_id => 'ut_budget_thread', in_scope => '"thread_id": "thread_limits"',
                                               in_from => '2025-12-01T00:00:00Z', in_limits => '{"durable_facts": 1}')
              );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'guideline',
                 in_record      => budget_json(in_id => 'ut_budget_bad', in_scope => '"thread_id": "thread_bad_limits"',
                                               in_from => '2025-12-01T00:00:00Z', in_limits => '{"evidence": 0}')
              );
      -- two budgets of one thread, both in effect: neither may be picked silently
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'guideline',
                 in_record      => budget_json(in_id => 'ut_budget_twin_a', in_scope => '"thread_id": "thread_twins"',
                                               in_from => '2025-12-01T00:00:00Z')
              );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'guideline',
                 in_record      => budget_json(in_id => 'ut_budget_twin_b', in_scope => '"thread_id": "thread_twins"',
                                               in_from => '2025-11-01T00:00:00Z')
              );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_l_one', 'beir_ndcg10', '2026-09-01T00:00:00Z',
                                             'Helios-RAG scores 0.78 nDCG@10 on BEIR.', in_confidence => 0.9)
              );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_l_two', 'beir_recall100', '2026-09-01T00:00:00Z',
                                             'Helios-RAG reaches 0.91 recall@100 on BEIR.', in_confidence => 0.8)
              );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_l_three', 'latency_ms', '2026-09-01T00:00:00Z',
                                             'Helios-RAG answers a BEIR query in 120 ms.', in_confidence => 0.7)
              );
      commit;

      -- Scenarios 30 and 31: a thread's fact against the user's own fact of a claim, and a summary citing a
      -- superseded tenant-wide fact whose claim a narrower fact of Jane's now wins.
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_claims_tenant));
      l_id := ctx_memory.put_memory(in_memory_type => 'guideline', in_record => budget_json());
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_c_user', 'beir_ndcg10', '2026-09-10T00:00:00Z',
                                             'Orion scores 0.78 nDCG@10 on BEIR.', in_subject => 'model:orion',
                                             in_user_id => 'jane', in_agent_id => 'research-assistant')
              );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_c_thread', 'beir_ndcg10', '2026-09-01T00:00:00Z',
                                             'In this thread Orion is measured on the BEIR subset only: 0.74 nDCG@10.',
                                             in_subject => 'model:orion', in_thread_id => 'thread_main')
              );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_c_tenant', 'beir_ndcg10', '2026-05-01T00:00:00Z',
                                             'Helios-RAG scores 0.92 nDCG@10 on BEIR.')
              );
      l_version := ctx_memory.supersede(
                      in_memory_type => 'entity',
                      in_id          => 'ut_c_tenant',
                      in_record      => '{"valid_from": "2026-08-17T00:00:00Z", "confidence": 0.78, '
                                        || '"content": "Helios-RAG scores 0.78 nDCG@10 on BEIR (corrected)."}'
                   );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => fact_json('ut_c_jane', 'beir_ndcg10', '2026-09-01T00:00:00Z',
                                             'On Jane''s own BEIR rerun Helios-RAG scores 0.77 nDCG@10.',
                                             in_user_id => 'jane', in_confidence => 0.85)
              );
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'summary',
                 in_record      => '{"id": "ut_c_july", "user_id": "jane", "agent_id": "research-assistant", '
                                   || '"valid_from": "2026-07-31T00:00:00Z", '
                                   || '"content": "In July the team preferred Helios-RAG for its 0.92 BEIR score.", '
                                   || '"source_refs": [{"type": "entity", "id": "ut_c_tenant", "version": 1}]}'
              );
      commit;
      ctx_session.clear_tenant;
   end seed_fixture;

   procedure purge_fixture is
      l_removed number;
   begin
      rollback;
      l_removed := ctx_admin.purge_tenant(in_tenant_id => co_tenant);
      l_removed := ctx_admin.purge_tenant(in_tenant_id => co_other_tenant);
      l_removed := ctx_admin.purge_tenant(in_tenant_id => co_empty_tenant);
      l_removed := ctx_admin.purge_tenant(in_tenant_id => co_limits_tenant);
      l_removed := ctx_admin.purge_tenant(in_tenant_id => co_claims_tenant);
      ctx_session.clear_tenant;
      commit;
   end purge_fixture;

   -- What a test wrote and did not commit (a --%throws test stops half way) goes, and so does its tenant.
   procedure undo_uncommitted is
   begin
      rollback;
      ctx_session.clear_tenant;
   end undo_uncommitted;

   procedure window_has_its_header is
      l_expect   ut_expectation;
      l_window   clob;
      l_engine   varchar2(32);
      l_tenant   varchar2(64);
      l_snapshot varchar2(64);
      l_scorer   varchar2(200);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_after);
      select json_value(l_window, '$.engine'), json_value(l_window, '$.tenant_id'),
             json_value(l_window, '$.snapshot'), json_value(l_window, '$.scorer')
        into l_engine, l_tenant, l_snapshot, l_scorer
        from dual;
      l_expect := ut.expect(l_engine);
      l_expect.to_equal('oracle');
      l_expect := ut.expect(l_tenant);
      l_expect.to_equal(co_tenant);
      l_expect := ut.expect(l_snapshot);
      l_expect.to_match('^[0-9]+$');
      -- hybrid-calibrated-2, or bge-reranker:oracle:BGE_RERANKER when the ONNX model is loaded
      l_expect := ut.expect(l_scorer);
      l_expect.to_be_not_null();
   end window_has_its_header;

   procedure superseded_fact_gives_way is
      l_expect ut_expectation;
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_after);
      l_expect := ut.expect(candidate_of(l_window, 'entity', 'ut_f_helios', 2));
      l_expect.to_equal('current:true');
      l_expect := ut.expect(candidate_of(l_window, 'entity', 'ut_f_helios', 1));
      l_expect.to_be_null();
      l_expect := ut.expect(exclusion_of(l_window, 'entity', 'ut_f_helios', 1));
      l_expect.to_equal('lifecycle:superseded');
      l_expect := ut.expect(required_of(l_window));
      l_expect.to_equal('entity:ut_f_helios:2');
   end superseded_fact_gives_way;

   procedure history_is_labelled is
      l_expect ut_expectation;
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_after);
      l_expect := ut.expect(candidate_of(l_window, 'summary', 'ut_s_july', 1));
      l_expect.to_equal('historical:false');
      l_expect := ut.expect(annotation_of(l_window, 'summary', 'ut_s_july', 1));
      l_expect.to_equal('entity:ut_f_helios:2');
   end history_is_labelled;

   procedure earlier_time_sees_version_one is
      l_expect ut_expectation;
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_before);
      l_expect := ut.expect(candidate_of(l_window, 'entity', 'ut_f_helios', 1));
      l_expect.to_equal('current:false');
      l_expect := ut.expect(exclusion_of(l_window, 'entity', 'ut_f_helios', 2));
      l_expect.to_equal('lifecycle:not_yet_effective');
      l_expect := ut.expect(required_of(l_window));
      l_expect.to_be_null();
   end earlier_time_sees_version_one;

   procedure lifecycle_rules_exclude is
      l_expect ut_expectation;
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_after);
      l_expect := ut.expect(exclusion_of(l_window, 'entity', 'ut_f_expired', 1));
      l_expect.to_equal('lifecycle:expired');
      l_expect := ut.expect(exclusion_of(l_window, 'entity', 'ut_f_future', 1));
      l_expect.to_equal('lifecycle:not_yet_effective');
      l_expect := ut.expect(exclusion_of(l_window, 'entity', 'ut_f_deleted', 1));
      l_expect.to_equal('lifecycle:deleted');
   end lifecycle_rules_exclude;

   procedure other_tenant_is_invisible is
      l_expect ut_expectation;
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_after);
      l_expect := ut.expect(mentions_of(l_window, 'ut_f_other_tenant'));
      l_expect.to_equal(0);
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_other_tenant));
      l_window := window_at(co_after);
      l_expect := ut.expect(mentions_of(l_window, 'ut_f_other_tenant'));
      l_expect.to_equal(1);
      l_expect := ut.expect(mentions_of(l_window, 'ut_f_helios'));
      l_expect.to_equal(0);
   end other_tenant_is_invisible;

   procedure snapshot_replays_the_past is
      l_expect   ut_expectation;
      l_window   clob;
      l_snapshot varchar2(64);
      l_version  number;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_after);
      select json_value(l_window, '$.snapshot') into l_snapshot from dual;
      l_version := ctx_memory.supersede(
                      in_memory_type => 'entity',
                      in_id          => 'ut_f_replay',
                      in_record      => '{"valid_from": "2026-09-20T00:00:00Z", '
                                        || '"content": "Helios-RAG answers in 350 ms at the median (re-run)."}'
                   );
      commit;
      -- the tenant ends with the transaction: set it again for the next one
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_expect := ut.expect(l_version);
      l_expect.to_equal(2);
      -- now: version 2 is the fact and version 1 is excluded as superseded
      l_window := window_at(co_after);
      l_expect := ut.expect(candidate_of(l_window, 'entity', 'ut_f_replay', 2));
      l_expect.to_equal('current:false');
      l_expect := ut.expect(exclusion_of(l_window, 'entity', 'ut_f_replay', 1));
      l_expect.to_equal('lifecycle:superseded');
      -- at the recorded SCN: version 1 is still the fact and version 2 does not exist yet
      l_window := window_at(co_after, in_snapshot => l_snapshot);
      l_expect := ut.expect(candidate_of(l_window, 'entity', 'ut_f_replay', 1));
      l_expect.to_equal('current:false');
      l_expect := ut.expect(mentions_of(l_window, 'ut_f_replay'));
      l_expect.to_equal(1);
   end snapshot_replays_the_past;

   procedure window_needs_a_tenant is
      l_window clob;
   begin
      ctx_session.clear_tenant;
      l_window := window_at(co_after);
   end window_needs_a_tenant;

   procedure window_needs_a_budget is
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_empty_tenant));
      l_window := window_at(co_after);
   end window_needs_a_budget;

   procedure window_rejects_unknown_intent is
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_after, in_intent => 'small_talk');
   end window_rejects_unknown_intent;

   procedure window_rejects_empty_question is
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_after, in_question => ' ');
   end window_rejects_empty_question;

   procedure window_rejects_bad_snapshot is
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_after, in_snapshot => 'yesterday');
   end window_rejects_bad_snapshot;

   procedure manifest_is_recorded is
      l_expect   ut_expectation;
      l_manifest varchar2(4000);
      l_id       varchar2(128);
      l_events   number;
      l_refs     varchar2(4000);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_manifest := '{"mode": "live", "request_hash": "' || co_hash || '", '
                    || '"scope": {"user_id": "jane", "agent_id": "research-assistant", "thread_id": "thread_main"}, '
                    || '"budget_ref": ["guideline", "ut_budget", 1], '
                    || '"memories": [{"ref": ["entity", "ut_f_helios", 2]}, '
                    || '{"ref": ["summary", "ut_s_july", 1], '
                    || '"annotation_refs": [{"source": ["entity", "ut_f_helios", 1]}]}], '
                    || '"excluded": [{"ref": ["entity", "ut_f_expired", 1], "rule": "lifecycle"}], '
                    || '"required_refs": [["entity", "ut_f_helios", 2]]}';
      l_id := ctx_assembly.record_manifest(in_manifest => to_clob(l_manifest));
      l_expect := ut.expect(l_id);
      l_expect.to_match('^manifest_[0-9a-f]{32}$');
      select count(*) into l_events from conversation_memory m
       where m.id = l_id and m.event_type = 'context_manifest' and m.role = 'event';
      l_expect := ut.expect(l_events);
      l_expect.to_equal(1);
      -- rendered (2), annotation_source (1), excluded (1), budget (1), in that order
      select listagg(r.relation || '=' || r.source_type || ':' || r.source_id || ':' || r.source_version, ',')
                within group (order by to_number(substr(r.id, instr(r.id, ':', -1) + 1)))
        into l_refs
        from context_source_ref r
       where r.derived_id = l_id;
      l_expect := ut.expect(l_refs);
      l_expect.to_equal('rendered=entity:ut_f_helios:2,rendered=summary:ut_s_july:1,'
                        || 'annotation_source=entity:ut_f_helios:1,excluded=entity:ut_f_expired:1,'
                        || 'budget=guideline:ut_budget:1');
   end manifest_is_recorded;

   procedure manifest_needs_a_request_hash is
      l_id varchar2(128);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_id := ctx_assembly.record_manifest(
                 in_manifest => to_clob('{"request_hash": "not-a-hash", "budget_ref": ["guideline", "ut_budget", 1], '
                                        || '"memories": [], "excluded": [], "required_refs": []}')
              );
   end manifest_needs_a_request_hash;

   procedure text_columns_are_stored is
      l_expect  ut_expectation;
      l_text    clob;
      l_key_one varchar2(32);
      l_key_two varchar2(32);
      l_pointer varchar2(64);
   begin
      -- 32,000 + 9,000 characters of filler before the words: past what TRANSLATE converts in PL/SQL
      l_text := to_clob(rpad('Filler ', 32000, 'Filler '));
      l_text := l_text || to_clob(rpad(' ', 9000, ' ')) || to_clob('ZEBRA Quantum');
      -- md5 of 'filler filler ... fil zebra quantum' (ASCII folded, white space runs one space), as PostgreSQL's
      -- md5(ctxasm.normalized_text(...)) gives it
      l_expect := ut.expect(ctx_memory.text_key(in_text => l_text));
      l_expect.to_equal('e2c41b56e6ebf97905523e9d66ba0149');
      l_expect := ut.expect(ctx_memory.pointer_line(in_text => l_text));
      l_expect.to_equal('Filler Filler Filler Filler Filler Filler Filler Filler...');
      l_expect := ut.expect(ctx_memory.text_key(in_text => to_clob('   ')));
      l_expect.to_equal('d41d8cd98f00b204e9800998ecf8427e');
      -- written with each version: supersede brings the new text's columns
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      select max(case when e.version = 1 then e.text_key end), max(case when e.version = 2 then e.text_key end),
             max(case when e.version = 2 then e.pointer_text end)
        into l_key_one, l_key_two, l_pointer
        from entity_memory e
       where e.tenant_id = co_tenant and e.id = 'ut_f_helios';
      l_expect := ut.expect(l_key_one);
      l_expect.to_equal('e134c02ba5bb4760ab0369f66b22fc2d');
      l_expect := ut.expect(l_key_two);
      l_expect.to_equal('c9697e25f6f92551ef4aedb1a09afaca');
      l_expect := ut.expect(l_pointer);
      l_expect.to_equal('Helios-RAG scores 0.78 nDCG@10 on BEIR (corrected).');
   end text_columns_are_stored;

   procedure selection_version_is_named is
      l_expect  ut_expectation;
      l_window  clob;
      l_version varchar2(64);
   begin
      l_expect := ut.expect(ctx_assembly.selection_version());
      -- a digest of the selection code (contract/selection.toml), written by the generator
      l_expect.to_match('^selection-[0-9a-f]{12}$');
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_after);
      select json_value(l_window, '$.selection_version') into l_version from dual;
      l_expect := ut.expect(l_version);
      l_expect.to_equal(ctx_assembly.selection_version());
   end selection_version_is_named;

   procedure budget_narrowest_by_containment is
      l_expect ut_expectation;
      l_window clob;
      l_budget varchar2(128);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_limits_tenant));
      -- thread_limits: the thread's budget (one scope column, level 3) over the user's and agent's (two, level 2)
      l_window := window_at(co_after, in_thread => 'thread_limits');
      select json_value(l_window, '$.budget.ref[1]') into l_budget from dual;
      l_expect := ut.expect(l_budget);
      l_expect.to_equal('ut_budget_thread');
      -- another thread of Jane's has no budget of its own: the user's and agent's applies
      l_window := window_at(co_after, in_thread => 'thread_other');
      select json_value(l_window, '$.budget.ref[1]') into l_budget from dual;
      l_expect := ut.expect(l_budget);
      l_expect.to_equal('ut_budget_user');
   end budget_narrowest_by_containment;

   procedure candidate_limit_cuts_are_recorded is
      l_expect   ut_expectation;
      l_window   clob;
      l_facts    varchar2(4000);
      l_limit    varchar2(40);
      l_evidence varchar2(40);
      l_cuts     varchar2(4000);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_limits_tenant));
      l_window := window_at(co_after, in_thread => 'thread_limits');
      select json_value(l_window, '$.candidate_limits.durable_facts'),
             json_value(l_window, '$.candidate_limits.evidence')
        into l_limit, l_evidence
        from dual;
      l_expect := ut.expect(l_limit);
      l_expect.to_equal('1');
      -- the default for a slice the budget gives no limit: ceil(1.25 * (5000 - 1900) * 0.25 / 25) = 39
      l_expect := ut.expect(l_evidence);
      l_expect.to_equal('39');
      -- the fact that shares most of the question's words stays (relevance decides; it is also the most
      -- confident, which only breaks near-ties); the two others are cut, recorded once for the slice
      l_facts := candidates_of(l_window, 'durable_facts');
      l_expect := ut.expect(l_facts);
      l_expect.to_equal('entity:ut_l_one:1');
      select listagg(c.slice_name || ':' || c.rule_name || ':' || c.slice_limit || ':' || c.cut_rows, ',')
                within group (order by c.slice_name)
        into l_cuts
        from json_table(l_window, '$.candidate_cuts[*]'
                columns (
                   slice_name     varchar2(32) path '$.slice',
                   rule_name      varchar2(32) path '$.rule',
                   slice_limit    number       path '$.limit',
                   cut_rows       number       path '$.rows',
                   below_priority number       path '$.below_priority'
                )
             ) c;
      l_expect := ut.expect(l_cuts);
      l_expect.to_equal('durable_facts:candidate_limit:1:2');
   end candidate_limit_cuts_are_recorded;

   procedure candidate_limit_is_checked is
      l_expect ut_expectation;
   begin
      l_expect := ut.expect(budget_error_in(in_thread => 'thread_bad_limits'));
      l_expect.to_match('candidate_limits\.evidence must be a whole number 1\.\.1000');
   end candidate_limit_is_checked;

   procedure two_budgets_of_one_scope is
      l_expect ut_expectation;
   begin
      l_expect := ut.expect(budget_error_in(in_thread => 'thread_twins'));
      l_expect.to_match('two context_budget guidelines of one scope \(thread thread_twins\) are in effect at once: '
                        || 'guideline ut_budget_twin_a version 1 and guideline ut_budget_twin_b version 1');
   end two_budgets_of_one_scope;

   procedure conflict_narrowest_by_containment is
      l_expect ut_expectation;
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_claims_tenant));
      l_window := window_at(co_after);
      l_expect := ut.expect(candidate_of(l_window, 'entity', 'ut_c_thread', 1));
      l_expect.to_equal('current:false');
      l_expect := ut.expect(kept_of(l_window, 'entity', 'ut_c_user', 1));
      l_expect.to_equal('conflict:entity:ut_c_thread:1');
   end conflict_narrowest_by_containment;

   procedure annotation_names_the_claim_winner is
      l_expect ut_expectation;
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_claims_tenant));
      l_window := window_at(co_after);
      l_expect := ut.expect(candidate_of(l_window, 'summary', 'ut_c_july', 1));
      l_expect.to_equal('historical:false');
      l_expect := ut.expect(annotation_of(l_window, 'summary', 'ut_c_july', 1));
      l_expect.to_equal('entity:ut_c_jane:1');
      l_expect := ut.expect(required_of(l_window));
      l_expect.to_equal('entity:ut_c_jane:1');
      l_expect := ut.expect(candidate_of(l_window, 'entity', 'ut_c_jane', 1));
      l_expect.to_equal('current:true');
      l_expect := ut.expect(exclusion_of(l_window, 'entity', 'ut_c_tenant', 1));
      l_expect.to_equal('lifecycle:superseded');
      l_expect := ut.expect(kept_of(l_window, 'entity', 'ut_c_tenant', 2));
      l_expect.to_equal('conflict:entity:ut_c_jane:1');
   end annotation_names_the_claim_winner;

   procedure recorded_sources_replay is
      l_expect   ut_expectation;
      l_live     clob;
      l_replay   clob;
      l_snapshot varchar2(64);
      l_items    clob;
      l_scorer   varchar2(64);
      l_method   varchar2(64);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_claims_tenant));
      l_live := window_at(co_after);
      select json_value(l_live, '$.snapshot'), json_query(l_live, '$.retrieval.items' returning clob)
        into l_snapshot, l_items
        from dual;
      l_replay := window_at(co_after, in_snapshot => l_snapshot, in_sources => l_items);
      l_expect := ut.expect(candidates_of(l_replay));
      l_expect.to_equal(candidates_of(l_live));
      l_expect := ut.expect(required_of(l_replay));
      l_expect.to_equal(required_of(l_live));
      select json_value(l_replay, '$.scorer'), json_value(l_replay, '$.retrieval.method')
        into l_scorer, l_method
        from dual;
      l_expect := ut.expect(l_scorer);
      l_expect.to_equal('recorded');
      l_expect := ut.expect(l_method);
      l_expect.to_equal('recorded');
   end recorded_sources_replay;

   procedure manifest_refs_are_set_based is
      co_excluded constant pls_integer := 250;
      l_expect   ut_expectation;
      l_manifest json_object_t := json_object_t();
      l_scope    json_object_t := json_object_t();
      l_memories json_array_t := json_array_t();
      l_excluded json_array_t := json_array_t();
      l_entry    json_object_t;
      l_ref      json_array_t;
      l_id       varchar2(128);
      l_rows     number;
      l_first    number;
      l_last     number;
      l_numbers  number;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_ref := json_array_t();
      l_ref.append('entity');
      l_ref.append('ut_f_helios');
      l_ref.append(2);
      l_entry := json_object_t();
      l_entry.put('ref', l_ref);
      l_memories.append(l_entry);
      for i in 1 .. co_excluded loop
         l_ref := json_array_t();
         l_ref.append('kb_chunk');
         l_ref.append('ut_chunk_' || to_char(i));
         l_ref.append(1);
         l_entry := json_object_t();
         l_entry.put('ref', l_ref);
         l_entry.put('rule', 'slice_budget');
         l_excluded.append(l_entry);
      end loop;
      l_ref := json_array_t();
      l_ref.append('guideline');
      l_ref.append('ut_budget');
      l_ref.append(1);
      l_scope.put('user_id', 'jane');
      l_scope.put('thread_id', 'thread_main');
      l_manifest.put('request_hash', co_hash);
      l_manifest.put('scope', l_scope);
      l_manifest.put('budget_ref', l_ref);
      l_manifest.put('memories', l_memories);
      l_manifest.put('excluded', l_excluded);
      l_manifest.put('required_refs', json_array_t());
      l_id := ctx_assembly.record_manifest(in_manifest => l_manifest.to_clob());
      select count(*), min(to_number(substr(r.id, instr(r.id, ':', -1) + 1))),
             max(to_number(substr(r.id, instr(r.id, ':', -1) + 1))),
             count(distinct r.id)
        into l_rows, l_first, l_last, l_numbers
        from context_source_ref r
       where r.tenant_id = co_tenant and r.derived_type = 'manifest' and r.derived_id = l_id;
      -- rendered (1), excluded (250), budget (1)
      l_expect := ut.expect(l_rows);
      l_expect.to_equal(co_excluded + 2);
      l_expect := ut.expect(l_first);
      l_expect.to_equal(1);
      l_expect := ut.expect(l_last);
      l_expect.to_equal(co_excluded + 2);
      l_expect := ut.expect(l_numbers);
      l_expect.to_equal(co_excluded + 2);
   end manifest_refs_are_set_based;

   procedure manifest_refs_are_checked_first is
      l_expect  ut_expectation;
      l_before  number;
      l_after   number;
      l_id      varchar2(128);
      l_message varchar2(4000);
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      select count(*) into l_before from context_source_ref r where r.tenant_id = co_tenant;
      begin
         l_id := ctx_assembly.record_manifest(
                    in_manifest => to_clob('{"request_hash": "' || co_hash || '", '
                                           || '"budget_ref": ["guideline", "ut_budget", 1], '
                                           || '"memories": [{"ref": ["entity", "ut_f_helios", 2]}], '
                                           || '"excluded": [{"ref": ["entity", 5, 1], "rule": "lifecycle"}], '
                                           || '"required_refs": []}')
                 );
      exception
         when others then
            if sqlcode <> -20114 then
               raise;
            end if;
            l_message := sqlerrm;
      end;
      l_expect := ut.expect(l_message);
      l_expect.to_match('a excluded reference must be \[type, id, version\], not \["entity",5,1\]');
      -- the valid rendered reference before it was not written either
      select count(*) into l_after from context_source_ref r where r.tenant_id = co_tenant;
      l_expect := ut.expect(l_after);
      l_expect.to_equal(l_before);
   end manifest_refs_are_checked_first;

   procedure text_index_sees_each_tenant is
      l_expect  ut_expectation;
      l_id      varchar2(128);
      l_pending number;
      l_result  clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'kb_document',
                 in_record      => '{"id": "ut_text_a", "title": "Tenant A notes", '
                                   || '"content": "Xylophonic resonance measured by tenant A."}'
              );
      commit;
      -- the tenant ends with the transaction: set it again for the next one
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_other_tenant));
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'kb_document',
                 in_record      => '{"id": "ut_text_b", "title": "Tenant B notes", '
                                   || '"content": "Xylophonic resonance measured by tenant B."}'
              );
      commit;
      -- the tenant ends with the transaction: set it again for the next one
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_other_tenant));
      select count(*)
        into l_pending
        from ctx_user_pending p
       where p.pnd_index_name in ('KNOWLEDGE_BASE_DOCUMENT_TEXT_IX', 'KNOWLEDGE_BASE_CHUNK_TEXT_IX',
                                  'ENTITY_MEMORY_TEXT_IX', 'WORKFLOW_MEMORY_TEXT_IX', 'CONVERSATION_MEMORY_TEXT_IX',
                                  'SUMMARIZATION_MEMORY_TEXT_IX');
      l_expect := ut.expect(l_pending);
      l_expect.to_equal(0);
      l_result := search('xylophonic resonance');
      l_expect := ut.expect(hits_of(l_result, 'ut_text_b'));
      l_expect.to_equal(1);
      l_expect := ut.expect(hits_of(l_result, 'ut_text_a'));
      l_expect.to_equal(0);
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_result := search('xylophonic resonance');
      l_expect := ut.expect(hits_of(l_result, 'ut_text_a'));
      l_expect.to_equal(1);
   end text_index_sees_each_tenant;

   procedure window_rejects_long_question is
      l_window clob;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_window := window_at(co_after, in_question => rpad('Which retriever scores best on BEIR? ', 8001, 'x'));
   end window_rejects_long_question;

   procedure window_outside_the_claim_scope is
      l_window clob;
   begin
      -- the claim names another user; window_at asks for jane
      ctx_session.set_tenant(
         in_claim => test_claims.claim_for(in_tenant_id => co_tenant, in_user_id => 'bob',
                                           in_agent_id => 'research-assistant')
      );
      l_window := window_at(co_after);
   end window_outside_the_claim_scope;

   -- a small manifest of one rendered memory and the budget, for the given scope
   function scoped_manifest(in_user_id in varchar2, in_agent_id in varchar2) return clob is
   begin
      return to_clob('{"request_hash": "' || co_hash || '", '
                     || '"scope": {"user_id": "' || in_user_id || '", "agent_id": "' || in_agent_id || '", '
                     || '"thread_id": "thread_main"}, '
                     || '"budget_ref": ["guideline", "ut_budget", 1], '
                     || '"memories": [{"ref": ["entity", "ut_f_helios", 2]}], '
                     || '"excluded": [], "required_refs": []}');
   end scoped_manifest;

   procedure manifest_refs_carry_the_claim_scope is
      l_expect ut_expectation;
      l_id     varchar2(128);
      l_rows   number;
      l_scoped number;
   begin
      ctx_session.set_tenant(
         in_claim => test_claims.claim_for(in_tenant_id => co_tenant, in_user_id => 'jane',
                                           in_agent_id => 'research-assistant')
      );
      l_id := ctx_assembly.record_manifest(in_manifest => scoped_manifest('jane', 'research-assistant'));
      select count(*),
             count(case when r.user_id = 'jane' and r.agent_id = 'research-assistant'
                         and r.thread_id = 'thread_main' then 1 end)
        into l_rows, l_scoped
        from context_source_ref r
       where r.tenant_id = co_tenant and r.derived_type = 'manifest' and r.derived_id = l_id;
      -- rendered (1) and budget (1), both in the manifest's scope
      l_expect := ut.expect(l_rows);
      l_expect.to_equal(2);
      l_expect := ut.expect(l_scoped);
      l_expect.to_equal(2);
   end manifest_refs_carry_the_claim_scope;

   procedure manifest_outside_the_claim_scope is
      l_id varchar2(128);
   begin
      ctx_session.set_tenant(
         in_claim => test_claims.claim_for(in_tenant_id => co_tenant, in_user_id => 'jane',
                                           in_agent_id => 'research-assistant')
      );
      l_id := ctx_assembly.record_manifest(in_manifest => scoped_manifest('bob', 'research-assistant'));
   end manifest_outside_the_claim_scope;

   -- the message of the invalid_manifest record_manifest raises for in_manifest (NULL if it raised none), and
   -- whether it wrote a source ref of the tenant
   procedure refused_manifest(in_manifest in clob, out_message out varchar2, out_written out number) is
      l_id     varchar2(128);
      l_before number;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      select count(*) into l_before from context_source_ref r where r.tenant_id = co_tenant;
      begin
         l_id := ctx_assembly.record_manifest(in_manifest => in_manifest);
      exception
         when others then
            if sqlcode <> -20114 then
               raise;
            end if;
            out_message := sqlerrm;
      end;
      select count(*) - l_before into out_written from context_source_ref r where r.tenant_id = co_tenant;
   end refused_manifest;

   procedure manifest_longer_than_a_json_field is
      l_expect   ut_expectation;
      l_manifest clob;
      l_message  varchar2(4000);
      l_written  number;
   begin
      -- 63 x 32,000 characters of a string member: 2,016,000 and the rest of the manifest
      l_manifest := to_clob('{"request_hash": "' || co_hash || '", "budget_ref": ["guideline", "ut_budget", 1], '
                            || '"memories": [], "excluded": [], "required_refs": [], "question": "');
      for i in 1 .. 63 loop
         l_manifest := l_manifest || to_clob(rpad('x', 32000, 'x'));
      end loop;
      l_manifest := l_manifest || to_clob('"}');
      refused_manifest(in_manifest => l_manifest, out_message => l_message, out_written => l_written);
      l_expect := ut.expect(l_message);
      l_expect.to_match('the manifest is [0-9]+ characters of JSON, more than 2000000');
      l_expect := ut.expect(l_written);
      l_expect.to_equal(0);
   end manifest_longer_than_a_json_field;

   procedure manifest_with_too_many_references is
      co_excluded constant varchar2(64) := '{"ref": ["entity", "ut_probe", 1], "rule": "limit"}, ';
      l_expect   ut_expectation;
      l_manifest clob;
      l_chunk    varchar2(32767);
      l_message  varchar2(4000);
      l_written  number;
   begin
      -- 20,000 excluded rows, one rendered memory and the budget: 20,002 references
      l_manifest := to_clob('{"request_hash": "' || co_hash || '", "budget_ref": ["guideline", "ut_budget", 1], '
                            || '"memories": [{"ref": ["entity", "ut_f_helios", 2]}], "required_refs": [], '
                            || '"excluded": [');
      for i in 1 .. 19999 loop
         if length(l_chunk) + length(co_excluded) > 32000 then
            l_manifest := l_manifest || to_clob(l_chunk);
            l_chunk := null;
         end if;
         l_chunk := l_chunk || co_excluded;
      end loop;
      l_manifest := l_manifest || to_clob(l_chunk || '{"ref": ["entity", "ut_probe", 1], "rule": "limit"}]}');
      refused_manifest(in_manifest => l_manifest, out_message => l_message, out_written => l_written);
      l_expect := ut.expect(l_message);
      l_expect.to_match('the manifest has 20002 dependency references, more than 20000');
      l_expect := ut.expect(l_written);
      l_expect.to_equal(0);
   end manifest_with_too_many_references;
end test_ctx_assembly;
/
