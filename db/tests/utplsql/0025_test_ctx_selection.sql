--liquibase formatted sql

-- utPLSQL v3 suite for CTX_SELECTION: each selection step on rows built here, without a table (the steps read
-- none): scope drops what is out of scope and numbers the rest, lifecycle gives each row its reason, dedup keeps
-- the most authoritative copy, the limit keeps required rows past it, and exclusions lists the reasons. The
-- whole window is CTX_ASSEMBLY's suite (0020). Writes nothing, so the automatic rollback is enough.
--
-- sqlfluff 4.5 (the parse gate) cannot parse a method call on a call result, so the chained form
-- ut.expect(x).to_equal(y) is written as l_expect := ut.expect(x); l_expect.to_equal(y); (same matcher,
-- same report line).

--changeset ctxasm:ora-test-0025-01-test-ctx-selection-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package test_ctx_selection authid definer is
   --%suite(CTX_SELECTION: the selection steps, one by one)
   --%suitepath(ctxasm.oracle)

   --%test(scope keeps the user's rows and numbers them; another user's, an event and a budget are dropped)
   procedure scope_keeps_rows_in_scope;

   --%test(lifecycle: expired, superseded and not yet effective rows get their reason, a row in effect none)
   procedure lifecycle_gives_reasons;

   --%test(dedup: of two rows with one text the more authoritative is kept, the other names it)
   procedure dedup_keeps_the_authoritative_copy;

   --%test(limit: a slice keeps its first rows, and a required row past the limit too)
   procedure limit_keeps_required_rows;

   --%test(exclusions: the lifecycle reasons and the duplicates, with the row each kept instead)
   procedure exclusions_list_the_reasons;

   --%test(a question names a speaker by whole words, any case, a possessive too; not inside a longer word)
   procedure question_names_speaker;

   --%test(a turn's length: ln of its tokens over the mean, rounded to 6 places, within the cap either way)
   procedure length_logit_is_capped;

   --%test(the time a question names: a day, a month and the week after it, the latest one without a year)
   procedure question_period_is_the_named_time;

   --%test(priority: recency breaks a near-tie of logits, not a wide gap where the sigmoid saturates)
   procedure priority_ties_are_near_in_logits;

   --%test(the present: "recently" asks about it, unless the question names a year or a month)
   procedure present_unless_a_time_is_named;
end test_ctx_selection;
/

--changeset ctxasm:ora-test-0025-02-test-ctx-selection-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body test_ctx_selection is
   co_format constant varchar2(40) := 'YYYY-MM-DD HH24:MI:SS TZH:TZM';
   co_past   constant timestamp with time zone := to_timestamp_tz('2026-01-01 00:00:00 +00:00', co_format);
   co_now    constant timestamp with time zone := to_timestamp_tz('2026-06-01 00:00:00 +00:00', co_format);
   co_future constant timestamp with time zone := to_timestamp_tz('2026-12-01 00:00:00 +00:00', co_format);

   -- a row version in effect since co_past, of no user, agent or thread; the test sets what it needs
   function candidate(in_memory_type in varchar2, in_id in varchar2) return ctx_selection_candidate is
   begin
      return ctx_selection_candidate(
            null, in_memory_type, null, null, null, null, null, null, null, null, null, null, null, null,
            null, null, null, null, in_id, 1, null, null, null, 'active', co_past, null, null, in_id, null,
            null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
            null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
            null, null, null, null, null, null, null, null, null, null, null, null, null
         );
   end candidate;

   -- a durable fact of one text, as the steps before dedup leave it
   function fact(in_id in varchar2, in_text_key in varchar2, in_authority in number) return ctx_selection_candidate is
      r_row ctx_selection_candidate := candidate(in_memory_type => 'entity', in_id => in_id);
   begin
      r_row.table_name := 'entity_memory';
      r_row.slice := 'durable_facts';
      r_row.scope_level := 0;
      r_row.authority_rank := in_authority;
      r_row.text_key := in_text_key;
      return r_row;
   end fact;

   procedure scope_keeps_rows_in_scope is
      l_expect ut_expectation;
      l_rows   ctx_selection_candidates := ctx_selection_candidates();
      r_row    ctx_selection_candidate;
   begin
      l_rows.extend(4);
      r_row := candidate(in_memory_type => 'entity', in_id => 'other-user');
      r_row.user_id := 'u2';
      l_rows(1) := r_row;
      r_row := candidate(in_memory_type => 'entity', in_id => 'mine');
      r_row.user_id := 'u1';
      l_rows(2) := r_row;
      r_row := candidate(in_memory_type => 'conversation', in_id => 'an-event');
      r_row.event_type := 'context_manifest';
      l_rows(3) := r_row;
      r_row := candidate(in_memory_type => 'guideline', in_id => 'the-budget');
      r_row.key_name := 'context_budget';
      l_rows(4) := r_row;
      l_rows := ctx_selection.scope_step(in_rows => l_rows, in_user_id => 'u1', in_agent_id => 'a1',
                                         in_thread_id => 't1');
      l_expect := ut.expect(l_rows.count);
      l_expect.to_equal(1);
      r_row := l_rows(1);
      l_expect := ut.expect(r_row.id);
      l_expect.to_equal('mine');
      l_expect := ut.expect(r_row.row_no);
      l_expect.to_equal(1);
      l_expect := ut.expect(r_row.slice);
      l_expect.to_equal('durable_facts');
   end scope_keeps_rows_in_scope;

   procedure lifecycle_gives_reasons is
      l_expect ut_expectation;
      l_rows   ctx_selection_candidates := ctx_selection_candidates();
      r_row    ctx_selection_candidate;
   begin
      l_rows.extend(4);
      l_rows(1) := candidate(in_memory_type => 'entity', in_id => 'in-effect');
      r_row := candidate(in_memory_type => 'entity', in_id => 'expired');
      r_row.valid_until := co_now;
      l_rows(2) := r_row;
      r_row := candidate(in_memory_type => 'entity', in_id => 'superseded');
      r_row.valid_until := co_now;
      r_row.status := 'superseded';
      l_rows(3) := r_row;
      r_row := candidate(in_memory_type => 'entity', in_id => 'later');
      r_row.valid_from := co_future;
      l_rows(4) := r_row;
      l_rows := ctx_selection.lifecycle_step(in_rows => l_rows, in_evaluation_time => co_now);
      r_row := l_rows(1);
      l_expect := ut.expect(r_row.lifecycle_reason);
      l_expect.to_be_null();
      r_row := l_rows(2);
      l_expect := ut.expect(r_row.lifecycle_reason);
      l_expect.to_equal('expired');
      r_row := l_rows(3);
      l_expect := ut.expect(r_row.lifecycle_reason);
      l_expect.to_equal('superseded');
      r_row := l_rows(4);
      l_expect := ut.expect(r_row.lifecycle_reason);
      l_expect.to_equal('not_yet_effective');
   end lifecycle_gives_reasons;

   procedure dedup_keeps_the_authoritative_copy is
      l_expect ut_expectation;
      l_rows   ctx_selection_candidates := ctx_selection_candidates();
      r_row    ctx_selection_candidate;
   begin
      l_rows.extend(2);
      l_rows(1) := fact(in_id => 'derived', in_text_key => 'same text', in_authority => 5);
      l_rows(2) := fact(in_id => 'canonical', in_text_key => 'same text', in_authority => 1);
      for i in 1 .. l_rows.count loop
         r_row := l_rows(i);
         r_row.row_no := i;
         l_rows(i) := r_row;
      end loop;
      l_rows := ctx_selection.dedup_step(in_rows => l_rows);
      r_row := l_rows(1);
      l_expect := ut.expect(r_row.is_duplicate);
      l_expect.to_equal(1);
      l_expect := ut.expect(r_row.kept_id);
      l_expect.to_equal('canonical');
      r_row := l_rows(2);
      l_expect := ut.expect(r_row.is_duplicate);
      l_expect.to_equal(0);
   end dedup_keeps_the_authoritative_copy;

   procedure limit_keeps_required_rows is
      l_expect ut_expectation;
      l_rows   ctx_selection_candidates := ctx_selection_candidates();
      r_row    ctx_selection_candidate;
      l_limits json_object_t := json_object_t();
   begin
      l_limits.put('durable_facts', 1);
      l_limits.put('evidence', 10);
      l_limits.put('recalled_history', 10);
      l_limits.put('volatile_tail', 10);
      l_rows.extend(3);
      for i in 1 .. 3 loop
         r_row := fact(in_id => 'fact-' || to_char(i), in_text_key => 'text ' || to_char(i), in_authority => 1);
         r_row.row_no := i;
         r_row.competing := 1;
         r_row.slice_rank := i;
         r_row.required := case when i = 3 then 1 else 0 end;
         l_rows(i) := r_row;
      end loop;
      l_rows := ctx_selection.limit_step(in_rows => l_rows, in_limits => l_limits);
      r_row := l_rows(1);
      l_expect := ut.expect(r_row.cut);
      l_expect.to_equal(0);
      r_row := l_rows(2);
      l_expect := ut.expect(r_row.cut);
      l_expect.to_equal(1);
      r_row := l_rows(3);
      l_expect := ut.expect(r_row.cut);
      l_expect.to_equal(0);
   end limit_keeps_required_rows;

   procedure exclusions_list_the_reasons is
      l_expect   ut_expectation;
      l_rows     ctx_selection_candidates := ctx_selection_candidates();
      r_row      ctx_selection_candidate;
      l_excluded clob;
      l_first    varchar2(32);
      l_second   varchar2(32);
      l_kept     varchar2(128);
   begin
      l_rows.extend(2);
      r_row := candidate(in_memory_type => 'entity', in_id => 'expired');
      r_row.lifecycle_reason := 'expired';
      l_rows(1) := r_row;
      r_row := fact(in_id => 'derived', in_text_key => 'same text', in_authority => 5);
      r_row.is_duplicate := 1;
      r_row.kept_type := 'entity';
      r_row.kept_id := 'canonical';
      r_row.kept_version := 1;
      l_rows(2) := r_row;
      l_excluded := ctx_selection.exclusions(in_rows => l_rows);
      select json_value(l_excluded, '$[0].rule'), json_value(l_excluded, '$[1].rule'),
             json_value(l_excluded, '$[0].kept[1]')
        into l_first, l_second, l_kept
        from dual;
      -- ordered by rule: dedup before lifecycle
      l_expect := ut.expect(l_first);
      l_expect.to_equal('dedup');
      l_expect := ut.expect(l_kept);
      l_expect.to_equal('canonical');
      l_expect := ut.expect(l_second);
      l_expect.to_equal('lifecycle');
   end exclusions_list_the_reasons;

   procedure question_names_speaker is
      l_expect ut_expectation;
      l_words  clob := ctx_rules.question_words(in_text => 'When did Maya''s landlord fix it for the annual check?');
   begin
      l_expect := ut.expect(ctx_rules.names_speaker(in_question_words => l_words, in_speaker => 'Maya'));
      l_expect.to_equal(1);
      l_expect := ut.expect(ctx_rules.names_speaker(in_question_words => l_words, in_speaker => 'MAYA'));
      l_expect.to_equal(1);
      -- "annual" does not name Ann; a name of two words is named only with both, in order
      l_expect := ut.expect(ctx_rules.names_speaker(in_question_words => l_words, in_speaker => 'Ann'));
      l_expect.to_equal(0);
      l_expect := ut.expect(ctx_rules.names_speaker(in_question_words => l_words, in_speaker => 'Maya Lee'));
      l_expect.to_equal(0);
      l_expect := ut.expect(ctx_rules.names_speaker(in_question_words => l_words, in_speaker => '--'));
      l_expect.to_equal(0);
      l_expect := ut.expect(ctx_rules.names_speaker(in_question_words => l_words, in_speaker => null));
      l_expect.to_equal(0);
   end question_names_speaker;

   procedure length_logit_is_capped is
      l_expect ut_expectation;
   begin
      l_expect := ut.expect(ctx_rules.length_logit(in_tokens => 40, in_mean_tokens => 40, in_cap => 1));
      l_expect.to_equal(0);
      -- ln 2 = 0.693147...; a half is its negative
      l_expect := ut.expect(ctx_rules.length_logit(in_tokens => 80, in_mean_tokens => 40, in_cap => 1));
      l_expect.to_equal(0.693147);
      l_expect := ut.expect(ctx_rules.length_logit(in_tokens => 20, in_mean_tokens => 40, in_cap => 1));
      l_expect.to_equal(-0.693147);
      l_expect := ut.expect(ctx_rules.length_logit(in_tokens => 4000, in_mean_tokens => 40, in_cap => 1));
      l_expect.to_equal(1);
      l_expect := ut.expect(ctx_rules.length_logit(in_tokens => 1, in_mean_tokens => 40, in_cap => 1));
      l_expect.to_equal(-1);
   end length_logit_is_capped;

   -- [from, to) of the time the question names, as 'YYYY-MM-DD/YYYY-MM-DD' (UTC), or '-' for none
   function named_period(in_question in varchar2, in_at in timestamp with time zone) return varchar2 is
      l_from timestamp with time zone;
      l_to   timestamp with time zone;
   begin
      ctx_rules.question_period(
         in_question_words  => ctx_rules.question_words(in_text => to_clob(in_question)),
         in_evaluation_time => in_at,
         out_from           => l_from,
         out_to             => l_to
      );
      if l_from is null then
         return '-';
      end if;
      return to_char(sys_extract_utc(l_from), 'YYYY-MM-DD') || '/' || to_char(sys_extract_utc(l_to), 'YYYY-MM-DD');
   end named_period;

   -- the cases of py/tests/integration/test_question_period.py, which holds PostgreSQL to the same figures
   procedure question_period_is_the_named_time is
      l_expect ut_expectation;
      l_summer constant timestamp with time zone := to_timestamp_tz('2024-07-10 00:00:00 +00:00', co_format);
      l_later  constant timestamp with time zone := to_timestamp_tz('2024-07-15 09:00:00 +00:00', co_format);
   begin
      l_expect := ut.expect(named_period('What did Maria plan to do later on the evening of 7 July, 2023?', co_now));
      l_expect.to_equal('2023-07-07/2023-07-08');
      l_expect := ut.expect(named_period('What game was Nate playing on November 7th, 2022?', co_now));
      l_expect.to_equal('2022-11-07/2022-11-08');
      l_expect := ut.expect(named_period('What setback did Melanie face in September 2023?', co_now));
      l_expect.to_equal('2023-09-01/2023-10-08');
      l_expect := ut.expect(named_period('What did John attend in December 2023?', co_now));
      l_expect.to_equal('2023-12-01/2024-01-08');
      l_expect := ut.expect(named_period('What did we decide on 15 July?', l_summer));
      l_expect.to_equal('2023-07-15/2023-07-16');
      l_expect := ut.expect(named_period('What did we decide on 15 July?', l_later));
      l_expect.to_equal('2024-07-15/2024-07-16');
      l_expect := ut.expect(named_period('What happened during December?', l_later));
      l_expect.to_equal('2023-12-01/2024-01-08');
      l_expect := ut.expect(named_period('What happened on 3 May?', co_now));
      l_expect.to_equal('2026-05-03/2026-05-04');
      l_expect := ut.expect(named_period('In June, what did she say on 2 March 2025?', co_now));
      l_expect.to_equal('2025-03-02/2025-03-03');
      l_expect := ut.expect(named_period('May I ask what you did last week?', co_now));
      l_expect.to_equal('-');
      l_expect := ut.expect(named_period('What happened on 31 February 2023?', co_now));
      l_expect.to_equal('-');
      l_expect := ut.expect(named_period('What happened in March 0000?', co_now));
      l_expect.to_equal('-');
   end question_period_is_the_named_time;

   -- a recalled turn scored with the given logit and recency, as score_step leaves it
   function scored(in_id in varchar2, in_logit in number, in_recency in number) return ctx_selection_candidate is
      r_row ctx_selection_candidate := candidate(in_memory_type => 'conversation', in_id => in_id);
   begin
      r_row.slice := 'recalled_history';
      r_row.competing := 1;
      r_row.logit := in_logit;
      r_row.rerank := round(1 / (1 + exp(-in_logit)), 6);
      r_row.confidence_score := 0.5;
      r_row.recency := in_recency;
      return r_row;
   end scored;

   procedure priority_ties_are_near_in_logits is
      l_expect ut_expectation;
      l_rows   ctx_selection_candidates := ctx_selection_candidates();
      r_row    ctx_selection_candidate;
   begin
      l_rows.extend(4);
      l_rows(1) := scored(in_id => 'new_a', in_logit => 8, in_recency => 1);
      l_rows(2) := scored(in_id => 'old_a', in_logit => 10, in_recency => 0);
      l_rows(3) := scored(in_id => 'new_b', in_logit => 0, in_recency => 1);
      l_rows(4) := scored(in_id => 'old_b', in_logit => 0.002, in_recency => 0);
      -- the default budget's weights, a question not about the present
      l_rows := ctx_selection.priority_step(
         in_rows => l_rows, in_w_rerank => 0.6, in_w_confidence => 0.25, in_w_recency => 0.15, in_present => 0
      );
      l_rows := ctx_selection.tie_break_step(in_rows => l_rows);
      r_row := l_rows(2);
      l_expect := ut.expect(r_row.slice_rank);
      l_expect.to_equal(1);
      r_row := l_rows(3);
      l_expect := ut.expect(r_row.slice_rank);
      l_expect.to_equal(3);
   end priority_ties_are_near_in_logits;

   procedure present_unless_a_time_is_named is
      l_expect ut_expectation;
   begin
      l_expect := ut.expect(ctx_rules.asks_about_present(in_question => 'What broke the heater recently?'));
      l_expect.to_equal(1);
      l_expect := ut.expect(ctx_rules.asks_about_present(in_question => 'What broke it recently, in 2026?'));
      l_expect.to_equal(0);
      l_expect := ut.expect(ctx_rules.asks_about_present(in_question => 'What is the latest since March?'));
      l_expect.to_equal(0);
      l_expect := ut.expect(ctx_rules.asks_about_present(in_question => 'What did she recently say on 3 May?'));
      l_expect.to_equal(0);
      l_expect := ut.expect(ctx_rules.asks_about_present(in_question => 'What may have broken it recently?'));
      l_expect.to_equal(1);
   end present_unless_a_time_is_named;
end test_ctx_selection;
/
