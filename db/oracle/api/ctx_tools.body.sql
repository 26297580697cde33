--liquibase formatted sql logicalFilePath:db/packages/oracle/body/0070_ctx_tools.sql

--changeset ctxasm:ora-pkg-0070-ctx-tools-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_tools is
   -- The twin of db/postgresql/api/ctx_tools.sql, statement for statement. Every statement is
   -- static, every value a bind, every table named in the code.

   -- entity_memory.subject and .predicate are varchar2(256)
   co_max_claim_part constant pls_integer := 256;
   co_retrieval_depth constant pls_integer := 50;
   co_max_limit       constant pls_integer := 20;
   co_max_query       constant pls_integer := 500;
   co_dimensions      constant pls_integer := 384;
   co_evidence        constant varchar2(32) := ctx_rules.co_evidence;
   co_empty_array     constant varchar2(2) := '[]';
   co_active          constant conversation_memory.status%type := 'active';
   co_erased          constant conversation_memory.status%type := 'erased';
   co_deleted         constant conversation_memory.status%type := 'deleted';
   co_superseded      constant conversation_memory.status%type := 'superseded';
   co_expired         constant varchar2(16) := 'expired';
   co_manifest_event  constant conversation_memory.event_type%type := 'context_manifest';

   -- ------------------------------------------------------------------------------------------------------
   -- arguments

   procedure require_time(in_evaluation_time in timestamp with time zone) is
   begin
      if in_evaluation_time is null then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_evaluation_time must be given'
         );
      end if;
   end require_time;

   -- invalid_argument '<in_name> must not be empty' for NULL or blank text
   procedure require_text(in_text in clob, in_name in varchar2) is
   begin
      if nvl(length(trim(in_text)), 0) = 0 then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_argument, in_detail => in_name || ' must not be empty');
      end if;
   end require_text;

   -- ------------------------------------------------------------------------------------------------------
   -- active_tools

   function active_tools(
      in_user_id         in toolbox_memory.user_id%type,
      in_agent_id        in toolbox_memory.agent_id%type,
      in_evaluation_time in timestamp with time zone
   ) return clob is
      l_tenant_id ctx_tenant.tenant_id%type;
      l_result    clob;
   begin
      l_tenant_id := ctx_session.require_scope(in_user_id => in_user_id, in_agent_id => in_agent_id);
      require_time(in_evaluation_time => in_evaluation_time);
      select json_arrayagg(
                json_object(
                   'ref' value json_array('toolbox', t.id, t.version),
                   'tool_name' value t.tool_name,
                   'tool_handler' value t.tool_handler,
                   'tool_schema' value t.tool_schema,
                   'usage_notes' value t.usage_notes,
                   'access_policy' value t.access_policy
                   null on null returning clob
                ) format json
                order by t.tool_name
                returning clob
             )
        into l_result
        from (
                select r.id, r.version, r.tool_name, r.tool_handler, r.tool_schema, r.usage_notes,
                       r.access_policy,
                       row_number() over (
                          partition by r.tool_name
                          order by nvl2(r.user_id, 1, 0) + nvl2(r.agent_id, 1, 0) desc, r.valid_from desc, r.id
                       ) as key_rank
                  from toolbox_memory r
                 where r.tenant_id = l_tenant_id
                   and (r.user_id is null or r.user_id = in_user_id)
                   and (r.agent_id is null or r.agent_id = in_agent_id)
                   and r.thread_id is null
                   and r.status <> co_erased
                   and r.deleted_at is null
                   and r.valid_from <= in_evaluation_time
                   and (r.valid_until is null or r.valid_until > in_evaluation_time)
             ) t
       where t.key_rank = 1;
      return coalesce(l_result, to_clob(co_empty_array));
   end active_tools;

   -- ------------------------------------------------------------------------------------------------------
   -- search_memory

   function search_memory(
      in_user_id         in knowledge_base_chunk.user_id%type,
      in_agent_id        in knowledge_base_chunk.agent_id%type,
      in_thread_id       in knowledge_base_chunk.thread_id%type,
      in_evaluation_time in timestamp with time zone,
      in_query           in clob,
      in_query_embedding in clob,
      in_limit           in pls_integer
   ) return clob is
      l_tenant_id ctx_tenant.tenant_id%type;
      l_retrieval clob;
      l_result    clob;
   begin
      l_tenant_id := ctx_session.require_scope(in_user_id => in_user_id, in_agent_id => in_agent_id);
      require_time(in_evaluation_time => in_evaluation_time);
      require_text(in_text => in_query, in_name => 'in_query');
      if length(in_query) > co_max_query then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_query is ' || to_char(length(in_query)) || ' characters long, at most '
                         || to_char(co_max_query) || ' are allowed'
         );
      end if;
      -- Out of range is refused, not clamped: a caller asking for 100 should learn that it gets at most 20.
      if in_limit is null or in_limit < 1 or in_limit > co_max_limit then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_limit must be between 1 and ' || to_char(co_max_limit) || ', not '
                         || nvl(to_char(in_limit), 'NULL')
         );
      end if;
      if in_query_embedding is not null
         and not ctx_json.is_vector_text(in_text => in_query_embedding, in_dimensions => co_dimensions)
      then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_query_embedding must be vector text [x, y, ...] of ' || to_char(co_dimensions)
                         || ' numbers'
         );
      end if;

      -- Bounded hybrid retrieval of the evidence slice, on the live tables (select_window's retrieval step).
      l_retrieval := ctx_assembly.retrieve_for_question(
                        in_slice           => co_evidence,
                        in_user_id         => in_user_id,
                        in_agent_id        => in_agent_id,
                        in_thread_id       => in_thread_id,
                        in_evaluation_time => in_evaluation_time,
                        in_question        => in_query,
                        in_query_embedding => in_query_embedding,
                        in_depth           => co_retrieval_depth,
                        in_limit           => in_limit
                     );
      with
      hits as (
         select h.memory_type, h.hit_id as id, h.hit_version as version, h.lexical_rank, h.vector_rank, h.fused
           from json_table(l_retrieval, '$.items[*]'
                   columns (
                      memory_type  varchar2(32)  path '$.ref[0]',
                      hit_id       varchar2(128) path '$.ref[1]',
                      hit_version  number        path '$.ref[2]',
                      lexical_rank number        path '$.lexical_rank',
                      vector_rank  number        path '$.vector_rank',
                      fused        number        path '$.fused'
                   )
                ) h
      ),
      -- The text and provenance of each hit; a chunk's collection and source are its document's.
      items as (
         select h.memory_type, h.id, h.version, h.lexical_rank, h.vector_rank, h.fused,
                coalesce(c.title, d.title) as title, c.content, d.collection, d.source_uri
           from hits h
           join knowledge_base_chunk c
             on c.tenant_id = l_tenant_id
            and c.id = h.id
            and c.version = h.version
           left join knowledge_base_document d
             on d.tenant_id = c.tenant_id
            and d.id = c.document_id
            and d.version = c.document_version
          where h.memory_type = 'kb_chunk'
         union all
         select h.memory_type, h.id, h.version, h.lexical_rank, h.vector_rank, h.fused,
                d.title, d.content, d.collection, d.source_uri
           from hits h
           join knowledge_base_document d
             on d.tenant_id = l_tenant_id
            and d.id = h.id
            and d.version = h.version
          where h.memory_type = 'kb_document'
      )
      select json_object(
                'retrieval' value json_value(l_retrieval, '$.method'),
                'items' value coalesce(
                   (select json_arrayagg(
                              json_object(
                                 'ref' value json_array(i.memory_type, i.id, i.version),
                                 'title' value i.title,
                                 'content' value i.content,
                                 'collection' value i.collection,
                                 'source' value i.source_uri,
                                 'scores' value json_object(
                                    'lexical_rank' value i.lexical_rank,
                                    'vector_rank' value i.vector_rank,
                                    'fused' value i.fused
                                    null on null
                                 )
                                 null on null returning clob
                              ) format json
                              order by i.fused desc, i.memory_type, i.id, i.version
                              returning clob
                           )
                      from items i),
                   to_clob(co_empty_array)
                ) format json
                null on null returning clob
             )
        into l_result
        from dual;
      return l_result;
   end search_memory;

   -- ------------------------------------------------------------------------------------------------------
   -- lookup_entity

   function lookup_entity(
      in_user_id         in entity_memory.user_id%type,
      in_agent_id        in entity_memory.agent_id%type,
      in_evaluation_time in timestamp with time zone,
      in_subject         in entity_memory.subject%type,
      in_predicate       in entity_memory.predicate%type
   ) return clob is
      l_tenant_id ctx_tenant.tenant_id%type;
      l_result    clob;
   begin
      l_tenant_id := ctx_session.require_scope(in_user_id => in_user_id, in_agent_id => in_agent_id);
      require_time(in_evaluation_time => in_evaluation_time);
      require_text(in_text => in_subject, in_name => 'in_subject');
      require_text(in_text => in_predicate, in_name => 'in_predicate');
      if length(in_subject) > co_max_claim_part or length(in_predicate) > co_max_claim_part then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => case when length(in_subject) > co_max_claim_part then 'in_subject' else 'in_predicate' end
                         || ' is ' || to_char(case when length(in_subject) > co_max_claim_part
                                                   then length(in_subject) else length(in_predicate) end)
                         || ' characters long, at most ' || to_char(co_max_claim_part) || ' are allowed'
         );
      end if;
      -- One statement, so the version and the history are read at one point in time.
      with
      claim as (
         select e.id, e.version, e.content, json_serialize(e.content_json returning clob) as content_json,
                e.confidence, e.valid_from,
                nvl2(e.user_id, 1, 0) + nvl2(e.agent_id, 1, 0) as scope_depth,
                case
                   when e.deleted_at is not null then co_deleted
                   when e.valid_until is not null and e.valid_until <= in_evaluation_time then
                      case when e.status = co_superseded then co_superseded else co_expired end
                end as retired,
                case
                   when e.deleted_at is not null and (e.valid_until is null or e.deleted_at < e.valid_until)
                   then e.deleted_at
                   else e.valid_until
                end as valid_to
           from entity_memory e
          where e.tenant_id = l_tenant_id
            and e.subject = in_subject
            and e.predicate = in_predicate
            and (e.user_id is null or e.user_id = in_user_id)
            and (e.agent_id is null or e.agent_id = in_agent_id)
            and e.thread_id is null
            and e.status <> co_erased
            and e.valid_from <= in_evaluation_time
      ),
      -- As the conflict step: within a claim the narrowest scope wins, then the latest, then the row id.
      ranked as (
         select c.id, c.version, c.content, c.content_json, c.confidence, c.valid_from, c.retired, c.valid_to,
                row_number() over (
                   partition by nvl2(c.retired, 1, 0)
                   order by c.scope_depth desc, c.valid_from desc, c.id
                ) as claim_rank
           from claim c
      )
      select json_object(
                'current' value (
                   select json_object(
                             'ref' value json_array('entity', v.id, v.version),
                             'content' value v.content,
                             'content_json' value v.content_json format json,
                             'confidence' value v.confidence,
                             'valid_from' value ctx_json.iso_utc(in_timestamp => v.valid_from)
                             null on null returning clob
                          )
                     from ranked v
                    where v.retired is null
                      and v.claim_rank = 1
                ) format json,
                'history' value coalesce(
                   (select json_arrayagg(
                              json_object(
                                 'ref' value json_array('entity', h.id, h.version),
                                 'content' value h.content,
                                 'content_json' value h.content_json format json,
                                 'status' value h.retired,
                                 'valid_from' value ctx_json.iso_utc(in_timestamp => h.valid_from),
                                 'valid_to' value ctx_json.iso_utc(in_timestamp => h.valid_to)
                                 null on null returning clob
                              ) format json
                              order by h.valid_from desc, h.version desc, h.id
                              returning clob
                           )
                      from ranked h
                     where h.retired is not null),
                   to_clob(co_empty_array)
                ) format json
                null on null returning clob
             )
        into l_result
        from dual;
      return l_result;
   end lookup_entity;

   -- ------------------------------------------------------------------------------------------------------
   -- expand

   function expand(
      in_manifest_id     in conversation_memory.id%type,
      in_memory_id       in varchar2,
      in_evaluation_time in timestamp with time zone
   ) return clob is
      l_tenant_id   ctx_tenant.tenant_id%type;
      l_manifest    clob;
      l_ref_type    varchar2(32);
      l_ref_id      varchar2(128);
      l_ref_version number;
      l_tier        varchar2(16);
      l_status      conversation_memory.status%type;
      l_deleted_at  timestamp with time zone;
      l_valid_from  timestamp with time zone;
      l_valid_until timestamp with time zone;
      l_content     clob;
      l_title       varchar2(512);
      l_reason      varchar2(40);
      l_result      clob;
   begin
      l_tenant_id := ctx_session.require_tenant();
      require_time(in_evaluation_time => in_evaluation_time);
      require_text(in_text => in_manifest_id, in_name => 'in_manifest_id');
      require_text(in_text => in_memory_id, in_name => 'in_memory_id');
      -- Another tenant's manifest is invisible (VPD): it is as unknown as one that never existed.
      begin
         select json_serialize(m.content_json returning clob)
           into l_manifest
           from conversation_memory m
          where m.tenant_id = l_tenant_id
            and m.id = in_manifest_id
            and m.event_type = co_manifest_event
            and m.status = co_active
            and m.deleted_at is null;
      exception
         when no_data_found then
            ctx_errors.raise_error(
               in_code   => ctx_errors.co_not_in_window,
               in_detail => 'memory ' || in_memory_id || ': no manifest ' || ctx_errors.quoted(in_text => in_manifest_id)
                            || ' for this tenant'
            );
      end;
      begin
         select e.ref_type, e.ref_id, e.ref_version, e.tier
           into l_ref_type, l_ref_id, l_ref_version, l_tier
           from json_table(l_manifest, '$.memories[*]'
                   columns (
                      memory_id   varchar2(64)  path '$.id',
                      ref_type    varchar2(32)  path '$.ref[0]',
                      ref_id      varchar2(128) path '$.ref[1]',
                      ref_version number        path '$.ref[2]',
                      tier        varchar2(16)  path '$.tier'
                   )
                ) e
          where e.memory_id = in_memory_id
          fetch first 1 row only;
      exception
         when no_data_found then
            ctx_errors.raise_error(
               in_code   => ctx_errors.co_not_in_window,
               in_detail => 'memory ' || in_memory_id || ' was not issued in manifest ' || in_manifest_id
            );
      end;

      -- The source row version, from the table its type names (PostgreSQL: the view memory_row); the title
      -- is the row's title, subject or key, as select_window gives it.
      begin
         select s.status, s.deleted_at, s.valid_from, s.valid_until, s.content, s.title
           into l_status, l_deleted_at, l_valid_from, l_valid_until, l_content, l_title
           from (
                   -- generated: expand rows from contract/memory_types.toml; edit the catalogue, then regenerate
                   select 'guideline' as memory_type, t.id, t.version, t.status, t.deleted_at, t.valid_from,
                          t.valid_until, t.content, cast(t.guideline_key as varchar2(512)) as title
                     from guideline_memory t
                    where t.tenant_id = l_tenant_id
                   union all
                   select 'persona', t.id, t.version, t.status, t.deleted_at, t.valid_from, t.valid_until,
                          t.content, t.persona_key
                     from persona_memory t
                    where t.tenant_id = l_tenant_id
                   union all
                   select 'toolbox', t.id, t.version, t.status, t.deleted_at, t.valid_from, t.valid_until,
                          t.content, t.tool_name
                     from toolbox_memory t
                    where t.tenant_id = l_tenant_id
                   union all
                   select 'entity', t.id, t.version, t.status, t.deleted_at, t.valid_from, t.valid_until,
                          t.content, t.subject
                     from entity_memory t
                    where t.tenant_id = l_tenant_id
                   union all
                   select 'workflow', t.id, t.version, t.status, t.deleted_at, t.valid_from, t.valid_until,
                          t.content, t.workflow_key
                     from workflow_memory t
                    where t.tenant_id = l_tenant_id
                   union all
                   select 'kb_document', t.id, t.version, t.status, t.deleted_at, t.valid_from, t.valid_until,
                          t.content, t.title
                     from knowledge_base_document t
                    where t.tenant_id = l_tenant_id
                   union all
                   select 'kb_chunk', t.id, t.version, t.status, t.deleted_at, t.valid_from, t.valid_until,
                          t.content, coalesce(t.title, t.document_id)
                     from knowledge_base_chunk t
                    where t.tenant_id = l_tenant_id
                   union all
                   select 'conversation', t.id, t.version, t.status, t.deleted_at, t.valid_from, t.valid_until,
                          t.content, null
                     from conversation_memory t
                    where t.tenant_id = l_tenant_id
                   union all
                   select 'summary', t.id, t.version, t.status, t.deleted_at, t.valid_from, t.valid_until,
                          t.content, t.summary_key
                     from summarization_memory t
                    where t.tenant_id = l_tenant_id
                   -- end generated: expand rows
                ) s
          where s.memory_type = l_ref_type
            and s.id = l_ref_id
            and s.version = l_ref_version;
         l_reason := case
                        when l_status = co_erased then 'was erased'
                        when l_deleted_at is not null or l_status = co_deleted then 'was deleted'
                        when l_status = co_superseded then 'was superseded'
                        when l_valid_from > in_evaluation_time then 'is not yet in effect'
                        when l_valid_until is not null and l_valid_until <= in_evaluation_time then 'has expired'
                     end;
      exception
         when no_data_found then
            l_reason := 'is gone';
      end;
      if l_reason is not null then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_source_unavailable,
            in_detail => 'memory ' || in_memory_id || ': its source ' || l_ref_type || ' ' || l_ref_id || ' version '
                         || to_char(l_ref_version) || ' ' || l_reason
         );
      end if;
      select json_object(
                'memory_id' value in_memory_id,
                'ref' value json_array(l_ref_type, l_ref_id, l_ref_version),
                'type' value l_ref_type,
                'title' value l_title,
                'content' value l_content,
                'tier_in_window' value l_tier
                null on null returning clob
             )
        into l_result
        from dual;
      return l_result;
   end expand;
end ctx_tools;
/
