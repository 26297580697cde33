--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-retrieval-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_retrieval is
   -- PostgreSQL: db/postgresql/internal/ctx_retrieval.sql. Every statement is static, every value a bind, every
   -- table named in the code, except the question's embedding (VECTOR_EMBEDDING names its model in the SQL).

   -- the retrieved slices (the durable facts are the third)
   co_evidence         constant varchar2(32) := ctx_rules.co_evidence;
   co_history          constant varchar2(32) := ctx_rules.co_history;
   co_score_places     constant pls_integer := ctx_rules.co_score_places;
   -- the in-database embedding model used when the caller gives no query embedding (all-MiniLM-L6-v2)
   co_embedding_model  constant varchar2(30) := 'MINILM';
   -- reciprocal rank fusion: 1 / (k + rank) per retriever, a missing rank adding 0
   co_rrf_k            constant pls_integer := 60;
   -- The lexical probe: the question's words, the rarest first (by the documents they match in the slice's
   -- CONTEXT indexes, all tenants: the postings Oracle Text reads), while their matches stay within this many.
   co_probe_postings   constant pls_integer := 20000;
   co_probe_words      constant pls_integer := 12;
   -- Oracle Text: each word escaped in braces, joined with ACCUM, so a row matching more words scores higher
   co_text_open        constant varchar2(1) := '{';
   co_text_close       constant varchar2(1) := '}';
   co_text_accum       constant varchar2(7) := ' ACCUM ';
   co_max_word_length  constant pls_integer := 64;
   -- the question's words: runs of ASCII letters and digits, lower-cased, at least 3 long (an explicit list, no
   -- range: a bracket range follows NLS_SORT in Oracle)
   co_word_pattern     constant varchar2(50) := '[0123456789abcdefghijklmnopqrstuvwxyz]+';
   co_min_word_length  constant pls_integer := 3;
   -- the CONTEXT indexes of the searchable tables (CTX_QUERY.COUNT_HITS names them)
   co_chunk_text_index        constant varchar2(128) := 'KNOWLEDGE_BASE_CHUNK_TEXT_IX';
   co_document_text_index     constant varchar2(128) := 'KNOWLEDGE_BASE_DOCUMENT_TEXT_IX';
   co_entity_text_index       constant varchar2(128) := 'ENTITY_MEMORY_TEXT_IX';
   co_workflow_text_index     constant varchar2(128) := 'WORKFLOW_MEMORY_TEXT_IX';
   co_conversation_text_index constant varchar2(128) := 'CONVERSATION_MEMORY_TEXT_IX';
   co_summary_text_index      constant varchar2(128) := 'SUMMARIZATION_MEMORY_TEXT_IX';

   type t_term_rec is record (
      word varchar2(200),
      hits number
   );
   type t_term_tab is table of t_term_rec;

   function question_words(in_question in clob) return ctx_json.t_text_tab is
      l_question clob;
      l_words    ctx_json.t_text_tab := ctx_json.t_text_tab();
      l_word     varchar2(32767);
      l_start    integer;
      l_end      integer;
   begin
      l_question := lower(in_question);
      l_start := regexp_instr(l_question, co_word_pattern, 1);
      while l_start > 0 and l_words.count < co_probe_words loop
         l_end := regexp_instr(l_question, co_word_pattern, l_start, 1, 1);
         l_word := substr(l_question, l_start, l_end - l_start);
         if length(l_word) between co_min_word_length and co_max_word_length
            and not ctx_json.is_listed(in_list => l_words, in_text => l_word)
         then
            l_words.extend();
            l_words(l_words.last) := l_word;
         end if;
         l_start := regexp_instr(l_question, co_word_pattern, l_end);
      end loop;
      return l_words;
   end question_words;

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

   function text_probe(in_slice in varchar2, in_words in ctx_json.t_text_tab) return varchar2 is
      l_first_index  varchar2(128);
      l_second_index varchar2(128);
      l_terms        t_term_tab := t_term_tab();
      r_term         t_term_rec;
      r_before       t_term_rec;
      l_pos          pls_integer;
      l_running      number := 0;
      l_query        varchar2(32767);
   begin
      l_first_index := case in_slice
                          when co_evidence then co_chunk_text_index
                          when co_history then co_conversation_text_index
                          else co_entity_text_index
                       end;
      l_second_index := case in_slice
                           when co_evidence then co_document_text_index
                           when co_history then co_summary_text_index
                           else co_workflow_text_index
                        end;
      for i in 1 .. in_words.count loop
         r_term.word := co_text_open || in_words(i) || co_text_close;
         r_term.hits := ctxsys.ctx_query.count_hits(index_name => l_first_index, text_query => r_term.word,
                                                    exact => false)
                        + ctxsys.ctx_query.count_hits(index_name => l_second_index, text_query => r_term.word,
                                                      exact => false);
         if r_term.hits > 0 then
            -- kept in order: fewest matches first, then the word
            l_terms.extend();
            l_pos := l_terms.count;
            loop
               exit when l_pos = 1;
               r_before := l_terms(l_pos - 1);
               exit when r_before.hits < r_term.hits or (r_before.hits = r_term.hits and r_before.word <= r_term.word);
               l_terms(l_pos) := r_before;
               l_pos := l_pos - 1;
            end loop;
            l_terms(l_pos) := r_term;
         end if;
      end loop;
      for i in 1 .. l_terms.count loop
         r_term := l_terms(i);
         l_running := l_running + r_term.hits;
         exit when i > 1 and l_running > co_probe_postings;
         l_query := case when l_query is not null then l_query || co_text_accum end || r_term.word;
      end loop;
      return l_query;
   end text_probe;

   function lexical_hits(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_slice           in varchar2,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_probe           in varchar2,
      in_depth           in pls_integer
   ) return clob is
      l_hits clob;
   begin
      if in_probe is null then
         return null;
      end if;
      if in_slice = co_evidence then
         select json_arrayagg(
                   json_object('t' value h.memory_type, 'i' value h.id, 'v' value h.version, 's' value h.text_score
                               returning clob) format json
                   order by h.text_score desc, h.memory_type, h.id, h.version
                   returning clob
                )
           into l_hits
           from (
                   select u.memory_type, u.id, u.version, u.text_score
                     from (
                             -- generated: lexical evidence from contract/memory_types.toml; edit the catalogue, then regenerate
                             select cast('kb_document' as varchar2(32)) as memory_type, k.id, k.version, k.text_score
                               from (
                                       select r.id, r.version, score(3) as text_score
                                         from knowledge_base_document r
                                        where contains(r.content, in_probe, 3) > 0
                                          and r.tenant_id = in_tenant_id
                                          and r.status <> 'erased'
                                          and r.deleted_at is null
                                          and r.valid_from <= in_evaluation_time
                                          and (r.valid_until is null or r.valid_until > in_evaluation_time)
                                          and (r.agent_id is null or r.agent_id = in_agent_id)
                                          and (r.user_id is null or r.user_id = in_user_id)
                                          and (r.thread_id is null or r.thread_id = in_thread_id)
                                        order by score(3) desc, r.id, r.version
                                        fetch first in_depth rows only
                                    ) k
                             union all
                             select 'kb_chunk', k.id, k.version, k.text_score
                               from (
                                       select r.id, r.version, score(4) as text_score
                                         from knowledge_base_chunk r
                                        where contains(r.content, in_probe, 4) > 0
                                          and r.tenant_id = in_tenant_id
                                          and r.status <> 'erased'
                                          and r.deleted_at is null
                                          and r.valid_from <= in_evaluation_time
                                          and (r.valid_until is null or r.valid_until > in_evaluation_time)
                                          and (r.agent_id is null or r.agent_id = in_agent_id)
                                          and (r.user_id is null or r.user_id = in_user_id)
                                          and (r.thread_id is null or r.thread_id = in_thread_id)
                                        order by score(4) desc, r.id, r.version
                                        fetch first in_depth rows only
                                    ) k
                             -- end generated: lexical evidence
                          ) u
                    order by u.text_score desc, u.memory_type, u.id, u.version
                    fetch first in_depth rows only
                ) h;
      elsif in_slice = co_history then
         select json_arrayagg(
                   json_object('t' value h.memory_type, 'i' value h.id, 'v' value h.version, 's' value h.text_score
                               returning clob) format json
                   order by h.text_score desc, h.memory_type, h.id, h.version
                   returning clob
                )
           into l_hits
           from (
                   select u.memory_type, u.id, u.version, u.text_score
                     from (
                             -- generated: lexical recalled history from contract/memory_types.toml; edit the catalogue, then regenerate
                             select cast('conversation' as varchar2(32)) as memory_type, c.id, c.version, c.text_score
                               from (
                                       select r.id, r.version, score(5) as text_score
                                         from conversation_memory r
                                        where contains(r.content, in_probe, 5) > 0
                                          and r.tenant_id = in_tenant_id
                                          and r.user_id = in_user_id
                                          and r.event_type = 'message'
                                          and r.status <> 'erased'
                                          and r.deleted_at is null
                                          and r.valid_from <= in_evaluation_time
                                          and (r.valid_until is null or r.valid_until > in_evaluation_time)
                                          and (r.agent_id is null or r.agent_id = in_agent_id)
                                        order by score(5) desc, r.id, r.version
                                        fetch first in_depth rows only
                                    ) c
                             union all
                             select 'summary', s.id, s.version, s.text_score
                               from (
                                       select r.id, r.version, score(6) as text_score
                                         from summarization_memory r
                                        where contains(r.content, in_probe, 6) > 0
                                          and r.tenant_id = in_tenant_id
                                          and r.status <> 'erased'
                                          and r.deleted_at is null
                                          and r.valid_from <= in_evaluation_time
                                          and (r.valid_until is null or r.valid_until > in_evaluation_time)
                                          and (r.agent_id is null or r.agent_id = in_agent_id)
                                          and (r.user_id is null or r.user_id = in_user_id)
                                          and (r.thread_id is null or r.thread_id = in_thread_id)
                                        order by score(6) desc, r.id, r.version
                                        fetch first in_depth rows only
                                    ) s
                             -- end generated: lexical recalled history
                          ) u
                    order by u.text_score desc, u.memory_type, u.id, u.version
                    fetch first in_depth rows only
                ) h;
      else
         select json_arrayagg(
                   json_object('t' value h.memory_type, 'i' value h.id, 'v' value h.version, 's' value h.text_score
                               returning clob) format json
                   order by h.text_score desc, h.memory_type, h.id, h.version
                   returning clob
                )
           into l_hits
           from (
                   select u.memory_type, u.id, u.version, u.text_score
                     from (
                             -- generated: lexical durable facts from contract/memory_types.toml; edit the catalogue, then regenerate
                             select cast('entity' as varchar2(32)) as memory_type, e.id, e.version, e.text_score
                               from (
                                       select r.id, r.version, score(1) as text_score
                                         from entity_memory r
                                        where contains(r.content, in_probe, 1) > 0
                                          and r.tenant_id = in_tenant_id
                                          and r.status <> 'erased'
                                          and r.deleted_at is null
                                          and r.valid_from <= in_evaluation_time
                                          and (r.valid_until is null or r.valid_until > in_evaluation_time)
                                          and (r.agent_id is null or r.agent_id = in_agent_id)
                                          and (r.user_id is null or r.user_id = in_user_id)
                                          and (r.thread_id is null or r.thread_id = in_thread_id)
                                        order by score(1) desc, r.id, r.version
                                        fetch first in_depth rows only
                                    ) e
                             union all
                             select 'workflow', w.id, w.version, w.text_score
                               from (
                                       select r.id, r.version, score(2) as text_score
                                         from workflow_memory r
                                        where contains(r.content, in_probe, 2) > 0
                                          and r.tenant_id = in_tenant_id
                                          and r.status <> 'erased'
                                          and r.deleted_at is null
                                          and r.valid_from <= in_evaluation_time
                                          and (r.valid_until is null or r.valid_until > in_evaluation_time)
                                          and (r.agent_id is null or r.agent_id = in_agent_id)
                                          and (r.user_id is null or r.user_id = in_user_id)
                                          and (r.thread_id is null or r.thread_id = in_thread_id)
                                        order by score(2) desc, r.id, r.version
                                        fetch first in_depth rows only
                                    ) w
                             -- end generated: lexical durable facts
                          ) u
                    order by u.text_score desc, u.memory_type, u.id, u.version
                    fetch first in_depth rows only
                ) h;
      end if;
      return l_hits;
   end lexical_hits;

   function nearest(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_slice           in varchar2,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_vector          in clob,
      in_depth           in pls_integer
   ) return clob is
      l_hits clob;
   begin
      if in_vector is null then
         return null;
      end if;
      if in_slice = co_evidence then
         select json_arrayagg(
                   json_object('t' value n.memory_type, 'i' value n.id, 'v' value n.version, 'd' value n.distance
                               returning clob) format json
                   order by n.distance, n.memory_type, n.id, n.version
                   returning clob
                )
           into l_hits
           from (
                   select u.memory_type, u.id, u.version, round(cast(u.distance as number), co_score_places) as distance
                     from (
                             -- generated: nearest evidence from contract/memory_types.toml; edit the catalogue, then regenerate
                             select cast('kb_chunk' as varchar2(32)) as memory_type, k.id, k.version, k.distance
                               from (
                                       select r.id, r.version,
                                              vector_distance(r.embedding, to_vector(in_vector, 384, float32), cosine)
                                                 as distance
                                         from knowledge_base_chunk r
                                        where r.tenant_id = in_tenant_id
                                          and r.embedding is not null
                                          and r.status <> 'erased'
                                          and r.deleted_at is null
                                          and r.valid_from <= in_evaluation_time
                                          and (r.valid_until is null or r.valid_until > in_evaluation_time)
                                          and (r.agent_id is null or r.agent_id = in_agent_id)
                                          and (r.user_id is null or r.user_id = in_user_id)
                                          and (r.thread_id is null or r.thread_id = in_thread_id)
                                        order by vector_distance(r.embedding, to_vector(in_vector, 384, float32), cosine)
                                        fetch approx first in_depth rows only
                                    ) k
                             -- end generated: nearest evidence
                          ) u
                    order by u.distance, u.memory_type, u.id, u.version
                    fetch first in_depth rows only
                ) n;
      elsif in_slice = co_history then
         select json_arrayagg(
                   json_object('t' value n.memory_type, 'i' value n.id, 'v' value n.version, 'd' value n.distance
                               returning clob) format json
                   order by n.distance, n.memory_type, n.id, n.version
                   returning clob
                )
           into l_hits
           from (
                   select u.memory_type, u.id, u.version, round(cast(u.distance as number), co_score_places) as distance
                     from (
                             -- generated: nearest recalled history from contract/memory_types.toml; edit the catalogue, then regenerate
                             select cast('conversation' as varchar2(32)) as memory_type, c.id, c.version, c.distance
                               from (
                                       select r.id, r.version,
                                              vector_distance(r.embedding, to_vector(in_vector, 384, float32), cosine)
                                                 as distance
                                         from conversation_memory r
                                        where r.tenant_id = in_tenant_id
                                          and r.user_id = in_user_id
                                          and r.event_type = 'message'
                                          and r.embedding is not null
                                          and r.status <> 'erased'
                                          and r.deleted_at is null
                                          and r.valid_from <= in_evaluation_time
                                          and (r.valid_until is null or r.valid_until > in_evaluation_time)
                                          and (r.agent_id is null or r.agent_id = in_agent_id)
                                        order by vector_distance(r.embedding, to_vector(in_vector, 384, float32), cosine)
                                        fetch approx first in_depth rows only
                                    ) c
                             union all
                             select 'summary', s.id, s.version, s.distance
                               from (
                                       select r.id, r.version,
                                              vector_distance(r.embedding, to_vector(in_vector, 384, float32), cosine)
                                                 as distance
                                         from summarization_memory r
                                        where r.tenant_id = in_tenant_id
                                          and r.embedding is not null
                                          and r.status <> 'erased'
                                          and r.deleted_at is null
                                          and r.valid_from <= in_evaluation_time
                                          and (r.valid_until is null or r.valid_until > in_evaluation_time)
                                          and (r.agent_id is null or r.agent_id = in_agent_id)
                                          and (r.user_id is null or r.user_id = in_user_id)
                                          and (r.thread_id is null or r.thread_id = in_thread_id)
                                        order by vector_distance(r.embedding, to_vector(in_vector, 384, float32), cosine)
                                        fetch approx first in_depth rows only
                                    ) s
                             -- end generated: nearest recalled history
                          ) u
                    order by u.distance, u.memory_type, u.id, u.version
                    fetch first in_depth rows only
                ) n;
      else
         select json_arrayagg(
                   json_object('t' value n.memory_type, 'i' value n.id, 'v' value n.version, 'd' value n.distance
                               returning clob) format json
                   order by n.distance, n.memory_type, n.id, n.version
                   returning clob
                )
           into l_hits
           from (
                   select u.memory_type, u.id, u.version, round(cast(u.distance as number), co_score_places) as distance
                     from (
                             -- generated: nearest durable facts from contract/memory_types.toml; edit the catalogue, then regenerate
                             select cast('entity' as varchar2(32)) as memory_type, e.id, e.version, e.distance
                               from (
                                       select r.id, r.version,
                                              vector_distance(r.embedding, to_vector(in_vector, 384, float32), cosine)
                                                 as distance
                                         from entity_memory r
                                        where r.tenant_id = in_tenant_id
                                          and r.embedding is not null
                                          and r.status <> 'erased'
                                          and r.deleted_at is null
                                          and r.valid_from <= in_evaluation_time
                                          and (r.valid_until is null or r.valid_until > in_evaluation_time)
                                          and (r.agent_id is null or r.agent_id = in_agent_id)
                                          and (r.user_id is null or r.user_id = in_user_id)
                                          and (r.thread_id is null or r.thread_id = in_thread_id)
                                        order by vector_distance(r.embedding, to_vector(in_vector, 384, float32), cosine)
                                        fetch approx first in_depth rows only
                                    ) e
                             union all
                             select 'workflow', w.id, w.version, w.distance
                               from (
                                       select r.id, r.version,
                                              vector_distance(r.embedding, to_vector(in_vector, 384, float32), cosine)
                                                 as distance
                                         from workflow_memory r
                                        where r.tenant_id = in_tenant_id
                                          and r.embedding is not null
                                          and r.status <> 'erased'
                                          and r.deleted_at is null
                                          and r.valid_from <= in_evaluation_time
                                          and (r.valid_until is null or r.valid_until > in_evaluation_time)
                                          and (r.agent_id is null or r.agent_id = in_agent_id)
                                          and (r.user_id is null or r.user_id = in_user_id)
                                          and (r.thread_id is null or r.thread_id = in_thread_id)
                                        order by vector_distance(r.embedding, to_vector(in_vector, 384, float32), cosine)
                                        fetch approx first in_depth rows only
                                    ) w
                             -- end generated: nearest durable facts
                          ) u
                    order by u.distance, u.memory_type, u.id, u.version
                    fetch first in_depth rows only
                ) n;
      end if;
      return l_hits;
   end nearest;

   function retrieved_items(
      in_slice   in varchar2,
      in_lexical in clob,
      in_vector  in clob,
      in_limit   in pls_integer,
      in_exclude in clob
   ) return clob is
      l_items clob;
   begin
      if in_lexical is null and in_vector is null then
         return to_clob(ctx_json.co_empty_array);
      end if;
      select json_arrayagg(
                json_object(
                   'ref' value json_array(f.memory_type, f.id, f.version),
                   'origin' value 'retrieval',
                   'slice' value in_slice,
                   'lexical_rank' value f.lexical_rank,
                   'vector_rank' value f.vector_rank,
                   'lexical_score' value f.lexical_score,
                   'vector_distance' value f.vector_distance,
                   'fused' value f.fused
                   null on null returning clob
                ) format json
                order by f.fused desc, f.memory_type, f.id, f.version
                returning clob
             )
        into l_items
        from (
                select r.memory_type, r.id, r.version, r.lexical_rank, r.vector_rank, r.lexical_score,
                       r.vector_distance,
                       round(
                          nvl(1 / (co_rrf_k + r.lexical_rank), 0) + nvl(1 / (co_rrf_k + r.vector_rank), 0),
                          co_score_places
                       ) as fused
                  from (
                          select u.memory_type, u.id, u.version,
                                 max(u.lexical_rank) as lexical_rank,
                                 max(u.vector_rank) as vector_rank,
                                 max(u.lexical_score) as lexical_score,
                                 max(u.vector_distance) as vector_distance
                            from (
                                    select l.hit_type as memory_type, l.hit_id as id, l.hit_version as version,
                                           row_number() over (
                                              order by l.hit_score desc, l.hit_type, l.hit_id, l.hit_version
                                           ) as lexical_rank,
                                           cast(null as number) as vector_rank,
                                           l.hit_score as lexical_score,
                                           cast(null as number) as vector_distance
                                      from json_table(coalesce(in_lexical, to_clob(ctx_json.co_empty_array)), '$[*]'
                                              columns (
                                                 hit_type    varchar2(32)  path '$.t',
                                                 hit_id      varchar2(128) path '$.i',
                                                 hit_version number        path '$.v',
                                                 hit_score   number        path '$.s'
                                              )
                                           ) l
                                    union all
                                    select v.hit_type, v.hit_id, v.hit_version, null,
                                           row_number() over (
                                              order by v.hit_distance, v.hit_type, v.hit_id, v.hit_version
                                           ),
                                           null, v.hit_distance
                                      from json_table(coalesce(in_vector, to_clob(ctx_json.co_empty_array)), '$[*]'
                                              columns (
                                                 hit_type     varchar2(32)  path '$.t',
                                                 hit_id       varchar2(128) path '$.i',
                                                 hit_version  number        path '$.v',
                                                 hit_distance number        path '$.d'
                                              )
                                           ) v
                                 ) u
                           group by u.memory_type, u.id, u.version
                       ) r
                 order by fused desc, r.memory_type, r.id, r.version
                 fetch first in_limit rows only
             ) f
       where not exists (
                select 1
                  from json_table(coalesce(in_exclude, to_clob(ctx_json.co_empty_array)), '$[*]'
                          columns (
                             x_type    varchar2(32)  path '$.ref[0]',
                             x_id      varchar2(128) path '$.ref[1]',
                             x_version number        path '$.ref[2]'
                          )
                       ) x
                 where x.x_type = f.memory_type
                   and x.x_id = f.id
                   and x.x_version = f.version
             );
      return coalesce(l_items, to_clob(ctx_json.co_empty_array));
   end retrieved_items;

   function adjacent_items(
      in_tenant_id       in varchar2,
      in_user_id         in varchar2,
      in_agent_id        in varchar2,
      in_evaluation_time in timestamp with time zone,
      in_retrieved       in clob,
      in_limit           in pls_integer,
      in_exclude         in clob
   ) return clob is
      l_items clob;
   begin
      select json_arrayagg(
                json_object(
                   'ref' value json_array('conversation', n.id, n.version),
                   'origin' value 'adjacent',
                   'slice' value co_history,
                   'next_to' value n.next_to
                   returning clob
                ) format json
                order by n.id
                returning clob
             )
        into l_items
        from (
                select r.id, r.version, min(a.id) as next_to
                  from (
                          select h.id
                            from json_table(coalesce(in_retrieved, to_clob(ctx_json.co_empty_array)), '$[*]'
                                    columns (
                                       item_type varchar2(32)  path '$.ref[0]',
                                       id        varchar2(128) path '$.ref[1]',
                                       fused     number        path '$.fused'
                                    )
                                 ) h
                           where h.item_type = 'conversation'
                           order by h.fused desc, h.id
                           fetch first in_limit rows only
                       ) t
                  join conversation_memory a
                    on a.tenant_id = in_tenant_id
                   and a.id = t.id
                  join conversation_memory r
                    on r.tenant_id = a.tenant_id
                   and r.thread_id = a.thread_id
                   and r.turn_index in (a.turn_index - 1, a.turn_index + 1)
                 where r.user_id = in_user_id
                   and r.event_type = 'message'
                   and r.status <> 'erased'
                   and r.deleted_at is null
                   and r.valid_from <= in_evaluation_time
                   and (r.valid_until is null or r.valid_until > in_evaluation_time)
                   and (r.agent_id is null or r.agent_id = in_agent_id)
                   and not exists (
                          select 1
                            from json_table(coalesce(in_retrieved, to_clob(ctx_json.co_empty_array)), '$[*]'
                                    columns (
                                       x_type varchar2(32)  path '$.ref[0]',
                                       x_id   varchar2(128) path '$.ref[1]'
                                    )
                                 ) x
                           where x.x_type = 'conversation'
                             and x.x_id = r.id
                       )
                   and not exists (
                          select 1
                            from json_table(coalesce(in_exclude, to_clob(ctx_json.co_empty_array)), '$[*]'
                                    columns (
                                       x_type    varchar2(32)  path '$.ref[0]',
                                       x_id      varchar2(128) path '$.ref[1]',
                                       x_version number        path '$.ref[2]'
                                    )
                                 ) x
                           where x.x_type = 'conversation'
                             and x.x_id = r.id
                             and x.x_version = r.version
                       )
                 group by r.id, r.version
             ) n;
      return coalesce(l_items, to_clob(ctx_json.co_empty_array));
   end adjacent_items;

   function retrieve_for_question(
      in_tenant_id       in ctx_tenant.tenant_id%type,
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
      l_query_vector clob;
      l_items        clob;
      l_result       clob;
   begin
      -- the caller's query vector, else the in-database model's (if the schema has MINILM), else none
      if in_query_embedding is not null then
         l_query_vector := in_query_embedding;
      else
         l_query_vector := question_embedding(in_question => in_question);
      end if;
      l_items := retrieved_items(
         in_slice   => in_slice,
         in_lexical => lexical_hits(
                          in_tenant_id       => in_tenant_id,
                          in_slice           => in_slice,
                          in_user_id         => in_user_id,
                          in_agent_id        => in_agent_id,
                          in_thread_id       => in_thread_id,
                          in_evaluation_time => in_evaluation_time,
                          in_probe           => text_probe(in_slice => in_slice,
                                                           in_words => question_words(in_question => in_question)),
                          in_depth           => in_depth
                       ),
         in_vector  => nearest(
                          in_tenant_id       => in_tenant_id,
                          in_slice           => in_slice,
                          in_user_id         => in_user_id,
                          in_agent_id        => in_agent_id,
                          in_thread_id       => in_thread_id,
                          in_evaluation_time => in_evaluation_time,
                          in_vector          => l_query_vector,
                          in_depth           => in_depth
                       ),
         in_limit   => in_limit,
         in_exclude => null
      );
      select json_object(
                'method' value case when l_query_vector is null then co_method_lexical else co_method_hybrid end,
                'items' value l_items format json
                returning clob
             )
        into l_result
        from dual;
      return l_result;
   end retrieve_for_question;
end ctx_retrieval;
/
