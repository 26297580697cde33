--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-manifest-store-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_manifest_store is
   -- PostgreSQL: db/postgresql/api/ctx_manifest_store.sql (ctx_assembly.record_manifest, read_manifest,
   -- latest_manifest_id; ctxasm.manifest_refs is the numbering of add_dependency here). Every statement is
   -- static, every value a bind. Moved out of CTX_ASSEMBLY's body unchanged but for the bounds of record_manifest.

   -- the manifest rows
   co_conversation     constant varchar2(30) := 'conversation';
   co_manifest_prefix  constant varchar2(30) := 'manifest_';
   co_manifest_event   constant conversation_memory.event_type%type := 'context_manifest';
   co_event_role       constant conversation_memory.role%type := 'event';
   co_derived_manifest constant context_source_ref.derived_type%type := 'manifest';
   co_active           constant context_source_ref.status%type := 'active';
   co_hash_pattern     constant varchar2(30) := '^[0123456789abcdef]{64}$';
   co_version_pattern  constant varchar2(30) := ctx_json.co_version_pattern;
   co_hash_length      constant pls_integer := 64;
   co_case_sensitive   constant varchar2(1) := 'c';
   co_max_quote        constant pls_integer := 200;
   -- the widths of conversation_memory's user_id, agent_id and thread_id, and of context_source_ref's
   -- source_type and source_id
   co_type_length      constant pls_integer := 32;
   co_id_length        constant pls_integer := 128;
   co_scope_length     constant pls_integer := 64;
   -- the longest manifest, in characters: the catalogue's max_json_chars, what put_memory stores in one JSON
   -- field (contract/constants.toml; CTX_ROW_BINDER), since the manifest is the event row's content_json
   co_max_json_chars constant pls_integer := 2000000;
   -- the most dependency references one manifest writes (one context_source_ref row each): a window of the
   -- largest budgets depends on some thousands of rows (at most max_candidate_limit, 1000, candidates per dynamic
   -- slice, rendered or excluded, with their compressions and annotation sources); the bound leaves room for that
   -- and keeps one call from writing hundreds of thousands of rows (the catalogue's max_manifest_refs,
   -- written here by the contract generator, as max_json_chars above)
   co_max_manifest_refs constant pls_integer := 20000;

   e_json_syntax exception;
   pragma exception_init(e_json_syntax, -40441);

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

   -- At most co_max_manifest_refs dependencies, counted as add_dependency will number them (PostgreSQL's
   -- ctxasm.manifest_refs): every memory's ref, its summary_ref when an array, each of its annotation_refs when an
   -- array (one that is not is refused by record_manifest's loop), every excluded row's ref, the budget; counted
   -- before anything is written, so an oversized manifest writes nothing.
   procedure check_reference_count(in_memories in json_array_t, in_excluded in json_array_t) is
      l_count pls_integer;
      l_value json_element_t;
      l_notes json_array_t;
      l_last  pls_integer;
   begin
      l_count := in_memories.get_size() + in_excluded.get_size() + 1;
      l_last := in_memories.get_size() - 1;
      for i in 0 .. l_last loop
         l_value := ctx_json.member_of(in_value => in_memories.get(i), in_key => 'summary_ref');
         if l_value is not null and l_value.is_array() then
            l_count := l_count + 1;
         end if;
         l_value := ctx_json.member_of(in_value => in_memories.get(i), in_key => 'annotation_refs');
         if l_value is not null and l_value.is_array() then
            l_notes := treat(l_value as json_array_t);
            l_count := l_count + l_notes.get_size();
         end if;
      end loop;
      if l_count > co_max_manifest_refs then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_manifest,
            in_detail => 'the manifest has ' || to_char(l_count) || ' dependency references, more than '
                         || to_char(co_max_manifest_refs)
         );
      end if;
   end check_reference_count;

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
      -- as long as ctx_json.member_text may return: an over-long value is named by the checks below, where a
      -- shorter variable would raise ORA-06502 first
      l_hash        varchar2(32767);
      l_user_id     varchar2(32767);
      l_agent_id    varchar2(32767);
      l_thread_id   varchar2(32767);
      l_content     varchar2(4000);
      l_rows        json_array_t := json_array_t();
      l_rows_json   clob;
      l_last        pls_integer;
      l_last_note   pls_integer;
      l_length      integer;
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
      l_length := sys.dbms_lob.getlength(lob_loc => in_manifest);
      if l_length > co_max_json_chars then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_manifest,
            in_detail => 'the manifest is ' || to_char(l_length) || ' characters of JSON, more than '
                         || to_char(co_max_json_chars)
         );
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
      check_reference_count(in_memories => l_memories, in_excluded => l_excluded);

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
end ctx_manifest_store;
/
