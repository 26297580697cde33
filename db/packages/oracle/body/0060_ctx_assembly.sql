--liquibase formatted sql

--changeset ctxasm:ora-pkg-0060-ctx-assembly-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_assembly is
   -- The twin of db/packages/postgresql/0050_ctx_assembly.sql (and, for the retrieval step, of
   -- ctxasm.retrieve_evidence in db/packages/postgresql/0045_ctxasm_retrieval.sql); docs/oracle-assembly.md
   -- maps each step. Every statement is static, every value a bind, every table named in the code, with two
   -- exceptions: VECTOR_EMBEDDING and PREDICTION name their model in the SQL text, so those calls are dynamic
   -- (question_embedding, reranker_scores) and the package compiles and runs without the models.

   -- characters; bounds the work one call can ask for
   co_max_question constant pls_integer := 8000;
   co_engine            constant varchar2(30) := 'oracle';
   co_selection_version constant varchar2(30) := 'context-selection-1';
   co_lexical_scorer    constant varchar2(30) := 'lexical-overlap-1';
   co_external_scorer   constant varchar2(30) := 'external';
   -- the in-database ONNX cross-encoder (a regression model: PREDICTION gives the raw logit) and its scorer name
   co_reranker_model    constant varchar2(30) := 'BGE_RERANKER';
   co_reranker_scorer   constant varchar2(64) := 'bge-reranker:oracle:BGE_RERANKER';
   co_budget_key        constant guideline_memory.guideline_key%type := 'context_budget';

   co_snapshot_pattern   constant varchar2(30) := '^[0123456789]{1,38}$';
   co_hash_pattern       constant varchar2(30) := '^[0123456789abcdef]{64}$';
   co_hash_length        constant pls_integer := 64;
   co_case_sensitive     constant varchar2(1) := 'c';

   -- scoring
   co_score_places      constant pls_integer := 6;
   co_seconds_per_day   constant number := 86400;
   co_default_confidence constant number := 0.5;
   co_logit_span        constant number := 8;
   co_logit_floor       constant number := -4;
   co_min_word_length   constant pls_integer := 3;

   -- retrieval: how many rows each retriever returns, and how many fused rows become evidence candidates
   co_retrieval_depth  constant pls_integer := 50;
   co_evidence_limit   constant pls_integer := 20;
   -- reciprocal rank fusion: 1 / (k + rank) per retriever, a missing rank adds 0
   co_rrf_k            constant pls_integer := 60;
   co_method_recorded  constant varchar2(30) := 'recorded';
   co_method_lexical   constant varchar2(30) := 'lexical';
   co_method_hybrid    constant varchar2(30) := 'hybrid-rrf-60';
   -- the in-database embedding model used when the caller gives no query embedding (all-MiniLM-L6-v2)
   co_embedding_model  constant varchar2(30) := 'MINILM';
   -- Oracle Text: each word escaped in braces, joined with ACCUM; the query text stays within 4000 characters
   co_text_open        constant varchar2(1) := '{';
   co_text_close       constant varchar2(1) := '}';
   co_text_accum       constant varchar2(7) := ' ACCUM ';
   co_text_query_max   constant pls_integer := 4000;
   co_empty_array      constant varchar2(2) := '[]';

   -- text folding as PostgreSQL does it in a C-locale database: ASCII only (lower(), [[:alnum:]], \s)
   co_upper_ascii constant varchar2(26) := 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
   co_lower_ascii constant varchar2(26) := 'abcdefghijklmnopqrstuvwxyz';
   co_word_chars  constant varchar2(36) := '0123456789abcdefghijklmnopqrstuvwxyz';
   -- explicit lists, no ranges: a bracket range follows NLS_SORT in Oracle
   co_word_pattern       constant varchar2(50) := '[' || co_word_chars || ']+';
   co_whitespace_pattern constant varchar2(20) := '[' || chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || ' ]+';
   co_sentence_end       constant varchar2(2) := '. ';
   co_pointer_length     constant pls_integer := 60;
   co_ellipsis           constant varchar2(3) := '...';
   co_last_word_pattern  constant varchar2(20) := ' +[^ ]*$';

   co_empty_sha256 constant varchar2(64) := 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
   co_utf8         constant varchar2(8) := 'AL32UTF8';

   -- the manifest rows
   co_conversation     constant varchar2(30) := 'conversation';
   co_source_ref       constant varchar2(30) := 'source_ref';
   co_manifest_prefix  constant varchar2(30) := 'manifest_';
   co_manifest_event   constant conversation_memory.event_type%type := 'context_manifest';
   co_event_role       constant conversation_memory.role%type := 'event';
   co_derived_manifest constant context_source_ref.derived_type%type := 'manifest';

   type t_word_tab is table of varchar2(32767);

   e_invalid_scn exception;
   pragma exception_init(e_invalid_scn, -8181);
   e_snapshot_not_found exception;
   pragma exception_init(e_snapshot_not_found, -8180);
   e_table_changed exception;
   pragma exception_init(e_table_changed, -1466);
   e_json_syntax exception;
   pragma exception_init(e_json_syntax, -40441);

   -- ------------------------------------------------------------------------------------------------------
   -- the selection helpers (declared in the spec only so that SQL can call them)

   -- whether in_word occurs in in_text bounded by non-word characters or the ends (both already folded)
   function contains_word(in_text in clob, in_word in varchar2) return boolean is
      l_at     integer;
      l_before varchar2(4);
      l_after  varchar2(4);
   begin
      l_at := instr(in_text, in_word, 1);
      while l_at > 0 loop
         l_before := case when l_at > 1 then substr(in_text, l_at - 1, 1) end;
         l_after := substr(in_text, l_at + length(in_word), 1);
         if (l_before is null or instr(co_word_chars, l_before) = 0)
            and (l_after is null or instr(co_word_chars, l_after) = 0)
         then
            return true;
         end if;
         l_at := instr(in_text, in_word, l_at + 1);
      end loop;
      return false;
   end contains_word;

   function is_listed(in_words in t_word_tab, in_word in varchar2) return boolean is
   begin
      for i in 1 .. in_words.count loop
         if in_words(i) = in_word then
            return true;
         end if;
      end loop;
      return false;
   end is_listed;

   -- ASCII letters lower-cased, the rest kept, for a text of any length. TRANSLATE on a CLOB converts it to
   -- VARCHAR2 first (32 KB in PL/SQL), so the text goes through in pieces of 8,000 characters (at most
   -- 32,000 bytes in AL32UTF8).
   function ascii_lower(in_text in clob) return clob is
      co_piece constant pls_integer := 8000;
      l_length integer;
      l_offset integer := 1;
      l_text   clob;
   begin
      l_length := sys.dbms_lob.getlength(lob_loc => in_text);
      if l_length is null or l_length = 0 then
         return in_text;
      end if;
      while l_offset <= l_length loop
         l_text := l_text
                   || translate(sys.dbms_lob.substr(lob_loc => in_text, amount => co_piece, offset => l_offset),
                                co_upper_ascii, co_lower_ascii);
         l_offset := l_offset + co_piece;
      end loop;
      return l_text;
   end ascii_lower;

   -- the question's distinct words, in order of first occurrence: runs of ASCII letters and digits,
   -- lower-cased, at least 3 long (the lexical scorer's words, and the words of the Oracle Text query)
   function question_words(in_query in clob) return t_word_tab is
      l_query clob;
      l_words t_word_tab := t_word_tab();
      l_word  varchar2(32767);
      l_start integer;
      l_end   integer;
   begin
      l_query := ascii_lower(in_text => in_query);
      l_start := regexp_instr(l_query, co_word_pattern, 1);
      while l_start > 0 loop
         l_end := regexp_instr(l_query, co_word_pattern, l_start, 1, 1);
         l_word := substr(l_query, l_start, l_end - l_start);
         if length(l_word) >= co_min_word_length and not is_listed(in_words => l_words, in_word => l_word) then
            l_words.extend();
            l_words(l_words.last) := l_word;
         end if;
         l_start := regexp_instr(l_query, co_word_pattern, l_end);
      end loop;
      return l_words;
   end question_words;

   function lexical_logit(in_query in clob, in_text in clob) return number deterministic is
      l_text    clob;
      l_words   t_word_tab;
      l_matched pls_integer := 0;
   begin
      l_text := ascii_lower(in_text => in_text);
      l_words := question_words(in_query => in_query);
      if l_words.count = 0 then
         return co_logit_floor;
      end if;
      for i in 1 .. l_words.count loop
         if contains_word(in_text => l_text, in_word => l_words(i)) then
            l_matched := l_matched + 1;
         end if;
      end loop;
      return round(co_logit_span * l_matched / l_words.count + co_logit_floor, co_score_places);
   end lexical_logit;

   function normalized_text(in_text in clob) return clob deterministic is
   begin
      return trim(regexp_replace(ascii_lower(in_text => in_text), co_whitespace_pattern, ' '));
   end normalized_text;

   -- PostgreSQL's ->> of one member: a string unquoted, another value as JSON text, NULL for null or absent
   function member_text(in_object in json_object_t, in_key in varchar2) return varchar2 is
      l_value json_element_t;
   begin
      l_value := in_object.get(in_key);
      if l_value is null or l_value.is_null() then
         return null;
      elsif l_value.is_string() then
         return in_object.get_string(in_key);
      end if;
      return l_value.to_string();
   end member_text;

   -- one member as canonical JSON text (objects with their keys sorted), NULL when absent
   function canonical_member(in_object in json_object_t, in_key in varchar2) return clob is
      l_value json_element_t;
      l_text  clob;
   begin
      l_value := in_object.get(in_key);
      if l_value is null then
         return null;
      end if;
      l_text := l_value.to_clob();
      if l_value.is_object() or l_value.is_array() then
         select json_serialize(l_text returning clob ordered)
           into l_text
           from dual;
      end if;
      return l_text;
   end canonical_member;

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
                      case when l_content is not null then canonical_member(in_object => l_content, in_key => 'conditions') end,
                      to_clob(co_empty_conditions)
                   );
      end if;
      if l_content is not null then
         l_element := l_content.get('claim');
      end if;
      if l_element is null or not l_element.is_object() then
         return null;
      end if;
      l_claim := treat(l_element as json_object_t);
      l_subject := member_text(in_object => l_claim, in_key => 'subject');
      l_predicate := member_text(in_object => l_claim, in_key => 'predicate');
      if l_subject is null or l_predicate is null then
         return null;
      end if;
      return l_subject || co_separator || l_predicate || co_separator
             || coalesce(canonical_member(in_object => l_claim, in_key => 'conditions'), to_clob(co_empty_conditions));
   end claim_key;

   function authority(in_memory_type in varchar2) return pls_integer deterministic is
   begin
      return case in_memory_type
                when 'entity' then 1
                when 'workflow' then 2
                when 'kb_chunk' then 3
                when 'kb_document' then 3
                when 'summary' then 4
                when 'conversation' then 5
                else 9
             end;
   end authority;

   function pointer_line(in_text in clob) return varchar2 deterministic is
      l_line clob;
      l_at   integer;
   begin
      l_line := regexp_replace(in_text, co_whitespace_pattern, ' ');
      l_at := instr(l_line, co_sentence_end, 1);
      if l_at > 0 then
         l_line := substr(l_line, 1, l_at - 1);
      end if;
      l_line := trim(l_line);
      if l_line is null or length(l_line) = 0 then
         return null;
      elsif length(l_line) <= co_pointer_length then
         return to_char(l_line);
      end if;
      return regexp_replace(to_char(substr(l_line, 1, co_pointer_length)), co_last_word_pattern, '') || co_ellipsis;
   end pointer_line;

   function sha256_hex(in_text in clob) return varchar2 deterministic is
      l_bytes       blob;
      l_dest_offset integer := 1;
      l_src_offset  integer := 1;
      l_context     integer := sys.dbms_lob.default_lang_ctx;
      l_warning     integer;
      l_hash        raw(32);
   begin
      if in_text is null or sys.dbms_lob.getlength(lob_loc => in_text) = 0 then
         return co_empty_sha256;
      end if;
      sys.dbms_lob.createtemporary(lob_loc => l_bytes, cache => true, dur => sys.dbms_lob.call);
      begin
         sys.dbms_lob.converttoblob(
            dest_lob     => l_bytes,
            src_clob     => in_text,
            amount       => sys.dbms_lob.lobmaxsize,
            dest_offset  => l_dest_offset,
            src_offset   => l_src_offset,
            blob_csid    => nls_charset_id(co_utf8),
            lang_context => l_context,
            warning      => l_warning
         );
         l_hash := sys.dbms_crypto.hash(src => l_bytes, typ => sys.dbms_crypto.hash_sh256);
         sys.dbms_lob.freetemporary(lob_loc => l_bytes);
      exception
         when others then
            -- not handled here: only the temporary LOB is freed, the error goes on unchanged
            sys.dbms_lob.freetemporary(lob_loc => l_bytes);
            raise;
      end;
      return lower(rawtohex(l_hash));
   end sha256_hex;

   function iso_utc(in_timestamp in timestamp with time zone) return varchar2 deterministic is
      co_utc_offset constant varchar2(6) := '+00:00';
      l_utc      timestamp(6);
      l_fraction varchar2(9);
   begin
      if in_timestamp is null then
         return null;
      end if;
      l_utc := sys_extract_utc(in_timestamp);
      l_fraction := rtrim(to_char(l_utc, 'FF6'), '0');
      return to_char(l_utc, 'YYYY-MM-DD"T"HH24:MI:SS')
             || case when l_fraction is not null then '.' || l_fraction end
             || co_utc_offset;
   end iso_utc;

   -- the PostgreSQL text of a timestamptz in a UTC session, for messages: 2026-01-01 00:00:00+00
   function message_time(in_timestamp in timestamp with time zone) return varchar2 is
      l_iso varchar2(40);
   begin
      l_iso := iso_utc(in_timestamp => in_timestamp);
      return replace(substr(l_iso, 1, length(l_iso) - 3), 'T', ' ');
   end message_time;

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
                  in_detail => co_message || '; ' || ctx_errors.quoted(in_text => substr(l_keys(i), 1, 200)) || ' is not a number'
               );
            end if;
         end loop;
      end if;
      return l_rows.to_clob();
   end score_rows;

   -- budget check: weights.<in_field> must be a number >= 0
   function budget_weight(
      in_budget_id      in guideline_memory.id%type,
      in_budget_version in guideline_memory.version%type,
      in_weights        in json_object_t,
      in_field          in varchar2
   ) return number is
      l_value json_element_t;
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
            in_detail => 'guideline ' || in_budget_id || ' version ' || to_char(in_budget_version)
                         || ': weights.' || in_field || ' must be a number >= 0'
         );
      end if;
      return l_weight;
   end budget_weight;

   -- the keys of a JSON object, sorted and joined with ', ' (the unknown_intent message)
   function sorted_keys(in_object in json_object_t) return varchar2 is
      l_keys json_key_list;
      l_key  varchar2(4000);
      l_text varchar2(32767);
      l_pos  pls_integer;
   begin
      l_keys := in_object.get_keys();
      if l_keys is null or l_keys.count = 0 then
         return null;
      end if;
      -- insertion sort: a budget has a handful of intents
      for i in 2 .. l_keys.count loop
         l_key := l_keys(i);
         l_pos := i - 1;
         while l_pos >= 1 and l_keys(l_pos) > l_key loop
            l_keys(l_pos + 1) := l_keys(l_pos);
            l_pos := l_pos - 1;
         end loop;
         l_keys(l_pos + 1) := l_key;
      end loop;
      for i in 1 .. l_keys.count loop
         l_text := substr(l_text || case when i > 1 then ', ' end || l_keys(i), 1, 4000);
      end loop;
      return l_text;
   end sorted_keys;

   -- ------------------------------------------------------------------------------------------------------
   -- select_window: the retrieval step (PostgreSQL: ctxasm.retrieve_evidence)

   -- in_evidence (replay: the retrieval items a manifest recorded), checked to be a JSON array; NULL for NULL
   function evidence_items(in_evidence in clob) return clob is
      co_message constant varchar2(100) := 'in_evidence must be a JSON array of retrieval items';
      l_element json_element_t;
   begin
      if in_evidence is null then
         return null;
      end if;
      begin
         l_element := json_element_t.parse(in_evidence);
      exception
         when e_json_syntax then
            l_element := null;
      end;
      if l_element is null or not l_element.is_array() then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_argument, in_detail => co_message);
      end if;
      return in_evidence;
   end evidence_items;

   -- The Oracle Text query for the question, built from its words only, never from its raw text: each word
   -- (ASCII letters and digits, so no operator character can occur) escaped in braces, the words joined with
   -- ACCUM, so that a row matching more words scores higher. NULL when the question has no word.
   function text_query(in_question in clob) return varchar2 is
      l_words t_word_tab;
      l_term  varchar2(32767);
      l_query varchar2(32767);
   begin
      l_words := question_words(in_query => in_question);
      for i in 1 .. l_words.count loop
         l_term := co_text_open || l_words(i) || co_text_close;
         exit when nvl(length(l_query), 0) + length(co_text_accum) + length(l_term) > co_text_query_max;
         l_query := case when l_query is not null then l_query || co_text_accum end || l_term;
      end loop;
      return l_query;
   end text_query;

   -- The question's embedding as vector text, computed by the in-database ONNX model MINILM; NULL when the
   -- schema has no such model. Dynamic SQL, so that the package compiles and runs without the model.
   function question_embedding(in_question in clob) return clob is
      l_models pls_integer;
      l_sql    varchar2(400);
      l_vector clob;
   begin
      select count(*)
        into l_models
        from user_mining_models m
       where m.model_name = co_embedding_model;
      if l_models = 0 then
         return null;
      end if;
      l_sql := 'select from_vector(vector_embedding('
               || sys.dbms_assert.simple_sql_name(str => co_embedding_model)
               || ' using :b_question as data) returning clob) from dual';
      execute immediate l_sql into l_vector using in_question;
      return l_vector;
   end question_embedding;

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
   -- Only the candidates are scored, that is the dynamic slices after dedup and conflict: never fixed or
   -- excluded rows. The logit is unbounded; the sigmoid is applied in one place, the score step. Dynamic SQL
   -- (the model name is a constant, the question and the texts are binds), so the package compiles without it.
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

   -- Lexical retrieval: the best in_depth documents and chunks whose content CONTAINS the query words, by
   -- SCORE desc, then type, id, version; as [{"t", "i", "v", "r"}] (r = rank, from 1), NULL for no hit.
   -- CONTAINS runs on the current table (its CONTEXT index); the hit is then joined to the same row read AS OF
   -- in_scn, and scope and lifecycle are judged on that row, so only rows visible at the SCN can be hits.
   function lexical_ranks(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_scn             in number,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_terms           in varchar2,
      in_depth           in pls_integer
   ) return clob is
      l_ranks clob;
   begin
      if in_terms is null then
         return null;
      end if;
      select json_arrayagg(
                json_object(
                   't' value h.memory_type,
                   'i' value h.id,
                   'v' value h.version,
                   'r' value h.hit_rank
                   returning clob
                ) format json
                order by h.hit_rank
                returning clob
             )
        into l_ranks
        from (
                select b.memory_type, b.id, b.version,
                       row_number() over (
                          order by b.text_score desc, b.memory_type, b.id, b.version
                       ) as hit_rank
                  from (
                          select u.memory_type, u.id, u.version, u.text_score
                            from (
                                    select cast('kb_chunk' as varchar2(32)) as memory_type,
                                           c.id, c.version, score(1) as text_score
                                      from knowledge_base_chunk c
                                      join knowledge_base_chunk as of scn in_scn a
                                        on a.tenant_id = c.tenant_id
                                       and a.id = c.id
                                       and a.version = c.version
                                     where contains(c.content, in_terms, 1) > 0
                                       and c.tenant_id = in_tenant_id
                                       and (a.user_id is null or a.user_id = in_user_id)
                                       and (a.agent_id is null or a.agent_id = in_agent_id)
                                       and (a.thread_id is null or a.thread_id = in_thread_id)
                                       and a.deleted_at is null
                                       and a.valid_from <= in_evaluation_time
                                       and (a.valid_until is null or a.valid_until > in_evaluation_time)
                                    union all
                                    select 'kb_document', d.id, d.version, score(2)
                                      from knowledge_base_document d
                                      join knowledge_base_document as of scn in_scn a
                                        on a.tenant_id = d.tenant_id
                                       and a.id = d.id
                                       and a.version = d.version
                                     where contains(d.content, in_terms, 2) > 0
                                       and d.tenant_id = in_tenant_id
                                       and (a.user_id is null or a.user_id = in_user_id)
                                       and (a.agent_id is null or a.agent_id = in_agent_id)
                                       and (a.thread_id is null or a.thread_id = in_thread_id)
                                       and a.deleted_at is null
                                       and a.valid_from <= in_evaluation_time
                                       and (a.valid_until is null or a.valid_until > in_evaluation_time)
                                 ) u
                           order by u.text_score desc, u.memory_type, u.id, u.version
                           fetch first in_depth rows only
                       ) b
             ) h;
      return l_ranks;
   end lexical_ranks;

   -- Vector retrieval: the in_depth chunks nearest to the query vector (VECTOR_DISTANCE, COSINE, exact), read
   -- AS OF in_scn, in scope and in effect; ties by id, version. As lexical_ranks; NULL for no vector or no hit.
   function vector_ranks(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_scn             in number,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_vector          in clob,
      in_depth           in pls_integer
   ) return clob is
      l_ranks clob;
   begin
      if in_vector is null then
         return null;
      end if;
      select json_arrayagg(
                json_object(
                   't' value n.memory_type,
                   'i' value n.id,
                   'v' value n.version,
                   'r' value n.hit_rank
                   returning clob
                ) format json
                order by n.hit_rank
                returning clob
             )
        into l_ranks
        from (
                select cast('kb_chunk' as varchar2(32)) as memory_type, c.id, c.version,
                       row_number() over (
                          order by vector_distance(c.embedding, to_vector(in_vector), cosine), c.id, c.version
                       ) as hit_rank
                  from knowledge_base_chunk as of scn in_scn c
                 where c.tenant_id = in_tenant_id
                   and c.embedding is not null
                   and (c.user_id is null or c.user_id = in_user_id)
                   and (c.agent_id is null or c.agent_id = in_agent_id)
                   and (c.thread_id is null or c.thread_id = in_thread_id)
                   and c.deleted_at is null
                   and c.valid_from <= in_evaluation_time
                   and (c.valid_until is null or c.valid_until > in_evaluation_time)
                 order by vector_distance(c.embedding, to_vector(in_vector), cosine), c.id, c.version
                 fetch first in_depth rows only
             ) n;
      return l_ranks;
   end vector_ranks;

   -- The two rankings fused by reciprocal rank, round(1/(60 + lexical_rank) + 1/(60 + vector_rank), 6), a
   -- missing rank adding 0; the best in_limit kept (fused desc, type, id, version). The retrieval items
   -- [{"ref": [type, id, version], "lexical_rank", "vector_rank", "fused"}], '[]' when nothing was found.
   function fused_items(in_lexical in clob, in_vector in clob, in_limit in pls_integer) return clob is
      l_items clob;
   begin
      if in_lexical is null and in_vector is null then
         return to_clob(co_empty_array);
      end if;
      select json_arrayagg(
                json_object(
                   'ref' value json_array(f.memory_type, f.id, f.version),
                   'lexical_rank' value f.lexical_rank,
                   'vector_rank' value f.vector_rank,
                   'fused' value f.fused
                   null on null returning clob
                ) format json
                order by f.fused desc, f.memory_type, f.id, f.version
                returning clob
             )
        into l_items
        from (
                select r.memory_type, r.id, r.version, r.lexical_rank, r.vector_rank,
                       round(
                          nvl(1 / (co_rrf_k + r.lexical_rank), 0) + nvl(1 / (co_rrf_k + r.vector_rank), 0),
                          co_score_places
                       ) as fused
                  from (
                          select u.memory_type, u.id, u.version,
                                 max(u.lexical_rank) as lexical_rank,
                                 max(u.vector_rank) as vector_rank
                            from (
                                    select l.hit_type as memory_type, l.hit_id as id, l.hit_version as version,
                                           l.hit_rank as lexical_rank, cast(null as number) as vector_rank
                                      from json_table(coalesce(in_lexical, to_clob(co_empty_array)), '$[*]'
                                              columns (
                                                 hit_type    varchar2(32)  path '$.t',
                                                 hit_id      varchar2(128) path '$.i',
                                                 hit_version number        path '$.v',
                                                 hit_rank    number        path '$.r'
                                              )
                                           ) l
                                    union all
                                    select v.hit_type, v.hit_id, v.hit_version, null, v.hit_rank
                                      from json_table(coalesce(in_vector, to_clob(co_empty_array)), '$[*]'
                                              columns (
                                                 hit_type    varchar2(32)  path '$.t',
                                                 hit_id      varchar2(128) path '$.i',
                                                 hit_version number        path '$.v',
                                                 hit_rank    number        path '$.r'
                                              )
                                           ) v
                                 ) u
                           group by u.memory_type, u.id, u.version
                       ) r
                 order by fused desc, r.memory_type, r.id, r.version
                 fetch first in_limit rows only
             ) f;
      return coalesce(l_items, to_clob(co_empty_array));
   end fused_items;


   function retrieve_evidence(
      in_scn             in number,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_question        in clob,
      in_query_embedding in clob,
      in_depth           in pls_integer,
      in_limit           in pls_integer
   ) return clob is
      l_tenant_id    ctx_tenant.tenant_id%type;
      l_query_vector clob;
      l_items        clob;
      l_result       clob;
   begin
      l_tenant_id := ctx_session.require_tenant();
      -- the caller's query vector, else the in-database model's (if the schema has MINILM), else none
      if in_query_embedding is not null then
         l_query_vector := in_query_embedding;
      else
         l_query_vector := question_embedding(in_question => in_question);
      end if;
      l_items := fused_items(
         in_lexical => lexical_ranks(
                          in_tenant_id       => l_tenant_id,
                          in_scn             => in_scn,
                          in_user_id         => in_user_id,
                          in_agent_id        => in_agent_id,
                          in_thread_id       => in_thread_id,
                          in_evaluation_time => in_evaluation_time,
                          in_terms           => text_query(in_question => in_question),
                          in_depth           => in_depth
                       ),
         in_vector  => vector_ranks(
                          in_tenant_id       => l_tenant_id,
                          in_scn             => in_scn,
                          in_user_id         => in_user_id,
                          in_agent_id        => in_agent_id,
                          in_thread_id       => in_thread_id,
                          in_evaluation_time => in_evaluation_time,
                          in_vector          => l_query_vector,
                          in_depth           => in_depth
                       ),
         in_limit   => in_limit
      );
      select json_object(
                'method' value case when l_query_vector is null then co_method_lexical else co_method_hybrid end,
                'items' value l_items format json
                returning clob
             )
        into l_result
        from dual;
      return l_result;
   end retrieve_evidence;

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
      in_evidence        in clob default null
   ) return clob is
      l_tenant_id      ctx_tenant.tenant_id%type;
      l_scn            number;
      l_scores         clob;
      l_evidence       clob;
      l_query_vector   clob;
      l_method         varchar2(30);
      l_scorer         varchar2(64);
      l_use_reranker   pls_integer := 0;
      l_budget_id      guideline_memory.id%type;
      l_budget_version guideline_memory.version%type;
      l_budget_json    clob;
      l_budget_element json_element_t;
      l_budget         json_object_t;
      l_weights        json_object_t;
      l_element        json_element_t;
      l_shares         json_object_t;
      l_budget_name    varchar2(400);
      l_w_rerank       number;
      l_w_confidence   number;
      l_w_recency      number;
      l_recency_days   number;
      l_require        pls_integer;
      l_result         clob;
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
      if in_evaluation_time is null then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_evaluation_time must be given'
         );
      end if;
      l_evidence := evidence_items(in_evidence => in_evidence);
      l_scores := score_rows(in_scores => in_scores);
      -- the relevance scorer: the caller's logits, else the in-database cross-encoder, else the lexical scorer
      if in_scores is not null then
         l_scorer := co_external_scorer;
      else
         l_use_reranker := reranker_present();
         l_scorer := case when l_use_reranker = 1 then co_reranker_scorer else co_lexical_scorer end;
      end if;

      -- One point in time for every read: a new SCN, or the recorded one (replay).
      if in_snapshot is null then
         l_scn := sys.dbms_flashback.get_system_change_number();
      elsif regexp_like(in_snapshot, co_snapshot_pattern) then
         l_scn := to_number(in_snapshot);
      else
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_snapshot,
            in_detail => ctx_errors.quoted(in_text => substr(in_snapshot, 1, 200)) || ' is not an SCN from capture_snapshot'
         );
      end if;

      begin
         -- Step: budget. The narrowest context_budget guideline in effect for this scope at the evaluation time.
         begin
            select g.id, g.version, json_serialize(g.content_json returning clob)
              into l_budget_id, l_budget_version, l_budget_json
              from guideline_memory as of scn l_scn g
             where g.tenant_id = l_tenant_id
               and g.guideline_key = co_budget_key
               and (g.user_id is null or g.user_id = in_user_id)
               and (g.agent_id is null or g.agent_id = in_agent_id)
               and (g.thread_id is null or g.thread_id = in_thread_id)
               and g.deleted_at is null
               and g.valid_from <= in_evaluation_time
               and (g.valid_until is null or g.valid_until > in_evaluation_time)
             order by nvl2(g.user_id, 1, 0) + nvl2(g.agent_id, 1, 0) + nvl2(g.thread_id, 1, 0) desc,
                      g.valid_from desc,
                      g.id
             fetch first 1 row only;
         exception
            when no_data_found then
               ctx_errors.raise_error(
                  in_code   => ctx_errors.co_budget_missing,
                  in_detail => 'no context_budget guideline is in effect for agent ' || ctx_errors.quoted(in_text => in_agent_id)
                               || ' at ' || message_time(in_timestamp => in_evaluation_time)
               );
         end;
         -- The database checks only the budget fields it uses itself; the Python layer validates the rest.
         l_budget_name := 'guideline ' || l_budget_id || ' version ' || to_char(l_budget_version);
         if l_budget_json is not null and to_char(substr(l_budget_json, 1, 1)) = '{' then
            l_budget_element := json_element_t.parse(l_budget_json);
         end if;
         if l_budget_element is null or not l_budget_element.is_object() then
            ctx_errors.raise_error(in_code => ctx_errors.co_invalid_budget, in_detail => l_budget_name || ': content_json must be a JSON object');
         end if;
         l_budget := treat(l_budget_element as json_object_t);
         l_element := l_budget.get('weights');
         if l_element is not null and l_element.is_object() then
            l_weights := treat(l_element as json_object_t);
         end if;
         l_w_rerank := budget_weight(
            in_budget_id => l_budget_id, in_budget_version => l_budget_version, in_weights => l_weights,
            in_field => 'rerank'
         );
         l_w_confidence := budget_weight(
            in_budget_id => l_budget_id, in_budget_version => l_budget_version, in_weights => l_weights,
            in_field => 'confidence'
         );
         l_w_recency := budget_weight(
            in_budget_id => l_budget_id, in_budget_version => l_budget_version, in_weights => l_weights,
            in_field => 'recency'
         );
         l_element := l_budget.get('recency_days');
         if l_element is not null and l_element.is_number() then
            l_recency_days := l_budget.get_number('recency_days');
         end if;
         if l_recency_days is null or l_recency_days <= 0 then
            ctx_errors.raise_error(in_code => ctx_errors.co_invalid_budget, in_detail => l_budget_name || ': recency_days must be a number > 0');
         end if;
         l_element := l_budget.get('shares');
         if l_element is not null and l_element.is_object() then
            l_shares := treat(l_element as json_object_t);
         end if;
         -- as in PostgreSQL, where `shares ? NULL` is NULL: a NULL intent is not rejected here
         if l_shares is null or (in_intent is not null and not l_shares.has(in_intent)) then
            ctx_errors.raise_error(
               in_code   => ctx_errors.co_unknown_intent,
               in_detail => ctx_errors.quoted(in_text => in_intent) || ' is not one of the intents of budget ' || l_budget_id
                            || ' version ' || to_char(l_budget_version) || ' ('
                            || coalesce(case when l_shares is not null then sorted_keys(in_object => l_shares) end, 'none')
                            || ')'
            );
         end if;
         l_element := l_budget.get('require_current_facts');
         if l_element is null then
            l_require := 1;
         elsif l_element.is_boolean() then
            l_require := case when l_budget.get_boolean('require_current_facts') then 1 else 0 end;
         else
            ctx_errors.raise_error(
               in_code   => ctx_errors.co_invalid_budget,
               in_detail => l_budget_name || ': require_current_facts must be true or false'
            );
         end if;

         -- Step: retrieval. Evidence candidates are a bounded set: hybrid retrieval at the SCN, or, on replay,
         -- exactly the items the manifest recorded (in_evidence).
         if in_evidence is not null then
            l_method := co_method_recorded;
         else
            -- the caller's query vector, else the in-database model's (if the schema has MINILM), else none
            if in_query_embedding is not null then
               l_query_vector := in_query_embedding;
            else
               l_query_vector := question_embedding(in_question => in_question);
            end if;
            l_method := case when l_query_vector is null then co_method_lexical else co_method_hybrid end;
            l_evidence := fused_items(
               in_lexical => lexical_ranks(
                                in_tenant_id       => l_tenant_id,
                                in_scn             => l_scn,
                                in_user_id         => in_user_id,
                                in_agent_id        => in_agent_id,
                                in_thread_id       => in_thread_id,
                                in_evaluation_time => in_evaluation_time,
                                in_terms           => text_query(in_question => in_question),
                                in_depth           => co_retrieval_depth
                             ),
               in_vector  => vector_ranks(
                                in_tenant_id       => l_tenant_id,
                                in_scn             => l_scn,
                                in_user_id         => in_user_id,
                                in_agent_id        => in_agent_id,
                                in_thread_id       => in_thread_id,
                                in_evaluation_time => in_evaluation_time,
                                in_vector          => l_query_vector,
                                in_depth           => co_retrieval_depth
                             ),
               in_limit   => co_evidence_limit
            );
         end if;

         -- Step: score, with the in-database cross-encoder when it is used (reranker_scores): the selection
         -- runs once lexically, the model scores exactly its candidates, and it runs once more with those
         -- logits, at the same SCN with the same evidence, as if they had been passed as in_scores.
         loop
            with
            -- The retrieval items as rows (PostgreSQL: the CTE retrieved).
            retrieved as (
               select e.ret_type as memory_type, e.ret_id as id, e.ret_version as version,
                      e.lexical_rank, e.vector_rank, e.fused
                 from json_table(l_evidence, '$[*]'
                         columns (
                            ret_type     varchar2(32)  path '$.ref[0]',
                            ret_id       varchar2(128) path '$.ref[1]',
                            ret_version  number        path '$.ref[2]',
                            lexical_rank number        path '$.lexical_rank',
                            vector_rank  number        path '$.vector_rank',
                            fused        number        path '$.fused'
                         )
                      ) e
            ),
            -- The row source (PostgreSQL: the view memory_row): the nine memory tables, each read AS OF the one
            -- SCN (a flashback clause cannot follow a WITH query name, so it sits on every table here). JSON
            -- columns travel as CLOB text; VPD and the explicit tenant filter keep other tenants out.
            memory_rows as (
               select cast('guideline' as varchar2(32)) as memory_type,
                      cast('guideline_memory' as varchar2(32)) as table_name,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob) as content_json,
                      json_serialize(t.source_refs returning clob) as source_refs,
                      cast(null as number) as confidence,
                      cast(t.guideline_key as varchar2(512)) as key_name,
                      cast(null as varchar2(256)) as subject,
                      cast(null as varchar2(256)) as predicate,
                      cast(null as varchar2(512)) as title,
                      cast(null as number) as turn_index,
                      cast(null as varchar2(16)) as role,
                      cast(null as varchar2(64)) as event_type,
                      to_clob(null) as extra,
                      t.content_tokens
                 from guideline_memory as of scn l_scn t
                where t.tenant_id = l_tenant_id
               union all
               select 'persona', 'persona_memory',
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob),
                      json_serialize(t.source_refs returning clob),
                      null, t.persona_key, null, null, null, null, null, null, to_clob(null),
                      t.content_tokens
                 from persona_memory as of scn l_scn t
                where t.tenant_id = l_tenant_id
               union all
               select 'toolbox', 'toolbox_memory',
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob),
                      json_serialize(t.source_refs returning clob),
                      null, t.tool_name, null, null, null, null, null, null,
                      json_object(
                         'tool_schema' value t.tool_schema,
                         'usage_notes' value t.usage_notes,
                         'tool_handler' value t.tool_handler,
                         'access_policy' value t.access_policy
                         null on null returning clob
                      ),
                      t.content_tokens
                 from toolbox_memory as of scn l_scn t
                where t.tenant_id = l_tenant_id
               union all
               select 'entity', 'entity_memory',
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob),
                      json_serialize(t.source_refs returning clob),
                      t.confidence, null, t.subject, t.predicate, null, null, null, null, to_clob(null),
                      t.content_tokens
                 from entity_memory as of scn l_scn t
                where t.tenant_id = l_tenant_id
               union all
               select 'workflow', 'workflow_memory',
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob),
                      json_serialize(t.source_refs returning clob),
                      null, t.workflow_key, null, null, null, null, null, null, to_clob(null),
                      t.content_tokens
                 from workflow_memory as of scn l_scn t
                where t.tenant_id = l_tenant_id
               union all
               select 'kb_document', 'knowledge_base_document',
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob),
                      json_serialize(t.source_refs returning clob),
                      null, t.collection, null, null, t.title, null, null, null,
                      json_object(
                         'source_uri' value t.source_uri,
                         'published_at' value ctx_assembly.iso_utc(in_timestamp => t.published_at)
                         null on null returning clob
                      ),
                      t.content_tokens
                 from knowledge_base_document as of scn l_scn t
                where t.tenant_id = l_tenant_id
               union all
               select 'kb_chunk', 'knowledge_base_chunk',
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob),
                      json_serialize(t.source_refs returning clob),
                      null, t.document_id, null, null, t.title, t.chunk_index, null, null,
                      json_object('document_version' value t.document_version null on null returning clob),
                      t.content_tokens
                 from knowledge_base_chunk as of scn l_scn t
                where t.tenant_id = l_tenant_id
               union all
               select 'conversation', 'conversation_memory',
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob),
                      json_serialize(t.source_refs returning clob),
                      null, null, null, null, null, t.turn_index, t.role, t.event_type, to_clob(null),
                      t.content_tokens
                 from conversation_memory as of scn l_scn t
                where t.tenant_id = l_tenant_id
               union all
               select 'summary', 'summarization_memory',
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob),
                      json_serialize(t.source_refs returning clob),
                      null, t.summary_key, null, null, null, null, null, null,
                      json_object(
                         'period_start' value ctx_assembly.iso_utc(in_timestamp => t.period_start),
                         'period_end' value ctx_assembly.iso_utc(in_timestamp => t.period_end)
                         null on null returning clob
                      ),
                      t.content_tokens
                 from summarization_memory as of scn l_scn t
                where t.tenant_id = l_tenant_id
            ),
            -- Row versions erased now. Read AS OF an earlier SCN (replay), undo still holds their text; the
            -- contract never returns it (PostgreSQL: the history copies are deleted with the erasure).
            erased_now as (
               select cast('guideline' as varchar2(32)) as memory_type, e.id, e.version
                 from guideline_memory e
                where e.tenant_id = l_tenant_id
                  and e.status = 'erased'
               union all
               select 'persona', e.id, e.version
                 from persona_memory e
                where e.tenant_id = l_tenant_id
                  and e.status = 'erased'
               union all
               select 'toolbox', e.id, e.version
                 from toolbox_memory e
                where e.tenant_id = l_tenant_id
                  and e.status = 'erased'
               union all
               select 'entity', e.id, e.version
                 from entity_memory e
                where e.tenant_id = l_tenant_id
                  and e.status = 'erased'
               union all
               select 'workflow', e.id, e.version
                 from workflow_memory e
                where e.tenant_id = l_tenant_id
                  and e.status = 'erased'
               union all
               select 'kb_document', e.id, e.version
                 from knowledge_base_document e
                where e.tenant_id = l_tenant_id
                  and e.status = 'erased'
               union all
               select 'kb_chunk', e.id, e.version
                 from knowledge_base_chunk e
                where e.tenant_id = l_tenant_id
                  and e.status = 'erased'
               union all
               select 'conversation', e.id, e.version
                 from conversation_memory e
                where e.tenant_id = l_tenant_id
                  and e.status = 'erased'
               union all
               select 'summary', e.id, e.version
                 from summarization_memory e
                where e.tenant_id = l_tenant_id
                  and e.status = 'erased'
            ),
            -- Step: scope. Other tenants are invisible (VPD); user, agent and thread must match or be NULL (wider).
            -- A user's turns in other threads are recalled history; events (manifests, tool calls) are not memory.
            step_scope as (
               select r.*,
                      nvl2(r.user_id, 1, 0) + nvl2(r.agent_id, 1, 0) + nvl2(r.thread_id, 1, 0) as scope_depth,
                      ctx_assembly.authority(in_memory_type => r.memory_type) as authority_rank,
                      case r.memory_type
                         when 'guideline' then 'guidelines'
                         when 'persona' then 'persona'
                         when 'toolbox' then 'tools'
                         when 'entity' then 'durable_facts'
                         when 'workflow' then 'durable_facts'
                         when 'kb_document' then 'evidence'
                         when 'kb_chunk' then 'evidence'
                         when 'summary' then 'recalled_history'
                         when 'conversation' then
                            case when r.thread_id = in_thread_id then 'volatile_tail' else 'recalled_history' end
                      end as slice
                 from memory_rows r
                where (r.user_id is null or r.user_id = in_user_id)
                  and (r.agent_id is null or r.agent_id = in_agent_id)
                  and (r.thread_id is null or r.thread_id = in_thread_id
                       or (r.memory_type = 'conversation' and r.user_id = in_user_id))
                  and (r.memory_type <> 'conversation' or r.event_type = 'message')
                  and (r.memory_type not in ('kb_document', 'kb_chunk')
                       or exists (select 1 from retrieved x where x.memory_type = r.memory_type and x.id = r.id))
                  and not (r.memory_type = 'guideline' and r.key_name = co_budget_key)
                  and not exists (select 1
                                    from erased_now x
                                   where x.memory_type = r.memory_type and x.id = r.id and x.version = r.version)
            ),
            -- Step: lifecycle, at the one evaluation time. NULL reason = in effect.
            step_lifecycle as (
               select s.*,
                      case
                         when s.status = 'erased' then 'erased'
                         when s.deleted_at is not null then 'deleted'
                         when s.valid_from > in_evaluation_time then 'not_yet_effective'
                         when s.valid_until is not null and s.valid_until <= in_evaluation_time then
                            case when s.status = 'superseded' then 'superseded' else 'expired' end
                      end as lifecycle_reason
                 from step_scope s
            ),
            effective_keys as (
               select l.*,
                      ctx_assembly.normalized_text(in_text => l.content) as norm_text,
                      ctx_assembly.claim_key(
                         in_subject      => l.subject,
                         in_predicate    => l.predicate,
                         in_content_json => l.content_json
                      ) as claim_key
                 from step_lifecycle l
                where l.lifecycle_reason is null
            ),
            -- The identities as sha256 of their text: Oracle cannot partition or join on a CLOB.
            effective as (
               select k.*,
                      ctx_assembly.sha256_hex(in_text => k.norm_text) as norm_hash,
                      case when k.claim_key is not null then ctx_assembly.sha256_hex(in_text => k.claim_key) end
                         as claim_hash
                 from effective_keys k
            ),
            -- Fixed slices: per (type, key) the narrowest scope wins; the rest are excluded as conflicts.
            fixed_ranked as (
               select e.*,
                      row_number() over (
                         partition by e.memory_type, e.key_name
                         order by e.scope_depth desc, e.valid_from desc, e.id
                      ) as key_rank
                 from effective e
                where e.slice in ('guidelines', 'persona', 'tools')
            ),
            dynamic_rows as (
               select e.*
                 from effective e
                where e.slice not in ('guidelines', 'persona', 'tools')
            ),
            -- Step: dedup. Identical normalized text keeps the most authoritative copy, where claim identities agree.
            dedup_ranked as (
               select d.*,
                      row_number() over (
                         partition by d.norm_hash
                         order by d.authority_rank, d.scope_depth desc, d.valid_from desc, d.table_name, d.id
                      ) as norm_rank
                 from dynamic_rows d
            ),
            step_dedup as (
               select d.*,
                      case
                         when not (d.memory_type = k.memory_type and d.id = k.id and d.version = k.version)
                              and (d.claim_hash is null or k.claim_hash is null or d.claim_hash = k.claim_hash)
                         then 1
                         else 0
                      end as is_duplicate,
                      k.memory_type as kept_type,
                      k.id as kept_id,
                      k.version as kept_version
                 from dedup_ranked d
                 join dedup_ranked k
                   on k.norm_hash = d.norm_hash
                  and k.norm_rank = 1
            ),
            -- Step: conflicts. Within a claim, canonical facts beat derived claims and the narrower scope wins.
            conflict_ranked as (
               select d.*,
                      case
                         when d.claim_hash is not null then
                            row_number() over (
                               partition by d.claim_hash
                               order by d.authority_rank, d.scope_depth desc, d.valid_from desc, d.table_name, d.id
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
            -- History that cites a version no longer in effect stays, labelled, pointing at the current version.
            cited_sources as (
               select s.memory_type, s.id, s.version, j.ref_type, j.ref_id, j.ref_version
                 from survivors s,
                      json_table(s.source_refs, '$[*]'
                         columns (
                            ref_type    varchar2(32)  path '$.type',
                            ref_id      varchar2(128) path '$.id',
                            ref_version number        path '$.version'
                         )
                      ) j
                where s.memory_type in ('summary', 'conversation')
            ),
            annotation_links as (
               select a.memory_type, a.id, a.version,
                      src.memory_type as src_type,
                      src.id as src_id,
                      src.version as src_version,
                      cur.memory_type as cur_type,
                      cur.id as cur_id,
                      cur.version as cur_version,
                      cur.content as cur_content
                 from cited_sources a
                 join step_lifecycle src
                   on src.memory_type = a.ref_type
                  and src.id = a.ref_id
                  and src.version = a.ref_version
                  and src.lifecycle_reason is not null
                 left join survivors cur
                   on cur.memory_type = src.memory_type
                  and cur.id = src.id
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
            required_refs as (
               select distinct a.cur_type, a.cur_id, a.cur_version
                 from annotation_links a
                where l_require = 1
                  and a.cur_id is not null
            ),
            -- Step: score. priority = w_rerank * sigmoid(logit) + w_confidence * confidence + w_recency * recency.
            scored_logit as (
               select s.*,
                      coalesce(x.score_logit, ctx_assembly.lexical_logit(in_query => in_question, in_text => s.content))
                         as logit,
                      in_evaluation_time - s.valid_from as age
                 from survivors s
                 left join json_table(l_scores, '$[*]'
                         columns (
                            score_key   varchar2(4000) path '$.k',
                            score_logit number         path '$.v'
                         )
                      ) x
                   on x.score_key = s.memory_type || ':' || s.id || ':' || to_char(s.version)
            ),
            step_score as (
               select p.*,
                      round(1 / (1 + exp(-p.logit)), co_score_places) as rerank,
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
                 from scored_logit p
            ),
            prioritized as (
               select p.*,
                      round(
                         l_w_rerank * p.rerank + l_w_confidence * p.confidence_score + l_w_recency * p.recency,
                         co_score_places
                      ) as priority
                 from step_score p
            ),
            -- Step: tie-break. Priority desc, valid_from desc, source table, row id; the tail keeps the latest turns.
            ordered_rows as (
               select p.*,
                      row_number() over (
                         partition by p.slice
                         order by case when p.slice = 'volatile_tail' then p.turn_index end desc nulls last,
                                  case when p.slice <> 'volatile_tail' then p.priority end desc,
                                  p.valid_from desc,
                                  p.table_name,
                                  p.id,
                                  p.version
                      ) as slice_rank
                 from prioritized p
            ),
            -- The summary tier: the newest active compression of each row version (read AS OF the same SCN).
            latest_compression as (
               select c.source_type, c.source_id, c.source_version, c.content, c.source_hash, c.id, c.version,
                      c.content_tokens
                 from (
                         select cc.source_type, cc.source_id, cc.source_version, cc.content, cc.source_hash, cc.id,
                                cc.version, cc.content_tokens,
                                row_number() over (
                                   partition by cc.source_type, cc.source_id, cc.source_version
                                   order by cc.valid_from desc, cc.id
                                ) as compression_rank
                           from context_compression as of scn l_scn cc
                          where cc.tenant_id = l_tenant_id
                            and cc.status = 'active'
                            and cc.deleted_at is null
                            -- a compression erased since the SCN is not returned (see erased_now)
                            and not exists (select 1
                                              from context_compression n
                                             where n.tenant_id = cc.tenant_id and n.id = cc.id
                                               and n.version = cc.version and n.status = 'erased')
                      ) c
                where c.compression_rank = 1
            ),
            tiered as (
               select o.*,
                      cm.id as compression_id,
                      cm.version as compression_version,
                      cm.content as compression_content,
                      cm.content_tokens as compression_tokens,
                      -- CASE evaluates in order: the content is hashed only where a compression exists
                      case
                         when cm.id is null then 0
                         when cm.source_hash = ctx_assembly.sha256_hex(in_text => o.content) then 1
                         else 0
                      end as summary_matches
                 from ordered_rows o
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
                         'status' value
                            case t.memory_type
                               when 'entity' then 'current'
                               when 'workflow' then 'current'
                               when 'summary' then 'historical'
                               when 'conversation' then 'unverified'
                               else 'evidence'
                            end,
                         'required' value case when q.cur_id is not null then 'true' else 'false' end format json,
                         'selection_rank' value t.slice_rank,
                         'role' value t.role,
                         'turn_index' value t.turn_index,
                         'title' value coalesce(t.title, t.subject, t.key_name),
                         'valid_from' value ctx_assembly.iso_utc(in_timestamp => t.valid_from),
                         -- retrieved evidence also carries its retrieval ranks and fused score
                         'scores' value
                            case
                               when rt.id is not null then
                                  json_object(
                                     'rerank_logit' value t.logit,
                                     'rerank' value t.rerank,
                                     'confidence' value t.confidence_score,
                                     'recency' value t.recency,
                                     'priority' value t.priority,
                                     'lexical_rank' value rt.lexical_rank,
                                     'vector_rank' value rt.vector_rank,
                                     'fused' value rt.fused
                                     null on null returning clob
                                  )
                               else
                                  json_object(
                                     'rerank_logit' value t.logit,
                                     'rerank' value t.rerank,
                                     'confidence' value t.confidence_score,
                                     'recency' value t.recency,
                                     'priority' value t.priority
                                     null on null returning clob
                                  )
                            end format json,
                         'tiers' value json_object(
                            'full' value t.content,
                            'summary' value case when t.summary_matches = 1 then t.compression_content end,
                            'pointer' value ctx_assembly.pointer_line(in_text => t.content)
                            null on null returning clob
                         ),
                         'summary_ref' value
                            case
                               when t.summary_matches = 1
                               then json_array('compression', t.compression_id, t.compression_version)
                            end format json,
                         -- stored o200k_base counts of the full and summary texts (NULL: the fitter counts them)
                         'content_tokens' value t.content_tokens,
                         'summary_tokens' value case when t.summary_matches = 1 then t.compression_tokens end,
                         'annotations' value coalesce(a.notes, to_clob('[]')) format json
                         null on null returning clob
                      ) as candidate
                 from tiered t
                 left join annotations a
                   on a.memory_type = t.memory_type
                  and a.id = t.id
                  and a.version = t.version
                 left join required_refs q
                   on q.cur_type = t.memory_type
                  and q.cur_id = t.id
                  and q.cur_version = t.version
                 left join retrieved rt
                   on rt.memory_type = t.memory_type
                  and rt.id = t.id
                  and rt.version = t.version
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
                                  f.scope_depth,
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
            )
            select json_object(
                      'engine' value co_engine,
                      'snapshot' value coalesce(in_snapshot, to_char(l_scn)),
                      'tenant_id' value l_tenant_id,
                      'evaluation_time' value ctx_assembly.iso_utc(in_timestamp => in_evaluation_time),
                      'selection_version' value co_selection_version,
                      'scorer' value l_scorer,
                      'budget' value json_object(
                         'ref' value json_array('guideline', l_budget_id, l_budget_version),
                         'content_json' value l_budget_json format json
                         null on null returning clob
                      ),
                      'fixed' value coalesce((select fi.items from fixed_items fi), to_clob('[]')) format json,
                      'candidates' value coalesce(
                         (select json_arrayagg(c.candidate format json order by c.slice, c.slice_rank returning clob)
                            from candidates c),
                         to_clob('[]')
                      ) format json,
                      'required_refs' value coalesce(
                         (select json_arrayagg(
                                    json_array(q.cur_type, q.cur_id, q.cur_version)
                                    order by q.cur_type, q.cur_id, q.cur_version
                                    returning clob
                                 )
                            from required_refs q),
                         to_clob('[]')
                      ) format json,
                      'retrieval' value json_object(
                         'method' value l_method,
                         'depth' value co_retrieval_depth,
                         'limit' value co_evidence_limit,
                         'items' value coalesce(
                            (select json_arrayagg(
                                       json_object(
                                          'ref' value json_array(x.memory_type, x.id, x.version),
                                          'lexical_rank' value x.lexical_rank,
                                          'vector_rank' value x.vector_rank,
                                          'fused' value x.fused
                                          null on null returning clob
                                       ) format json
                                       order by x.fused desc, x.memory_type, x.id, x.version
                                       returning clob
                                    )
                               from retrieved x),
                            to_clob('[]')
                         ) format json
                         null on null returning clob
                      ),
                      'excluded' value coalesce((select ei.items from excluded_items ei), to_clob('[]')) format json
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

   -- the member in_key of in_value when in_value is an object, else NULL
   function object_member(in_value in json_element_t, in_key in varchar2) return json_element_t is
      l_object json_object_t;
   begin
      if in_value is null or not in_value.is_object() then
         return null;
      end if;
      l_object := treat(in_value as json_object_t);
      return l_object.get(in_key);
   end object_member;

   -- a [type, id, version] reference, or invalid_manifest naming the relation
   function checked_ref(in_ref in json_element_t, in_relation in varchar2) return json_array_t is
      l_text varchar2(4000);
      l_ref  json_array_t;
   begin
      if in_ref is not null and in_ref.is_array() then
         l_ref := treat(in_ref as json_array_t);
         if l_ref.get_size() = 3 then
            return l_ref;
         end if;
      end if;
      if in_ref is not null then
         l_text := substr(in_ref.to_string(), 1, 1000);
      end if;
      ctx_errors.raise_error(
         in_code   => ctx_errors.co_invalid_manifest,
         in_detail => 'a ' || in_relation || ' reference must be [type, id, version], not ' || l_text
      );
      return null;
   end checked_ref;

   -- PostgreSQL's ->> of one element of a reference: a string unquoted, another value as JSON text
   function element_text(in_ref in json_array_t, in_index in pls_integer) return varchar2 is
      l_value json_element_t;
   begin
      l_value := in_ref.get(in_index);
      if l_value is null or l_value.is_null() then
         return null;
      elsif l_value.is_string() then
         return in_ref.get_string(in_index);
      end if;
      return l_value.to_string();
   end element_text;

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

   -- one context_source_ref row of the manifest, through CTX_MEMORY like every other write
   procedure insert_source_ref(
      in_manifest_id in varchar2,
      in_number      in pls_integer,
      in_user_id     in varchar2,
      in_agent_id    in varchar2,
      in_thread_id   in varchar2,
      in_ref         in json_array_t,
      in_relation    in varchar2
   ) is
      l_record json_object_t := json_object_t();
      l_id     context_source_ref.id%type;
   begin
      l_record.put('id', in_manifest_id || ':' || to_char(in_number));
      -- the manifest's scope, so a session whose claim names a user and agent writes rows it may write
      if in_user_id is null then
         l_record.put_null('user_id');
      else
         l_record.put('user_id', in_user_id);
      end if;
      if in_agent_id is null then
         l_record.put_null('agent_id');
      else
         l_record.put('agent_id', in_agent_id);
      end if;
      if in_thread_id is null then
         l_record.put_null('thread_id');
      else
         l_record.put('thread_id', in_thread_id);
      end if;
      l_record.put('derived_type', co_derived_manifest);
      l_record.put('derived_id', in_manifest_id);
      l_record.put('derived_version', 1);
      l_record.put('source_type', in_ref.get(0));
      l_record.put('source_id', in_ref.get(1));
      l_record.put('source_version', in_ref.get(2));
      l_record.put('relation', in_relation);
      l_record.put(
         'content',
         'manifest ' || in_manifest_id || ' ' || in_relation || ' ' || element_text(in_ref => in_ref, in_index => 0)
         || ':' || element_text(in_ref => in_ref, in_index => 1) || '@' || element_text(in_ref => in_ref, in_index => 2)
      );
      l_id := ctx_memory.put_memory(in_memory_type => co_source_ref, in_record => l_record.to_clob());
   end insert_source_ref;

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
      l_record      json_object_t := json_object_t();
      l_count       pls_integer := 0;
      l_last        pls_integer;
      l_last_note   pls_integer;
      l_written     conversation_memory.id%type;
   begin
      l_tenant_id := ctx_session.require_tenant();
      l_id := co_manifest_prefix || lower(rawtohex(sys_guid()));
      if in_manifest is null then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_manifest, in_detail => co_not_object);
      end if;
      begin
         l_element := json_element_t.parse(in_manifest);
      exception
         when e_json_syntax then
            ctx_errors.raise_error(in_code => ctx_errors.co_invalid_manifest, in_detail => co_not_object);
      end;
      if not l_element.is_object() then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_manifest, in_detail => co_not_object);
      end if;
      l_manifest := treat(l_element as json_object_t);
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
      l_value := l_manifest.get('scope');
      if l_value is not null and l_value.is_object() then
         l_scope := treat(l_value as json_object_t);
         l_user_id := member_text(in_object => l_scope, in_key => 'user_id');
         l_agent_id := member_text(in_object => l_scope, in_key => 'agent_id');
         l_thread_id := member_text(in_object => l_scope, in_key => 'thread_id');
      end if;
      l_tenant_id := ctx_session.require_scope(in_user_id => l_user_id, in_agent_id => l_agent_id);

      -- The context_manifest event.
      l_record.put('id', l_id);
      if l_user_id is null then
         l_record.put_null('user_id');
      else
         l_record.put('user_id', l_user_id);
      end if;
      if l_agent_id is null then
         l_record.put_null('agent_id');
      else
         l_record.put('agent_id', l_agent_id);
      end if;
      if l_thread_id is null then
         l_record.put_null('thread_id');
      else
         l_record.put('thread_id', l_thread_id);
      end if;
      l_record.put('role', co_event_role);
      l_record.put('event_type', co_manifest_event);
      l_record.put(
         'content',
         'context manifest: ' || to_char(l_memories.get_size()) || ' memories rendered, '
         || to_char(l_excluded.get_size()) || ' excluded, request ' || l_hash
      );
      l_record.put('content_json', l_manifest);
      l_written := ctx_memory.put_memory(in_memory_type => co_conversation, in_record => l_record.to_clob());

      -- Every row the window depended on, so retention and erasure can follow the sources:
      -- 1 rendered, 2 compression, 3 annotation_source (memory order, then note order), 4 excluded, 5 budget.
      l_last := l_memories.get_size() - 1;
      for i in 0 .. l_last loop
         l_value := l_memories.get(i);
         l_count := l_count + 1;
         insert_source_ref(
            in_manifest_id => l_id,
            in_number      => l_count,
            in_user_id     => l_user_id,
            in_agent_id    => l_agent_id,
            in_thread_id   => l_thread_id,
            in_ref         => checked_ref(
                                 in_ref      => object_member(in_value => l_value, in_key => 'ref'),
                                 in_relation => 'rendered'
                              ),
            in_relation    => 'rendered'
         );
      end loop;
      for i in 0 .. l_last loop
         l_value := object_member(in_value => l_memories.get(i), in_key => 'summary_ref');
         if l_value is not null and l_value.is_array() then
            l_count := l_count + 1;
            insert_source_ref(
               in_manifest_id => l_id,
               in_number      => l_count,
               in_user_id     => l_user_id,
               in_agent_id    => l_agent_id,
               in_thread_id   => l_thread_id,
               in_ref         => checked_ref(in_ref => l_value, in_relation => 'compression'),
               in_relation    => 'compression'
            );
         end if;
      end loop;
      for i in 0 .. l_last loop
         l_value := object_member(in_value => l_memories.get(i), in_key => 'annotation_refs');
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
               l_value := l_notes.get(j);
               l_count := l_count + 1;
               insert_source_ref(
                  in_manifest_id => l_id,
                  in_number      => l_count,
                  in_user_id     => l_user_id,
                  in_agent_id    => l_agent_id,
                  in_thread_id   => l_thread_id,
                  in_ref         => checked_ref(
                                       in_ref      => object_member(in_value => l_value, in_key => 'source'),
                                       in_relation => 'annotation_source'
                                    ),
                  in_relation    => 'annotation_source'
               );
            end loop;
         end if;
      end loop;
      l_last := l_excluded.get_size() - 1;
      for i in 0 .. l_last loop
         l_value := l_excluded.get(i);
         l_count := l_count + 1;
         insert_source_ref(
            in_manifest_id => l_id,
            in_number      => l_count,
            in_user_id     => l_user_id,
            in_agent_id    => l_agent_id,
            in_thread_id   => l_thread_id,
            in_ref         => checked_ref(
                                 in_ref      => object_member(in_value => l_value, in_key => 'ref'),
                                 in_relation => 'excluded'
                              ),
            in_relation    => 'excluded'
         );
      end loop;
      l_count := l_count + 1;
      insert_source_ref(
         in_manifest_id => l_id,
         in_number      => l_count,
         in_user_id     => l_user_id,
         in_agent_id    => l_agent_id,
         in_thread_id   => l_thread_id,
         in_ref         => l_budget_ref,
         in_relation    => 'budget'
      );
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
end ctx_assembly;
/
