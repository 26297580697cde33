--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-rules-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_rules is
   -- PostgreSQL: db/postgresql/internal/ctx_rules.sql, in the same order.

   function scope_level(
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type
   ) return number deterministic is
   begin
      return case
                when in_thread_id is not null then 3
                when in_user_id is not null then 2
                when in_agent_id is not null then 1
                else 0
             end;
   end scope_level;

   function hybrid_logit(in_similarity in number, in_text_score in number, in_best_text_score in number)
      return number deterministic is
      co_similarity_weight constant number := 12;
      co_similarity_center constant number := 0.35;
      co_text_weight       constant number := 1.5;
      co_smallest_best     constant number := 1e-9;
   begin
      return round(
                co_similarity_weight * (coalesce(in_similarity, 0) - co_similarity_center)
                + co_text_weight * coalesce(in_text_score, 0) / greatest(coalesce(in_best_text_score, 0), co_smallest_best),
                co_score_places
             );
   end hybrid_logit;

   function length_logit(in_tokens in number, in_mean_tokens in number, in_cap in number)
      return number deterministic is
   begin
      return greatest(-in_cap, least(in_cap, round(ln(in_tokens / in_mean_tokens), co_score_places)));
   end length_logit;

   function claim_key(
      in_subject      in entity_memory.subject%type,
      in_predicate    in entity_memory.predicate%type,
      in_content_json in clob
   ) return clob deterministic is
      co_empty_conditions constant varchar2(2) := '{}';
      co_separator        constant varchar2(1) := '|';
      l_element   json_element_t;
      l_content   json_object_t;
      l_claim     json_object_t;
      l_subject   varchar2(32767);
      l_predicate varchar2(32767);
   begin
      -- content_json arrives as json_serialize text: an object starts with '{' (scalars are not parsed)
      if in_content_json is not null and to_char(substr(in_content_json, 1, 1)) = '{' then
         l_element := json_element_t.parse(in_content_json);
         l_content := treat(l_element as json_object_t);
      end if;
      if in_subject is not null then
         -- PostgreSQL's || gives NULL when a part is NULL; Oracle's would drop the part
         if in_predicate is null then
            return null;
         end if;
         return in_subject || co_separator || in_predicate || co_separator
                || coalesce(
                      case when l_content is not null then ctx_json.canonical_member(in_object => l_content, in_key => 'conditions') end,
                      to_clob(co_empty_conditions)
                   );
      end if;
      if l_content is not null then
         l_element := l_content.get('claim');
      else
         l_element := null;
      end if;
      if l_element is null or not l_element.is_object() then
         return null;
      end if;
      l_claim := treat(l_element as json_object_t);
      l_subject := ctx_json.member_text(in_object => l_claim, in_key => 'subject');
      l_predicate := ctx_json.member_text(in_object => l_claim, in_key => 'predicate');
      if l_subject is null or l_predicate is null then
         return null;
      end if;
      return l_subject || co_separator || l_predicate || co_separator
             || coalesce(ctx_json.canonical_member(in_object => l_claim, in_key => 'conditions'), to_clob(co_empty_conditions));
   end claim_key;

   function authority(in_memory_type in varchar2) return number deterministic is
   begin
      -- generated: authority from contract/memory_types.toml; edit the catalogue, then regenerate
      return case in_memory_type
                when 'entity' then 1
                when 'workflow' then 2
                when 'kb_document' then 3
                when 'kb_chunk' then 3
                when 'summary' then 4
                when 'conversation' then 5
                else 9
             end;
      -- end generated: authority
   end authority;

   function asks_about_present(in_question in clob) return pls_integer deterministic is
      co_present_words constant varchar2(200) :=
         '(^|[^a-z])(now|nowadays|current|currently|latest|newest|recent|recently|lately|still|today|anymore)([^a-z]|$)';
      -- a year or a month the question names: it asks about that time ("may" only next to a number)
      co_named_time    constant varchar2(300) :=
         '(^|[^0-9])(19|20)[0-9]{2}([^0-9]|$)'
         || '|(^|[^a-z])(january|february|march|april|june|july|august|september|october|november|december)([^a-z]|$)'
         || '|[0-9](st|nd|rd|th)? +may([^a-z]|$)|(^|[^a-z])may +[0-9]';
   begin
      if regexp_like(lower(in_question), co_present_words) and not regexp_like(lower(in_question), co_named_time) then
         return 1;
      end if;
      return 0;
   end asks_about_present;

   function question_words(in_text in clob) return clob deterministic is
      co_not_word constant varchar2(20) := '[^[:alnum:]]+';
   begin
      -- TRIM of a text that was all separators is NULL, so the result is two spaces, as PostgreSQL's
      return ' ' || trim(regexp_replace(lower(in_text), co_not_word, ' ')) || ' ';
   end question_words;

   function names_speaker(in_question_words in clob, in_speaker in varchar2) return number deterministic is
      l_words clob;
   begin
      if in_speaker is null or in_question_words is null then
         return 0;
      end if;
      l_words := question_words(in_text => to_clob(in_speaker));
      -- INSTR on two CLOBs compares whole texts of any length (SQL semantics for LOBs)
      if length(l_words) > 2 and instr(in_question_words, l_words) > 0 then
         return 1;
      end if;
      return 0;
   end names_speaker;

   procedure question_period(
      in_question_words  in  clob,
      in_evaluation_time in  timestamp with time zone,
      out_from           out timestamp with time zone,
      out_to             out timestamp with time zone
   ) is
      co_months      constant varchar2(120) :=
         'january|february|march|april|may|june|july|august|september|october|november|december';
      co_month       constant varchar2(130) := '(' || co_months || ')';
      co_day         constant varchar2(30)  := '([0-9]{1,2})(st|nd|rd|th)?';
      -- how long after a month what happened in it is still told (a conversation reports last week's news)
      co_told_within constant pls_integer := 7;
      type t_texts is varray(6) of varchar2(200);
      type t_places is varray(6) of pls_integer;
      -- the forms in the order they count ("7 july 2023", "july 7th 2023", "july 2023", "7 july", "july 7th", "in
      -- july"), and where in each the year, the month and the day are (0: not in it)
      l_forms    t_texts := t_texts(
         ' ' || co_day || ' ' || co_month || ' ([0-9]{4}) ',
         ' ' || co_month || ' ' || co_day || ' ([0-9]{4}) ',
         ' ' || co_month || ' ([0-9]{4}) ',
         ' ' || co_day || ' ' || co_month || ' ',
         ' ' || co_month || ' ' || co_day || ' ',
         ' (in|during) ' || co_month || ' '
      );
      l_year_at  t_places := t_places(4, 4, 2, 0, 0, 0);
      l_month_at t_places := t_places(3, 1, 1, 3, 1, 2);
      l_day_at   t_places := t_places(1, 2, 0, 1, 2, 0);
      l_today   date := trunc(cast(sys_extract_utc(in_evaluation_time) as date));
      l_form    pls_integer;
      l_year    pls_integer;
      l_month   pls_integer;
      l_day     pls_integer;
      l_start   date;

      -- subexpression in_at of the form found, as a number; NULL for a place of 0 (not in the form)
      function part(in_at in pls_integer) return pls_integer is
      begin
         if in_at = 0 then
            return null;
         end if;
         return to_number(to_char(regexp_substr(in_question_words, l_forms(l_form), 1, 1, null, in_at)));
      end part;

      -- the month named at subexpression in_at: its place in co_months, the names before it counted by their
      -- separators
      function month_number(in_at in pls_integer) return pls_integer is
      begin
         return regexp_count(substr(co_months, 1, instr(co_months, to_char(
                   regexp_substr(in_question_words, l_forms(l_form), 1, 1, null, in_at)))), '[|]') + 1;
      end month_number;
   begin
      out_from := null;
      out_to := null;
      for l_at in 1 .. l_forms.count loop
         if regexp_like(in_question_words, l_forms(l_at)) then
            l_form := l_at;
            exit;
         end if;
      end loop;
      if l_form is null then
         return;
      end if;
      l_year := part(l_year_at(l_form));
      l_month := month_number(l_month_at(l_form));
      l_day := part(l_day_at(l_form));
      if l_year is null then
         -- the latest such day or month on or before the evaluation time
         l_year := to_number(to_char(l_today, 'YYYY'));
         if to_date(l_year || '-' || l_month || '-01', 'YYYY-MM-DD') > l_today
            or (l_day is not null and l_month = to_number(to_char(l_today, 'MM'))
                and l_day > to_number(to_char(l_today, 'DD'))) then
            l_year := l_year - 1;
         end if;
      end if;
      if l_year < 1 then
         return;
      end if;
      l_start := to_date(l_year || '-' || l_month || '-01', 'YYYY-MM-DD');
      if l_day is null then
         out_from := from_tz(cast(l_start as timestamp), 'UTC');
         out_to := from_tz(cast(add_months(l_start, 1) + co_told_within as timestamp), 'UTC');
      elsif l_day between 1 and to_number(to_char(last_day(l_start), 'DD')) then
         out_from := from_tz(cast(l_start + l_day - 1 as timestamp), 'UTC');
         out_to := from_tz(cast(l_start + l_day as timestamp), 'UTC');
      end if;
   end question_period;
end ctx_rules;
/
