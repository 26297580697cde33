--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-sources-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_sources is
   -- PostgreSQL: db/postgresql/internal/ctx_sources.sql (facts_enumerable, enumerated_sources, claim_sources).

   -- the slices a source is shown in
   co_guidelines constant varchar2(32) := ctx_rules.co_guidelines;
   co_persona    constant varchar2(32) := ctx_rules.co_persona;
   co_tools      constant varchar2(32) := ctx_rules.co_tools;
   co_facts      constant varchar2(32) := ctx_rules.co_facts;
   co_tail       constant varchar2(32) := ctx_rules.co_tail;
   co_history    constant varchar2(32) := ctx_rules.co_history;
   -- a cited version, as source_refs write it (text); anything else cites nothing
   co_version_pattern constant varchar2(30) := ctx_json.co_version_pattern;
   co_evidence        constant varchar2(32) := ctx_rules.co_evidence;
   -- retrieval: rows each retriever ranks at least (the slice's limit when larger); after fusion, twice the
   -- slice's limit is kept
   co_retrieval_depth  constant pls_integer := 50;
   co_fused_factor     constant pls_integer := 2;
   -- durable facts are enumerated while the scope holds at most this many row versions of them
   co_facts_enumerated constant pls_integer := 100;

   function facts_enumerable(
      in_tenant_id in ctx_tenant.tenant_id%type,
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type,
      in_limit     in pls_integer
   ) return boolean is
      l_count pls_integer;
   begin
      select count(*)
        into l_count
        from (
                select f.one
                  from (
                          -- generated: facts counted from contract/memory_types.toml; edit the catalogue, then regenerate
                          select 1 as one
                            from entity_memory e
                           where e.tenant_id = in_tenant_id
                             and (e.user_id is null or e.user_id = in_user_id)
                             and (e.agent_id is null or e.agent_id = in_agent_id)
                             and (e.thread_id is null or e.thread_id = in_thread_id)
                          union all
                          select 1
                            from workflow_memory w
                           where w.tenant_id = in_tenant_id
                             and (w.user_id is null or w.user_id = in_user_id)
                             and (w.agent_id is null or w.agent_id = in_agent_id)
                             and (w.thread_id is null or w.thread_id = in_thread_id)
                          -- end generated: facts counted
                       ) f
                 fetch first in_limit + 1 rows only
             ) counted;
      return l_count <= in_limit;
   end facts_enumerable;

   function enumerated_sources(
      in_tenant_id  in ctx_tenant.tenant_id%type,
      in_user_id    in conversation_memory.user_id%type,
      in_agent_id   in conversation_memory.agent_id%type,
      in_thread_id  in conversation_memory.thread_id%type,
      in_tail_limit in pls_integer,
      in_with_facts in pls_integer
   ) return clob is
      l_items clob;
   begin
      select json_arrayagg(
                json_object(
                   'ref' value json_array(s.memory_type, s.id, s.version),
                   'origin' value s.origin,
                   'slice' value s.slice
                   null on null returning clob
                ) format json
                returning clob
             )
        into l_items
        from (
                -- generated: enumerated by scope from contract/memory_types.toml; edit the catalogue, then regenerate
                select cast('guideline' as varchar2(32)) as memory_type, g.id, g.version,
                       cast('scope' as varchar2(16)) as origin, cast(co_guidelines as varchar2(32)) as slice
                  from guideline_memory g
                 where g.tenant_id = in_tenant_id
                   and (g.user_id is null or g.user_id = in_user_id)
                   and (g.agent_id is null or g.agent_id = in_agent_id)
                   and (g.thread_id is null or g.thread_id = in_thread_id)
                union all
                select 'persona', p.id, p.version, 'scope', co_persona
                  from persona_memory p
                 where p.tenant_id = in_tenant_id
                   and (p.user_id is null or p.user_id = in_user_id)
                   and (p.agent_id is null or p.agent_id = in_agent_id)
                   and (p.thread_id is null or p.thread_id = in_thread_id)
                union all
                select 'toolbox', t.id, t.version, 'scope', co_tools
                  from toolbox_memory t
                 where t.tenant_id = in_tenant_id
                   and (t.user_id is null or t.user_id = in_user_id)
                   and (t.agent_id is null or t.agent_id = in_agent_id)
                   and (t.thread_id is null or t.thread_id = in_thread_id)
                union all
                -- end generated: enumerated by scope
                select 'conversation', c.id, c.version, 'tail', co_tail
                  from (
                          select r.id, r.version
                            from conversation_memory r
                           where r.tenant_id = in_tenant_id
                             and r.thread_id = in_thread_id
                             and r.event_type = 'message'
                             and (r.user_id is null or r.user_id = in_user_id)
                             and (r.agent_id is null or r.agent_id = in_agent_id)
                           order by r.turn_index desc nulls last, r.valid_from desc, r.id desc
                           fetch first in_tail_limit rows only
                       ) c
                -- generated: enumerated facts from contract/memory_types.toml; edit the catalogue, then regenerate
                union all
                select 'entity', e.id, e.version, 'scope', co_facts
                  from entity_memory e
                 where in_with_facts = 1
                   and e.tenant_id = in_tenant_id
                   and (e.user_id is null or e.user_id = in_user_id)
                   and (e.agent_id is null or e.agent_id = in_agent_id)
                   and (e.thread_id is null or e.thread_id = in_thread_id)
                union all
                select 'workflow', w.id, w.version, 'scope', co_facts
                  from workflow_memory w
                 where in_with_facts = 1
                   and w.tenant_id = in_tenant_id
                   and (w.user_id is null or w.user_id = in_user_id)
                   and (w.agent_id is null or w.agent_id = in_agent_id)
                   and (w.thread_id is null or w.thread_id = in_thread_id)
                -- end generated: enumerated facts
             ) s;
      return coalesce(l_items, to_clob(ctx_json.co_empty_array));
   end enumerated_sources;

   function claim_sources(
      in_tenant_id in ctx_tenant.tenant_id%type,
      in_user_id   in conversation_memory.user_id%type,
      in_agent_id  in conversation_memory.agent_id%type,
      in_thread_id in conversation_memory.thread_id%type,
      in_sources   in clob
   ) return clob is
      l_items clob;
   begin
      with
      history as (
         select h.memory_type, h.id, h.version
           from json_table(in_sources, '$[*]'
                   columns (
                      memory_type varchar2(32)  path '$.ref[0]',
                      id          varchar2(128) path '$.ref[1]',
                      version     number        path '$.ref[2]'
                   )
                ) h
          -- generated: history types from contract/memory_types.toml; edit the catalogue, then regenerate
          where h.memory_type in ('conversation', 'summary')
          -- end generated: history types
      ),
      -- the citations of the history rows (the types that cite), read from their tables by primary key
      citing as (
         -- generated: citing rows from contract/memory_types.toml; edit the catalogue, then regenerate
         select json_serialize(c.source_refs returning clob) as source_refs
           from history h
           join conversation_memory c
             on c.tenant_id = in_tenant_id
            and c.id = h.id
            and c.version = h.version
          where h.memory_type = 'conversation'
         union all
         select json_serialize(s.source_refs returning clob)
           from history h
           join summarization_memory s
             on s.tenant_id = in_tenant_id
            and s.id = h.id
            and s.version = h.version
          where h.memory_type = 'summary'
         -- end generated: citing rows
      ),
      cited as (
         select distinct j.ref_type as memory_type, j.ref_id as id,
                case when regexp_like(j.ref_version, co_version_pattern) then to_number(j.ref_version) end as version
           from citing x,
                json_table(x.source_refs, '$[*]'
                   columns (
                      ref_type    varchar2(32)  path '$.type',
                      ref_id      varchar2(128) path '$.id',
                      ref_version varchar2(40)  path '$.version'
                   )
                ) j
          where j.ref_type is not null
            and j.ref_id is not null
            and regexp_like(j.ref_version, co_version_pattern)
      ),
      -- the cited rows that exist, with the claim each makes (columns of a fact, content_json.claim of the rest)
      cited_rows as (
         -- generated: cited rows from contract/memory_types.toml; edit the catalogue, then regenerate
         select c.memory_type, c.id, c.version, json_value(t.content_json, '$.claim.subject') as subject,
                json_value(t.content_json, '$.claim.predicate') as predicate
           from cited c
           join guideline_memory t on t.tenant_id = in_tenant_id and t.id = c.id and t.version = c.version
          where c.memory_type = 'guideline'
         union all
         select c.memory_type, c.id, c.version, json_value(t.content_json, '$.claim.subject'),
                json_value(t.content_json, '$.claim.predicate')
           from cited c
           join persona_memory t on t.tenant_id = in_tenant_id and t.id = c.id and t.version = c.version
          where c.memory_type = 'persona'
         union all
         select c.memory_type, c.id, c.version, json_value(t.content_json, '$.claim.subject'),
                json_value(t.content_json, '$.claim.predicate')
           from cited c
           join toolbox_memory t on t.tenant_id = in_tenant_id and t.id = c.id and t.version = c.version
          where c.memory_type = 'toolbox'
         union all
         select c.memory_type, c.id, c.version, t.subject, t.predicate
           from cited c
           join entity_memory t on t.tenant_id = in_tenant_id and t.id = c.id and t.version = c.version
          where c.memory_type = 'entity'
         union all
         select c.memory_type, c.id, c.version, json_value(t.content_json, '$.claim.subject'),
                json_value(t.content_json, '$.claim.predicate')
           from cited c
           join workflow_memory t on t.tenant_id = in_tenant_id and t.id = c.id and t.version = c.version
          where c.memory_type = 'workflow'
         union all
         select c.memory_type, c.id, c.version, json_value(t.content_json, '$.claim.subject'),
                json_value(t.content_json, '$.claim.predicate')
           from cited c
           join knowledge_base_document t on t.tenant_id = in_tenant_id and t.id = c.id and t.version = c.version
          where c.memory_type = 'kb_document'
         union all
         select c.memory_type, c.id, c.version, json_value(t.content_json, '$.claim.subject'),
                json_value(t.content_json, '$.claim.predicate')
           from cited c
           join knowledge_base_chunk t on t.tenant_id = in_tenant_id and t.id = c.id and t.version = c.version
          where c.memory_type = 'kb_chunk'
         union all
         select c.memory_type, c.id, c.version, json_value(t.content_json, '$.claim.subject'),
                json_value(t.content_json, '$.claim.predicate')
           from cited c
           join conversation_memory t on t.tenant_id = in_tenant_id and t.id = c.id and t.version = c.version
          where c.memory_type = 'conversation'
         union all
         select c.memory_type, c.id, c.version, json_value(t.content_json, '$.claim.subject'),
                json_value(t.content_json, '$.claim.predicate')
           from cited c
           join summarization_memory t on t.tenant_id = in_tenant_id and t.id = c.id and t.version = c.version
          where c.memory_type = 'summary'
         -- end generated: cited rows
      ),
      -- a cited row is a source of the recalled history that cites it: recorded under that slice (it may be in no
      -- slice of its own: a superseded fact retrieval did not find, an erased row)
      sources_found as (
         select r.memory_type, r.id, r.version, cast('cited' as varchar2(16)) as origin,
                cast(co_history as varchar2(32)) as slice
           from cited_rows r
         union
         select 'entity', e.id, e.version, 'claim', co_facts
           from cited_rows r
           join entity_memory e
             on e.tenant_id = in_tenant_id
            and e.subject = r.subject
            and e.predicate = r.predicate
          where (e.user_id is null or e.user_id = in_user_id)
            and (e.agent_id is null or e.agent_id = in_agent_id)
            and (e.thread_id is null or e.thread_id = in_thread_id)
            and e.status = 'active'
      )
      select json_arrayagg(
                json_object(
                   'ref' value json_array(f.memory_type, f.id, f.version),
                   'origin' value f.origin,
                   'slice' value f.slice
                   null on null returning clob
                ) format json
                returning clob
             )
        into l_items
        from sources_found f;
      return coalesce(l_items, to_clob(ctx_json.co_empty_array));
   end claim_sources;
   function merged_sources(in_sources in clob) return ctx_selection_candidates is
      l_sources ctx_selection_candidates;
   begin
      with
      source_entries as (
         select e.memory_type, e.id, e.version, e.origin, e.slice, e.lexical_rank, e.vector_rank,
                e.lexical_score, e.vector_distance, e.fused, e.logit, e.bm25, e.similarity, e.next_to,
                e.adjacent_logit, e.thread_logit, e.length_logit,
                case e.origin
                   when 'tail' then 1
                   when 'scope' then 2
                   when 'retrieval' then 3
                   when 'adjacent' then 4
                   when 'claim' then 5
                   when 'cited' then 6
                end as precedence
           from json_table(in_sources, '$[*]'
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
                      thread_logit    number        path '$.thread_logit',
                      length_logit    number        path '$.length_logit'
                   )
                ) e
          where e.memory_type is not null
            and e.id is not null
            and e.version is not null
      ),
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
                coalesce(max(case when s.origin = 'retrieval' then s.length_logit end),
                         min(s.length_logit) keep (dense_rank first order by s.precedence))
                   as length_logit,
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
      )
      select ctx_selection_candidate(
                -- the source entry; the row's attributes stay NULL
                null, s.memory_type, null, s.origin, s.item_slice, s.precedence, s.next_to, s.retrieved,
                s.lexical_rank, s.vector_rank, s.lexical_score, s.vector_distance, s.fused, s.logit, s.bm25,
                s.similarity, s.thread_logit, s.adjacent_logit, s.length_logit, s.id, s.version, null, null, null,
                null, null,
                null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
                null,
                -- generated: source row tail from contract/memory_types.toml; edit the catalogue, then regenerate
                null,
                -- end generated: source row tail
                -- the attributes the steps fill
                null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
                null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null
             )
        bulk collect into l_sources
        from sources s
       order by s.precedence, s.item_slice, s.fused desc nulls last, s.memory_type, s.id, s.version;
      return l_sources;
   end merged_sources;

   -- The source entries as memory_rows reads them (the names select_window's sources had).
   -- live_rows and rows_as_of differ only in how they read each table (the generated regions below).
   function live_rows(
      in_tenant_id    in ctx_tenant.tenant_id%type,
      in_sources      in ctx_selection_candidates,
      in_query_vector in clob,
      in_scoring      in pls_integer
   ) return ctx_selection_candidates is
      -- the names the generated branches read
      l_tenant_id    ctx_tenant.tenant_id%type := in_tenant_id;
      l_query_vector clob := in_query_vector;
      l_scoring      pls_integer := in_scoring;
      l_rows         ctx_selection_candidates;
   begin
      with
      sources as (
         select s.memory_type, s.id, s.version, s.origin, s.item_slice, s.retrieved,
                s.source_lexical_rank as lexical_rank, s.source_vector_rank as vector_rank,
                s.source_lexical_score as lexical_score, s.source_vector_distance as vector_distance,
                s.source_fused as fused, s.source_logit as logit, s.source_bm25 as bm25,
                s.source_similarity as similarity, s.source_thread_logit as thread_logit
           from table(in_sources) s
      ),
      memory_rows as (
               -- generated: live memory rows from contract/memory_types.toml; edit the catalogue, then regenerate
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
                where f.memory_type = 'guideline'
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
                where f.memory_type = 'persona'
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
                where f.memory_type = 'toolbox'
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
                where f.memory_type = 'entity'
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
                where f.memory_type = 'workflow'
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
                where f.memory_type = 'kb_document'
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
                where f.memory_type = 'kb_chunk'
               union all
               select 'conversation', 'conversation_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, null, null, null, null, t.turn_index, t.role, t.event_type,
                      json_object('speaker' value t.speaker null on null returning clob),
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
                where f.memory_type = 'conversation'
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
                where f.memory_type = 'summary'
               -- end generated: live memory rows
      )
      select ctx_selection_candidate(
                -- the source entry and the row: memory_rows' columns, in the type's order
                null, r.memory_type, r.table_name, r.origin, r.item_slice, null, null, r.retrieved,
                r.source_lexical_rank, r.source_vector_rank, r.source_lexical_score, r.source_vector_distance,
                r.source_fused, r.source_logit, r.source_bm25, r.source_similarity, r.source_thread_logit, null,
                null, r.id, r.version, r.user_id, r.agent_id, r.thread_id, r.status, r.valid_from, r.valid_until,
                r.deleted_at, r.content, r.content_json, r.source_refs, r.confidence, r.key_name, r.subject,
                r.predicate, r.title, r.turn_index, r.role, r.event_type, r.extra, r.content_tokens,
                r.similarity_raw, r.text_key,
                -- generated: live row tail from contract/memory_types.toml; edit the catalogue, then regenerate
                r.pointer_text,
                -- end generated: live row tail
                -- the attributes the steps fill
                null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
                null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null
             )
        bulk collect into l_rows
        from memory_rows r;
      return l_rows;
   end live_rows;

   function rows_as_of(
      in_tenant_id    in ctx_tenant.tenant_id%type,
      in_sources      in ctx_selection_candidates,
      in_read_scn     in number,
      in_query_vector in clob,
      in_scoring      in pls_integer
   ) return ctx_selection_candidates is
      -- the names the generated branches read
      l_tenant_id    ctx_tenant.tenant_id%type := in_tenant_id;
      l_read_scn     number := in_read_scn;
      l_query_vector clob := in_query_vector;
      l_scoring      pls_integer := in_scoring;
      l_rows         ctx_selection_candidates;
   begin
      with
      sources as (
         select s.memory_type, s.id, s.version, s.origin, s.item_slice, s.retrieved,
                s.source_lexical_rank as lexical_rank, s.source_vector_rank as vector_rank,
                s.source_lexical_score as lexical_score, s.source_vector_distance as vector_distance,
                s.source_fused as fused, s.source_logit as logit, s.source_bm25 as bm25,
                s.source_similarity as similarity, s.source_thread_logit as thread_logit
           from table(in_sources) s
      ),
      memory_rows as (
               -- generated: memory rows as of from contract/memory_types.toml; edit the catalogue, then regenerate
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
                 join guideline_memory as of scn l_read_scn t
                   on t.tenant_id = l_tenant_id and t.id = f.id and t.version = f.version
                where f.memory_type = 'guideline'
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
                where f.memory_type = 'persona'
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
                where f.memory_type = 'toolbox'
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
                where f.memory_type = 'entity'
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
                where f.memory_type = 'workflow'
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
                where f.memory_type = 'kb_document'
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
                where f.memory_type = 'kb_chunk'
               union all
               select 'conversation', 'conversation_memory', f.origin, f.item_slice, f.retrieved, f.lexical_rank,
                      f.vector_rank, f.lexical_score, f.vector_distance, f.fused, f.logit, f.bm25, f.similarity,
                      f.thread_logit,
                      t.id, t.version, t.user_id, t.agent_id, t.thread_id, t.status, t.valid_from, t.valid_until,
                      t.deleted_at, t.content,
                      json_serialize(t.content_json returning clob), json_serialize(t.source_refs returning clob),
                      null, null, null, null, null, t.turn_index, t.role, t.event_type,
                      json_object('speaker' value t.speaker null on null returning clob),
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
                where f.memory_type = 'conversation'
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
                where f.memory_type = 'summary'
               -- end generated: memory rows as of
      ),
      -- the sources whose row version is erased now, looked up live by primary key
      erased_now as (
               -- generated: erased now from contract/memory_types.toml; edit the catalogue, then regenerate
               select f.memory_type, f.id, f.version
                 from sources f
                 join guideline_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'guideline' and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join persona_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'persona' and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join toolbox_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'toolbox' and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join entity_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'entity' and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join workflow_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'workflow' and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join knowledge_base_document e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'kb_document' and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join knowledge_base_chunk e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'kb_chunk' and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join conversation_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'conversation' and e.status = 'erased'
               union all
               select f.memory_type, f.id, f.version
                 from sources f
                 join summarization_memory e
                   on e.tenant_id = l_tenant_id and e.id = f.id and e.version = f.version
                where f.memory_type = 'summary' and e.status = 'erased'
               -- end generated: erased now
      )
      select ctx_selection_candidate(
                -- the source entry and the row: memory_rows' columns, in the type's order
                null, r.memory_type, r.table_name, r.origin, r.item_slice, null, null, r.retrieved,
                r.source_lexical_rank, r.source_vector_rank, r.source_lexical_score, r.source_vector_distance,
                r.source_fused, r.source_logit, r.source_bm25, r.source_similarity, r.source_thread_logit, null,
                null, r.id, r.version, r.user_id, r.agent_id, r.thread_id, r.status, r.valid_from, r.valid_until,
                r.deleted_at, r.content, r.content_json, r.source_refs, r.confidence, r.key_name, r.subject,
                r.predicate, r.title, r.turn_index, r.role, r.event_type, r.extra, r.content_tokens,
                r.similarity_raw, r.text_key,
                -- generated: row tail as of from contract/memory_types.toml; edit the catalogue, then regenerate
                r.pointer_text,
                -- end generated: row tail as of
                -- the attributes the steps fill
                null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
                null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null
             )
        bulk collect into l_rows
        from memory_rows r
       where not exists (select 1
                           from erased_now x
                          where x.memory_type = r.memory_type and x.id = r.id and x.version = r.version);
      return l_rows;
   end rows_as_of;
   function window_sources(
      in_tenant_id       in ctx_tenant.tenant_id%type,
      in_user_id         in conversation_memory.user_id%type,
      in_agent_id        in conversation_memory.agent_id%type,
      in_thread_id       in conversation_memory.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_question        in clob,
      in_query_vector    in clob,
      in_limits          in json_object_t,
      out_text_scores    out clob
   ) return clob is
      l_limit_facts    pls_integer := in_limits.get_number(co_facts);
      l_limit_evidence pls_integer := in_limits.get_number(co_evidence);
      l_limit_history  pls_integer := in_limits.get_number(co_history);
      l_limit_tail     pls_integer := in_limits.get_number(co_tail);
      l_words          ctx_json.t_text_tab;
      l_with_facts     pls_integer;
      l_slices         ctx_json.t_text_tab := ctx_json.t_text_tab(co_evidence, co_history, co_facts);
      l_slice          varchar2(32);
      l_limit          pls_integer;
      l_depth          pls_integer;
      l_enumerated     clob;
      l_lexical        clob;
      l_retrieved      clob;
      l_sources        clob;
   begin
      l_words := ctx_retrieval.question_words(in_question => in_question);
      l_with_facts := case
                         when ctx_sources.facts_enumerable(
                                 in_tenant_id => in_tenant_id, in_user_id => in_user_id, in_agent_id => in_agent_id,
                                 in_thread_id => in_thread_id, in_limit => co_facts_enumerated)
                         then 1
                         else 0
                      end;
      l_enumerated := ctx_sources.enumerated_sources(
         in_tenant_id  => in_tenant_id,
         in_user_id    => in_user_id,
         in_agent_id   => in_agent_id,
         in_thread_id  => in_thread_id,
         in_tail_limit => l_limit_tail,
         in_with_facts => l_with_facts
      );
      l_sources := l_enumerated;
      for i in 1 .. l_slices.count loop
         l_slice := l_slices(i);
         l_limit := case l_slice when co_evidence then l_limit_evidence when co_history then l_limit_history
                                 else l_limit_facts end;
         l_depth := greatest(co_retrieval_depth, l_limit);
         -- Enumerated facts are not retrieved, but their text scores come from the same lexical query.
         l_lexical := ctx_retrieval.lexical_hits(
            in_tenant_id       => in_tenant_id,
            in_slice           => l_slice,
            in_user_id         => in_user_id,
            in_agent_id        => in_agent_id,
            in_thread_id       => in_thread_id,
            in_evaluation_time => in_evaluation_time,
            in_probe           => ctx_retrieval.text_probe(in_slice => l_slice, in_words => l_words),
            in_depth           => case when l_slice = co_facts and l_with_facts = 1 then co_facts_enumerated
                                       else l_depth end
         );
         out_text_scores := ctx_json.array_union(in_first => out_text_scores, in_second => l_lexical);
         if not (l_slice = co_facts and l_with_facts = 1) then
            -- the thread's tail is shown as turns; retrieval recalls the rest of the history
            l_retrieved := ctx_retrieval.retrieved_items(
               in_slice   => l_slice,
               in_lexical => l_lexical,
               in_vector  => ctx_retrieval.nearest(
                                in_tenant_id       => in_tenant_id,
                                in_slice           => l_slice,
                                in_user_id         => in_user_id,
                                in_agent_id        => in_agent_id,
                                in_thread_id       => in_thread_id,
                                in_evaluation_time => in_evaluation_time,
                                in_vector          => in_query_vector,
                                in_depth           => l_depth
                             ),
               in_limit   => co_fused_factor * l_limit,
               in_exclude => l_enumerated
            );
            l_sources := ctx_json.array_union(in_first => l_sources, in_second => l_retrieved);
            if l_slice = co_history then
               l_sources := ctx_json.array_union(
                  in_first  => l_sources,
                  in_second => ctx_retrieval.adjacent_items(
                                  in_tenant_id       => in_tenant_id,
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
                         in_tenant_id => in_tenant_id,
                         in_user_id   => in_user_id,
                         in_agent_id  => in_agent_id,
                         in_thread_id => in_thread_id,
                         in_sources   => l_sources
                      )
      );
      return l_sources;
   end window_sources;
end ctx_sources;
/
