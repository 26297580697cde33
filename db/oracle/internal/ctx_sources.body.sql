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
          where h.memory_type in ('summary', 'conversation')
      ),
      -- the citations of the history rows, read from their two tables by primary key
      citing as (
         select json_serialize(m.source_refs returning clob) as source_refs
           from history h
           join summarization_memory m
             on m.tenant_id = in_tenant_id
            and m.id = h.id
            and m.version = h.version
          where h.memory_type = 'summary'
         union all
         select json_serialize(c.source_refs returning clob)
           from history h
           join conversation_memory c
             on c.tenant_id = in_tenant_id
            and c.id = h.id
            and c.version = h.version
          where h.memory_type = 'conversation'
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
         select c.memory_type, c.id, c.version, t.subject, t.predicate
           from cited c
           join entity_memory t on t.tenant_id = in_tenant_id and t.id = c.id and t.version = c.version
          where c.memory_type = 'entity'
         union all
         select c.memory_type, c.id, c.version, json_value(t.content_json, '$.claim.subject'),
                json_value(t.content_json, '$.claim.predicate')
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
end ctx_sources;
/
