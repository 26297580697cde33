--liquibase formatted sql logicalFilePath:db/packages/oracle/body/0050_ctx_memory.sql

--changeset ctxasm:ora-pkg-0050-ctx-memory-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_memory is
   -- Dynamic SQL here only ever names a table from table_for_type (a fixed mapping) and columns read from
   -- USER_TAB_COLUMNS for that table, both passed through sys.dbms_assert; every value is a bind. A record is
   -- checked, converted and bound by CTX_ROW_BINDER.

   co_active     constant varchar2(16) := 'active';
   co_superseded constant varchar2(16) := 'superseded';
   co_deleted    constant varchar2(16) := 'deleted';
   co_erased     constant varchar2(16) := 'erased';

   -- generated: memory type names from contract/memory_types.toml; edit the catalogue, then regenerate
   co_memory_types constant varchar2(200) :=
      'guideline, persona, toolbox, entity, workflow, kb_document, kb_chunk, conversation, summary, '
      || 'compression, source_ref';
   -- end generated: memory type names

   co_first_version        constant pls_integer := 1;
   -- characters: a question's cap, as a question becomes a turn
   co_max_turn             constant pls_integer := 8000;

   co_snapshot_pattern constant varchar2(20) := '^[0-9]{1,38}$';

   -- the stored text columns: folding as PostgreSQL does it in a C-locale database, ASCII only (lower(), \s)
   co_upper_ascii        constant varchar2(26) := 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
   co_lower_ascii        constant varchar2(26) := 'abcdefghijklmnopqrstuvwxyz';
   -- an explicit list, no range: a bracket range follows NLS_SORT in Oracle
   co_whitespace_pattern constant varchar2(20) := '[' || chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || ' ]+';
   co_sentence_end       constant varchar2(2) := '. ';
   co_pointer_length     constant pls_integer := 60;
   co_ellipsis           constant varchar2(3) := '...';
   co_last_word_pattern  constant varchar2(20) := ' +[^ ]*$';
   -- the digests of the empty text ('' is NULL in Oracle), and the character set a text is hashed in
   co_empty_md5    constant varchar2(32) := 'd41d8cd98f00b204e9800998ecf8427e';
   co_empty_sha256 constant varchar2(64) := 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
   co_utf8         constant varchar2(8) := 'AL32UTF8';

   type t_text_tab is table of clob;

   e_not_null_violated exception;
   pragma exception_init(e_not_null_violated, -1400);
   e_check_violated exception;
   pragma exception_init(e_check_violated, -2290);
   e_json_syntax exception;
   pragma exception_init(e_json_syntax, -40441);
   e_invalid_scn exception;
   pragma exception_init(e_invalid_scn, -8181);
   e_snapshot_not_found exception;
   pragma exception_init(e_snapshot_not_found, -8180);
   -- ORA-01466: the table's definition changed after the SCN (Flashback Query cannot read across DDL)
   e_table_changed exception;
   pragma exception_init(e_table_changed, -1466);

   procedure not_found_error(in_memory_type in varchar2, in_id in varchar2) is
   begin
      ctx_errors.raise_error(
         in_code   => ctx_errors.co_memory_not_found,
         in_detail => 'no active ' || in_memory_type || ' ' || ctx_errors.quoted(in_text => in_id)
      );
   end not_found_error;

   -- the whitelist: memory type -> table (docs/contract.md); nothing else reaches dynamic SQL as a table
   function table_for_type(in_memory_type in varchar2) return varchar2 is
      l_table user_tab_columns.table_name%type;
   begin
      -- generated: table for type from contract/memory_types.toml; edit the catalogue, then regenerate
      l_table := case in_memory_type
                    when 'guideline' then 'GUIDELINE_MEMORY'
                    when 'persona' then 'PERSONA_MEMORY'
                    when 'toolbox' then 'TOOLBOX_MEMORY'
                    when 'entity' then 'ENTITY_MEMORY'
                    when 'workflow' then 'WORKFLOW_MEMORY'
                    when 'kb_document' then 'KNOWLEDGE_BASE_DOCUMENT'
                    when 'kb_chunk' then 'KNOWLEDGE_BASE_CHUNK'
                    when 'conversation' then 'CONVERSATION_MEMORY'
                    when 'summary' then 'SUMMARIZATION_MEMORY'
                    when 'compression' then 'CONTEXT_COMPRESSION'
                    when 'source_ref' then 'CONTEXT_SOURCE_REF'
                 end;
      -- end generated: table for type
      if l_table is null then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_memory_type,
            in_detail => ctx_errors.quoted(in_text => in_memory_type) || ' is not one of ' || co_memory_types
         );
      end if;
      return sys.dbms_assert.simple_sql_name(str => l_table);
   end table_for_type;

   -- ------------------------------------------------------------------------------------------------------
   -- the stored text columns

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

   -- the dedup identity's text: ASCII letters lower-cased, each run of white space one space, trimmed
   function normalized_text(in_text in clob) return clob is
   begin
      return trim(regexp_replace(ascii_lower(in_text => in_text), co_whitespace_pattern, ' '));
   end normalized_text;

   -- The lower-case hex digest (in_algorithm: DBMS_CRYPTO.HASH_MD5 or HASH_SH256) of the text's UTF-8 bytes.
   -- STANDARD_HASH takes no LOB, so the text is converted to an AL32UTF8 BLOB and hashed by DBMS_CRYPTO.
   function hex_digest(in_text in clob, in_algorithm in pls_integer, in_empty in varchar2) return varchar2 is
      l_bytes       blob;
      l_dest_offset integer := 1;
      l_src_offset  integer := 1;
      l_context     integer := sys.dbms_lob.default_lang_ctx;
      l_warning     integer;
      l_hash        raw(64);
   begin
      if in_text is null or sys.dbms_lob.getlength(lob_loc => in_text) = 0 then
         return in_empty;
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
         l_hash := sys.dbms_crypto.hash(src => l_bytes, typ => in_algorithm);
         sys.dbms_lob.freetemporary(lob_loc => l_bytes);
      exception
         when others then
            -- not handled here: only the temporary LOB is freed, the error goes on unchanged
            sys.dbms_lob.freetemporary(lob_loc => l_bytes);
            raise;
      end;
      return lower(rawtohex(l_hash));
   end hex_digest;

   function text_key(in_text in clob) return varchar2 deterministic is
   begin
      return hex_digest(
                in_text      => normalized_text(in_text => in_text),
                in_algorithm => sys.dbms_crypto.hash_md5,
                in_empty     => co_empty_md5
             );
   end text_key;

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
   begin
      return hex_digest(in_text => in_text, in_algorithm => sys.dbms_crypto.hash_sh256, in_empty => co_empty_sha256);
   end sha256_hex;

   -- ------------------------------------------------------------------------------------------------------
   -- writes

   function put_memory(in_memory_type in varchar2, in_record in clob) return varchar2 is
      l_tenant_id ctx_tenant.tenant_id%type;
      l_table     user_tab_columns.table_name%type;
      l_table_columns ctx_row_binder.t_column_tab;
      l_fields    ctx_row_binder.t_field_tab;
      l_id        pls_integer;
      r_id        ctx_row_binder.t_field_rec;
      l_content   pls_integer;
      r_content   ctx_row_binder.t_field_rec;
      l_text_key  varchar2(32);
      l_pointer   varchar2(64);
      l_stored    boolean := false;
      l_columns   varchar2(4000);
      l_values    varchar2(4000);
      l_cursor    integer;
      l_rows      integer;
      l_code      pls_integer;
      l_message   varchar2(4000);
   begin
      l_tenant_id := ctx_session.require_tenant();
      l_table := table_for_type(in_memory_type => in_memory_type);
      l_table_columns := ctx_row_binder.table_columns(in_table => l_table);
      l_fields := ctx_row_binder.record_fields(
         in_memory_type => in_memory_type,
         in_columns     => l_table_columns,
         in_record      => in_record,
         in_tenant_id   => l_tenant_id
      );
      -- the row must carry the user and agent the session's claim names, when it names them
      ctx_session.require_row_scope(
         in_memory_type => in_memory_type,
         in_user_id     => ctx_row_binder.field_text(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_user_id),
         in_agent_id    => ctx_row_binder.field_text(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_agent_id)
      );
      l_id := ctx_row_binder.field_index(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_id);
      if l_id > 0 then
         r_id := l_fields(l_id);
      end if;
      if l_id = 0 or r_id.is_null then
         ctx_row_binder.field_error(in_memory_type => in_memory_type, in_field => 'id', in_problem => 'required');
      end if;
      l_columns := 'tenant_id, version, status';
      l_values := ':b_tenant_id, :b_version, :b_status';
      for i in 1 .. l_fields.count loop
         l_columns := l_columns || ', ' || lower(sys.dbms_assert.simple_sql_name(str => l_fields(i).column_name));
         l_values := l_values || ', ' || ctx_row_binder.field_expression(io_field => l_fields(i), in_position => i);
      end loop;
      -- the stored text columns, computed from the content once, here
      l_content := ctx_row_binder.field_index(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_content);
      if l_content > 0 and ctx_row_binder.column_index(in_columns => l_table_columns, in_key => lower(ctx_row_binder.co_col_text_key)) > 0 then
         r_content := l_fields(l_content);
         if not r_content.is_null then
            l_stored := true;
            l_text_key := text_key(in_text => r_content.text_value);
            l_pointer := pointer_line(in_text => r_content.text_value);
            l_columns := l_columns || ', text_key, pointer_text';
            l_values := l_values || ', :b_text_key, :b_pointer_text';
         end if;
      end if;
      l_cursor := sys.dbms_sql.open_cursor();
      begin
         sys.dbms_sql.parse(
            c             => l_cursor,
            statement     => 'insert into ' || l_table || ' (' || l_columns || ') values (' || l_values || ')',
            language_flag => sys.dbms_sql.native
         );
         sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_tenant_id', value => l_tenant_id);
         sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_version', value => co_first_version);
         sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_status', value => co_active);
         if l_stored then
            sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_text_key', value => l_text_key);
            sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_pointer_text', value => l_pointer);
         end if;
         ctx_row_binder.bind_fields(in_cursor => l_cursor, in_fields => l_fields);
         l_rows := sys.dbms_sql.execute(c => l_cursor);
         sys.dbms_sql.close_cursor(c => l_cursor);
      exception
         when dup_val_on_index then
            ctx_row_binder.close_cursor(io_cursor => l_cursor);
            ctx_errors.raise_error(
               in_code   => ctx_errors.co_duplicate_memory,
               in_detail => in_memory_type || ' ' || ctx_errors.quoted(in_text => r_id.text_value)
                            || ' already exists for tenant ' || ctx_errors.quoted(in_text => l_tenant_id)
            );
         when e_not_null_violated or e_check_violated then
            l_code := sqlcode;
            l_message := sqlerrm;
            ctx_row_binder.close_cursor(io_cursor => l_cursor);
            ctx_row_binder.raise_constraint_error(
               in_memory_type => in_memory_type,
               in_table       => l_table,
               in_code        => l_code,
               in_message     => l_message
            );
         when others then
            -- not handled here: only the cursor is closed, the error goes on unchanged
            ctx_row_binder.close_cursor(io_cursor => l_cursor);
            raise;
      end;
      return r_id.text_value;
   end put_memory;

   function add_turn(in_record in clob) return number is
      l_tenant_id ctx_tenant.tenant_id%type;
      l_record    json_object_t;
      l_thread_id varchar2(64);
      l_role      varchar2(16);
      l_next      number;
      l_id        varchar2(128);
      l_locked    ctx_tenant.tenant_id%type;
   begin
      l_tenant_id := ctx_session.require_tenant();
      begin
         l_record := json_object_t.parse(jsn => in_record);
      exception
         when others then
            ctx_row_binder.field_error(in_memory_type => 'conversation', in_field => 'record', in_problem => 'not a JSON object');
      end;
      l_thread_id := l_record.get_string(key => 'thread_id');
      l_role := l_record.get_string(key => 'role');
      if l_thread_id is null then
         ctx_row_binder.field_error(in_memory_type => 'conversation', in_field => 'thread_id', in_problem => 'required');
      end if;
      -- A longer turn could never be seated in a window: refused, not stored to be left out of every window.
      if l_record.has(key => 'content') and dbms_lob.getlength(l_record.get_clob(key => 'content')) > co_max_turn then
         ctx_row_binder.field_error(
            in_memory_type => 'conversation',
            in_field       => 'content',
            in_problem     => 'the turn is ' || to_char(dbms_lob.getlength(l_record.get_clob(key => 'content')))
                              || ' characters long, at most ' || to_char(co_max_turn) || ' are allowed'
         );
      end if;
      if l_role is null or l_role not in ('user', 'assistant') then
         ctx_row_binder.field_error(
            in_memory_type => 'conversation',
            in_field       => 'role',
            in_problem     => 'a turn is user or assistant, not ' || ctx_errors.quoted(in_text => l_role)
         );
      end if;
      if l_record.has(key => 'turn_index') then
         ctx_row_binder.field_error(in_memory_type => 'conversation', in_field => 'turn_index', in_problem => 'add_turn assigns it');
      end if;
      if l_record.has(key => 'event_type') then
         ctx_row_binder.field_error(in_memory_type => 'conversation', in_field => 'event_type', in_problem => 'add_turn assigns it');
      end if;
      -- one turn of the tenant at a time: the next index is read and written under this lock
      select t.tenant_id
        into l_locked
        from ctx_tenant t
       where t.tenant_id = l_tenant_id
         for update;
      select nvl(max(c.turn_index), 0) + 1
        into l_next
        from conversation_memory c
       where c.tenant_id = l_tenant_id
         and c.thread_id = l_thread_id
         and c.event_type = 'message';
      l_record.put(key => 'turn_index', val => l_next);
      l_id := put_memory(in_memory_type => 'conversation', in_record => l_record.to_clob());
      return l_next;
   end add_turn;

   function supersede(in_memory_type in varchar2, in_id in varchar2, in_record in clob) return number is
      l_tenant_id  ctx_tenant.tenant_id%type;
      l_table      user_tab_columns.table_name%type;
      l_columns    ctx_row_binder.t_column_tab;
      l_fields     ctx_row_binder.t_field_tab;
      l_field      pls_integer;
      r_field      ctx_row_binder.t_field_rec;
      l_version    number;
      l_old_from   timestamp with time zone;
      l_new_from   timestamp with time zone;
      l_names      varchar2(4000);
      l_values     varchar2(4000);
      l_name       varchar2(128);
      l_expression varchar2(400);
      l_cursor     integer;
      l_rows       integer;
      l_code       pls_integer;
      l_message    varchar2(4000);
      l_content    pls_integer;
      r_content    ctx_row_binder.t_field_rec;
      l_text_key   varchar2(32);
      l_pointer    varchar2(64);
      l_stored     boolean := false;
      l_user_id    varchar2(64);
      l_agent_id   varchar2(64);
   begin
      l_tenant_id := ctx_session.require_tenant();
      l_table := table_for_type(in_memory_type => in_memory_type);
      l_columns := ctx_row_binder.table_columns(in_table => l_table);
      l_fields := ctx_row_binder.record_fields(
         in_memory_type => in_memory_type,
         in_columns     => l_columns,
         in_record      => in_record,
         in_tenant_id   => l_tenant_id
      );
      l_field := ctx_row_binder.field_index(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_id);
      if l_field > 0 then
         r_field := l_fields(l_field);
      end if;
      if l_field > 0 and (r_field.is_null or in_id is null or r_field.text_value <> in_id) then
         ctx_row_binder.field_error(
            in_memory_type => in_memory_type,
            in_field       => 'id',
            in_problem     => 'a new version keeps the id ' || ctx_errors.quoted(in_text => in_id)
         );
      end if;

      -- the active version, locked until the caller ends the transaction
      begin
         execute immediate 'select version, valid_from, user_id, agent_id from ' || l_table
                           || ' where tenant_id = :b_tenant_id and id = :b_id and status = :b_status for update'
            into l_version, l_old_from, l_user_id, l_agent_id
            using l_tenant_id, in_id, co_active;
      exception
         when no_data_found then
            not_found_error(in_memory_type => in_memory_type, in_id => in_id);
      end;
      -- Both the version it retires and the one it writes must be the session's to write.
      ctx_session.require_row_scope(in_memory_type => in_memory_type, in_user_id => l_user_id,
                                    in_agent_id => l_agent_id);
      if ctx_row_binder.field_index(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_user_id) > 0 then
         l_user_id := ctx_row_binder.field_text(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_user_id);
      end if;
      if ctx_row_binder.field_index(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_agent_id) > 0 then
         l_agent_id := ctx_row_binder.field_text(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_agent_id);
      end if;
      ctx_session.require_row_scope(in_memory_type => in_memory_type, in_user_id => l_user_id,
                                    in_agent_id => l_agent_id);

      l_field := ctx_row_binder.field_index(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_valid_from);
      l_new_from := systimestamp;
      if l_field > 0 then
         r_field := l_fields(l_field);
         if not r_field.is_null then
            l_new_from := r_field.ts_value;
         end if;
      end if;
      if l_new_from < l_old_from then
         ctx_row_binder.field_error(
            in_memory_type => in_memory_type,
            in_field       => 'valid_from',
            in_problem     => 'is earlier than version ' || to_char(l_version) || '''s valid_from'
         );
      end if;

      -- retire the active version
      execute immediate 'update ' || l_table
                        || ' set status = :b_status, valid_until = :b_valid_until'
                        || ' where tenant_id = :b_tenant_id and id = :b_id and version = :b_version'
         using co_superseded, l_new_from, l_tenant_id, in_id, l_version;

      -- a new content brings its own stored text columns; without one they are inherited with the text
      l_content := ctx_row_binder.field_index(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_content);
      if l_content > 0 and ctx_row_binder.column_index(in_columns => l_columns, in_key => lower(ctx_row_binder.co_col_text_key)) > 0 then
         r_content := l_fields(l_content);
         l_text_key := text_key(in_text => r_content.text_value);
         l_pointer := pointer_line(in_text => r_content.text_value);
      end if;

      -- version + 1: the retired version's fields, overlaid by in_record; lifecycle columns start afresh
      for i in 1 .. l_columns.count loop
         l_name := l_columns(i).column_name;
         l_field := ctx_row_binder.field_index(in_fields => l_fields, in_column_name => l_name);
         l_expression := case l_name
                            when ctx_row_binder.co_col_tenant_id then ':b_tenant_id'
                            when ctx_row_binder.co_col_id then 'o.id'
                            when ctx_row_binder.co_col_version then ':b_new_version'
                            when ctx_row_binder.co_col_status then ':b_status'
                            when ctx_row_binder.co_col_valid_from then ':b_valid_from'
                         end;
         if l_expression is null and l_field > 0 then
            l_expression := ctx_row_binder.field_expression(io_field => l_fields(l_field), in_position => l_field);
         elsif l_expression is null and l_name in (ctx_row_binder.co_col_text_key, ctx_row_binder.co_col_pointer_text) and l_content > 0 then
            l_stored := true;
            l_expression := case l_name when ctx_row_binder.co_col_text_key then ':b_text_key' else ':b_pointer_text' end;
         elsif l_expression is null and l_name = ctx_row_binder.co_col_content_tokens
               and ctx_row_binder.field_index(in_fields => l_fields, in_column_name => ctx_row_binder.co_col_content) > 0
         then
            -- a stored token count counts one text: a new text without its own count gets none
            l_expression := 'null';
         elsif l_expression is null and l_name not in (ctx_row_binder.co_col_valid_until, ctx_row_binder.co_col_deleted_at, ctx_row_binder.co_col_created_at) then
            l_expression := 'o.' || lower(sys.dbms_assert.simple_sql_name(str => l_name));
         end if;
         if l_expression is not null then
            l_names := l_names || case when l_names is not null then ', ' end
                       || lower(sys.dbms_assert.simple_sql_name(str => l_name));
            l_values := l_values || case when l_values is not null then ', ' end || l_expression;
         end if;
      end loop;
      l_cursor := sys.dbms_sql.open_cursor();
      begin
         sys.dbms_sql.parse(
            c             => l_cursor,
            statement     => 'insert into ' || l_table || ' (' || l_names || ') select ' || l_values
                             || ' from ' || l_table || ' o where o.tenant_id = :b_tenant_id and o.id = :b_id'
                             || ' and o.version = :b_old_version',
            language_flag => sys.dbms_sql.native
         );
         sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_tenant_id', value => l_tenant_id);
         sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_id', value => in_id);
         sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_old_version', value => l_version);
         sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_new_version', value => l_version + 1);
         sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_status', value => co_active);
         sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_valid_from', value => l_new_from);
         if l_stored then
            sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_text_key', value => l_text_key);
            sys.dbms_sql.bind_variable(c => l_cursor, name => 'b_pointer_text', value => l_pointer);
         end if;
         ctx_row_binder.bind_fields(in_cursor => l_cursor, in_fields => l_fields);
         l_rows := sys.dbms_sql.execute(c => l_cursor);
         sys.dbms_sql.close_cursor(c => l_cursor);
      exception
         when e_not_null_violated or e_check_violated then
            l_code := sqlcode;
            l_message := sqlerrm;
            ctx_row_binder.close_cursor(io_cursor => l_cursor);
            ctx_row_binder.raise_constraint_error(
               in_memory_type => in_memory_type,
               in_table       => l_table,
               in_code        => l_code,
               in_message     => l_message
            );
         when others then
            -- not handled here: only the cursor is closed, the error goes on unchanged
            ctx_row_binder.close_cursor(io_cursor => l_cursor);
            raise;
      end;
      return l_version + 1;
   end supersede;

   procedure delete_memory(
      in_memory_type in varchar2,
      in_id          in varchar2,
      in_deleted_at  in timestamp with time zone default systimestamp
   ) is
      l_tenant_id ctx_tenant.tenant_id%type;
      l_table     user_tab_columns.table_name%type;
      l_user_id   varchar2(64);
      l_agent_id  varchar2(64);
   begin
      l_tenant_id := ctx_session.require_tenant();
      l_table := table_for_type(in_memory_type => in_memory_type);
      -- the active version must be the session's to write (a claim for one user deletes none of another's)
      begin
         execute immediate 'select user_id, agent_id from ' || l_table
                           || ' where tenant_id = :b_tenant_id and id = :b_id and status = :b_active'
            into l_user_id, l_agent_id
            using l_tenant_id, in_id, co_active;
      exception
         when no_data_found then
            not_found_error(in_memory_type => in_memory_type, in_id => in_id);
      end;
      ctx_session.require_row_scope(in_memory_type => in_memory_type, in_user_id => l_user_id,
                                    in_agent_id => l_agent_id);
      execute immediate 'update ' || l_table
                        || ' set status = :b_status, deleted_at = :b_deleted_at'
                        || ' where tenant_id = :b_tenant_id and id = :b_id and status = :b_active'
         using co_deleted, nvl(in_deleted_at, systimestamp), l_tenant_id, in_id, co_active;
      if sql%rowcount = 0 then
         not_found_error(in_memory_type => in_memory_type, in_id => in_id);
      end if;
   end delete_memory;

   -- Every version of one row, scrubbed: free text and payloads go, keys and scope stay. As the PostgreSQL twin
   -- (ctxasm.scrub_row): a text column that must hold a value gets '[erased]', a JSON column that must hold
   -- one gets an empty array (source_refs) or object, everything else of those kinds becomes NULL.
   function scrub_row(in_table in varchar2, in_tenant_id in varchar2, in_id in varchar2) return number is
      co_erased_literal constant varchar2(12) := '''[erased]''';
      co_not_nullable   constant varchar2(1) := 'N';
      l_columns ctx_row_binder.t_column_tab;
      r_column  ctx_row_binder.t_column_rec;
      l_name    varchar2(128);
      l_sets    varchar2(32767);
      l_value   varchar2(200);
      l_sql     varchar2(32767);
   begin
      l_columns := ctx_row_binder.table_columns(in_table => in_table);
      for i in 1 .. l_columns.count loop
         r_column := l_columns(i);
         l_name := lower(sys.dbms_assert.simple_sql_name(str => r_column.column_name));
         l_value := null;
         if l_name in ('tenant_id', 'id', 'version', 'user_id', 'agent_id', 'thread_id', 'status', 'role',
                       'event_type', 'source_type', 'source_id', 'derived_type', 'derived_id', 'relation',
                       'document_id') then
            l_value := null;
         elsif r_column.data_type = ctx_row_binder.co_type_json then
            l_value := case
                          when r_column.nullable <> co_not_nullable then 'null'
                          when l_name = 'source_refs' then 'json(''[]'')'
                          else 'json(''{}'')'
                       end;
         elsif r_column.data_type in (ctx_row_binder.co_type_varchar2, ctx_row_binder.co_type_clob) then
            l_value := case when r_column.nullable = co_not_nullable then co_erased_literal else 'null' end;
         elsif r_column.data_type = ctx_row_binder.co_type_vector or l_name = 'confidence' then
            l_value := 'null';
         end if;
         if l_value is not null then
            l_sets := l_sets || case when l_sets is not null then ', ' end || l_name || ' = ' || l_value;
         end if;
      end loop;
      l_sql := 'update ' || in_table || ' set ' || l_sets
               || ', status = :b_status, deleted_at = nvl(deleted_at, systimestamp)'
               || ' where tenant_id = :b_tenant_id and id = :b_id and status <> :b_erased';
      -- a version erased before has nothing left to scrub: it is not counted again (a second erase reports none)
      execute immediate l_sql using co_erased, in_tenant_id, in_id, co_erased;
      return sql%rowcount;
   end scrub_row;

   -- A manifest that rendered an erased memory: every version of it gets [type, id] in erased_dependencies,
   -- and loses its question when the question holds one of the erased texts in full (PostgreSQL: position()).
   procedure mark_manifest(
      in_tenant_id   in varchar2,
      in_manifest_id in varchar2,
      in_memory_type in varchar2,
      in_id          in varchar2,
      in_contents    in t_text_tab,
      io_marked      in out number
   ) is
      co_marks_key    constant varchar2(30) := 'erased_dependencies';
      co_question_key constant varchar2(30) := 'question';
      l_manifest json_object_t;
      l_existing json_array_t;
      l_marks    json_array_t;
      l_mark     json_array_t;
      l_question clob;
      l_content  clob;
      l_stored   clob;
   begin
      for r_version in (
         select m.version, json_serialize(m.content_json returning clob) as manifest_json
           from conversation_memory m
          where m.tenant_id = in_tenant_id
            and m.id = in_manifest_id
            and m.event_type = 'context_manifest'
      ) loop
         l_manifest := json_object_t.parse(jsn => r_version.manifest_json);
         -- a detached copy of the marks so far, whether get_array hands out a reference or a copy
         if l_manifest.has(key => co_marks_key) then
            l_existing := l_manifest.get_array(key => co_marks_key);
            l_marks := json_array_t.parse(jsn => l_existing.to_clob());
         else
            l_marks := json_array_t();
         end if;
         l_mark := json_array_t();
         l_mark.append(val => in_memory_type);
         l_mark.append(val => in_id);
         l_marks.append(val => l_mark);
         l_manifest.put(key => co_marks_key, val => l_marks);
         l_question := l_manifest.get_clob(key => co_question_key);
         for i in 1 .. in_contents.count loop
            l_content := in_contents(i);
            -- INSTR on two CLOBs compares whole texts of any length (SQL semantics for LOBs)
            if l_question is not null and l_content is not null and instr(l_question, l_content) > 0 then
               l_manifest.put(key => co_question_key, val => '[erased]');
            end if;
         end loop;
         l_stored := l_manifest.to_clob();
         update conversation_memory m
            set m.content_json = json(l_stored)
          where m.tenant_id = in_tenant_id
            and m.id = in_manifest_id
            and m.version = r_version.version;
         -- counted as PostgreSQL's UPDATE counts them: the manifest versions changed, none for an id of no row
         io_marked := io_marked + sql%rowcount;
      end loop;
   end mark_manifest;

   -- Whether a context_source_ref row of scope (in_user_id, in_agent_id) may carry the erasure to the row it names
   -- as derived: that row is there (a version not erased yet, that the session sees) and every version of it is
   -- of that user, when the reference names one, and of that agent, when it names one. A context_source_ref row is
   -- a row of its own, which a claim of its scope may write naming any row it can see: followed further, a claim
   -- for one user could make the erasure of its own row reach a row of the whole tenant or of another user. A
   -- row's own source_refs, a compression's source and a chunk's document_id were written by whoever could write
   -- that row, and are followed whatever its scope (PostgreSQL: the same test in ctxasm.derived_rows).
   function provenance_covers(
      in_tenant_id    in varchar2,
      in_derived_type in varchar2,
      in_derived_id   in varchar2,
      in_user_id      in varchar2,
      in_agent_id     in varchar2
   ) return boolean is
      l_live    pls_integer;
      l_outside pls_integer;
      l_sql     varchar2(1000);
   begin
      -- placeholders bind by position in dynamic SQL: the user and the agent are given twice each
      l_sql := 'select count(case when d.status <> :b_erased then 1 end),'
               || ' count(case when (:b_user_id is not null and (d.user_id is null or d.user_id <> :b_user_id))'
               || ' or (:b_agent_id is not null and (d.agent_id is null or d.agent_id <> :b_agent_id))'
               || ' then 1 end)'
               || ' from ' || table_for_type(in_memory_type => in_derived_type) || ' d'
               || ' where d.tenant_id = :b_tenant_id and d.id = :b_id';
      execute immediate l_sql
         into l_live, l_outside
         using co_erased, in_user_id, in_user_id, in_agent_id, in_agent_id, in_tenant_id, in_derived_id;
      return l_live > 0 and l_outside = 0;
   end provenance_covers;

   -- What the stored provenance says was made from one erased memory or from a window in in_manifests (one
   -- that showed its text), to erase next (PostgreSQL: ctxasm.derived_rows): every row of any memory table whose
   -- source_refs cite either (a user's own turn excepted where it cites a window: it is the window's question,
   -- not made from it), every row a context_source_ref names as derived from the memory when that reference's own
   -- user and agent could have written the row (provenance_covers), its compressions, the chunks of a
   -- kb_document, and every event recorded for such a window. Rows already erased are left out. No list of
   -- today's writers: a new kind of derived row is followed as soon as it records its sources.
   function copies_of(
      in_tenant_id   in varchar2,
      in_memory_type in varchar2,
      in_id          in varchar2,
      in_manifests   in sys.odcivarchar2list
   ) return json_array_t is
      co_type_pattern constant varchar2(20) := '[^, ]+';
      l_copies json_array_t := json_array_t();
      l_pair   json_array_t;
      l_type   varchar2(32);
      l_table  user_tab_columns.table_name%type;
      l_ids    sys.odcivarchar2list;
      l_sql    varchar2(2000);
      l_count  pls_integer := regexp_count(co_memory_types, co_type_pattern);
   begin
      for i in 1 .. l_count loop
         l_type := regexp_substr(co_memory_types, co_type_pattern, 1, i);
         l_table := table_for_type(in_memory_type => l_type);
         l_sql := 'select t.id from ' || l_table || ' t'
                  || ' where t.tenant_id = :b_tenant_id and t.status <> :b_erased'
                  || ' and exists (select 1 from json_table(t.source_refs, ''$[*]'''
                  || ' columns (ref_type varchar2(32) path ''$.type'', ref_id varchar2(128) path ''$.id'')) j'
                  || ' where (j.ref_type = :b_type and j.ref_id = :b_id)'
                  || ' or (j.ref_type = ''manifest'' and j.ref_id in (select column_value from table(:b_manifests))'
                  || case when l_type = 'conversation' then ' and t.role <> ''user''' end
                  || '))';
         execute immediate l_sql
            bulk collect into l_ids
            using in_tenant_id, co_erased, in_memory_type, in_id, in_manifests;
         for j in 1 .. l_ids.count loop
            l_pair := json_array_t();
            l_pair.append(val => l_type);
            l_pair.append(val => l_ids(j));
            l_copies.append(val => l_pair);
         end loop;
      end loop;
      for r_ref in (
         select distinct r.derived_type, r.derived_id, r.user_id, r.agent_id
           from context_source_ref r
          where r.tenant_id = in_tenant_id
            and r.source_type = in_memory_type
            and r.source_id = in_id
            and r.status <> co_erased
            and r.derived_type <> 'manifest'
      ) loop
         -- a derived type the catalogue does not know is not a memory row: nothing to erase there
         if instr(', ' || co_memory_types || ',', ', ' || r_ref.derived_type || ',') > 0
            and provenance_covers(in_tenant_id    => in_tenant_id,
                                  in_derived_type => r_ref.derived_type,
                                  in_derived_id   => r_ref.derived_id,
                                  in_user_id      => r_ref.user_id,
                                  in_agent_id     => r_ref.agent_id) then
            l_pair := json_array_t();
            l_pair.append(val => r_ref.derived_type);
            l_pair.append(val => r_ref.derived_id);
            l_copies.append(val => l_pair);
         end if;
      end loop;
      for r_copy in (
         select cast('compression' as varchar2(32)) as memory_type, c.id
           from context_compression c
          where c.tenant_id = in_tenant_id
            and c.source_type = in_memory_type
            and c.source_id = in_id
            and c.status <> co_erased
         union
         -- a chunk names its document by document_id, not by source_refs: it goes with the document
         select cast('kb_chunk' as varchar2(32)), k.id
           from knowledge_base_chunk k
          where k.tenant_id = in_tenant_id
            and in_memory_type = 'kb_document'
            and k.document_id = in_id
            and k.status <> co_erased
         union
         select cast('conversation' as varchar2(32)), m.id
           from conversation_memory m
          where m.tenant_id = in_tenant_id
            and m.role = 'event'
            and m.event_type <> 'context_manifest'
            and m.status <> co_erased
            and json_value(m.content_json, '$.manifest_id') in (select column_value from table(in_manifests))
      ) loop
         l_pair := json_array_t();
         l_pair.append(val => r_copy.memory_type);
         l_pair.append(val => r_copy.id);
         l_copies.append(val => l_pair);
      end loop;
      return l_copies;
   end copies_of;

   function erase_report(in_memory_type in varchar2, in_id in varchar2) return clob is
      type t_seen_tab is table of boolean index by varchar2(200);
      l_tenant_id ctx_tenant.tenant_id%type;
      l_table     user_tab_columns.table_name%type;
      l_scopes    sys_refcursor;
      l_sql       varchar2(400);
      l_user_id   varchar2(64);
      l_agent_id  varchar2(64);
      l_versions  pls_integer := 0;
      l_queue     json_array_t := json_array_t();
      l_position  pls_integer := 0;
      l_pair      json_array_t;
      l_element   json_element_t;
      l_copies    json_array_t;
      l_last      pls_integer;
      l_type      varchar2(32);
      l_id        varchar2(128);
      l_key       varchar2(200);
      l_seen      t_seen_tab;
      l_erased    json_array_t := json_array_t();
      l_contents  t_text_tab := t_text_tab();
      l_texts     t_text_tab;
      l_manifests sys.odcivarchar2list := sys.odcivarchar2list();
      l_found     sys.odcivarchar2list;
      l_manifest  varchar2(128);
      l_rows      number;
      l_total     number := 0;
      l_marked    number := 0;
      l_tables    json_object_t := json_object_t();
      l_counts    json_object_t;
      l_report    json_object_t := json_object_t();
   begin
      l_tenant_id := ctx_session.require_tenant();
      l_table := table_for_type(in_memory_type => in_memory_type);
      -- Every version must be the session's to write: a claim for one user erases none of another's rows.
      l_sql := 'select user_id, agent_id from ' || l_table || ' where tenant_id = :b_tenant_id and id = :b_id';
      open l_scopes for l_sql using l_tenant_id, in_id;
      loop
         fetch l_scopes into l_user_id, l_agent_id;
         exit when l_scopes%notfound;
         l_versions := l_versions + 1;
         ctx_session.require_row_scope(in_memory_type => in_memory_type, in_user_id => l_user_id,
                                       in_agent_id => l_agent_id);
      end loop;
      close l_scopes;
      if l_versions = 0 then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_memory_not_found,
            in_detail => 'no ' || in_memory_type || ' ' || ctx_errors.quoted(in_text => in_id) || ' to erase'
         );
      end if;
      l_pair := json_array_t();
      l_pair.append(val => in_memory_type);
      l_pair.append(val => in_id);
      l_queue.append(val => l_pair);
      -- Follow every copy until nothing new turns up (PostgreSQL: the same walk in ctx_memory.erase_report).
      while l_position < l_queue.get_size() loop
         l_element := l_queue.get(l_position);
         l_position := l_position + 1;
         l_pair := treat(l_element as json_array_t);
         l_type := l_pair.get_string(0);
         l_id := l_pair.get_string(1);
         l_key := l_type || ':' || l_id;
         if not l_seen.exists(l_key) then
            l_seen(l_key) := true;
            l_table := table_for_type(in_memory_type => l_type);
            -- References and texts first: after the scrub there is nothing left to follow.
            execute immediate 'select content from ' || l_table || ' where tenant_id = :b_tenant_id and id = :b_id'
               bulk collect into l_texts using l_tenant_id, l_id;
            for i in 1 .. l_texts.count loop
               l_contents.extend();
               l_contents(l_contents.count) := l_texts(i);
            end loop;
            -- the windows that showed its text: rendered it, or its compression (one that only excluded it, or
            -- cited it for an annotation, showed the model none of its text); as in copies_of, a reference is
            -- followed only to a manifest its own user and agent could have recorded: one of theirs, which the
            -- session sees, when it names a user or an agent; any, when it names neither (a tenant-wide writer's)
            select distinct r.derived_id
              bulk collect into l_found
              from context_source_ref r
             where r.tenant_id = l_tenant_id
               and r.source_type = l_type
               and r.source_id = l_id
               and r.derived_type = 'manifest'
               and r.relation in ('rendered', 'compression')
               and ((r.user_id is null and r.agent_id is null)
                    or exists (
                          select 1
                            from conversation_memory m
                           where m.tenant_id = l_tenant_id
                             and m.id = r.derived_id
                             and m.event_type = 'context_manifest'
                       ))
               and not exists (
                      select 1
                        from conversation_memory m
                       where m.tenant_id = l_tenant_id
                         and m.id = r.derived_id
                         and ((r.user_id is not null and (m.user_id is null or m.user_id <> r.user_id))
                              or (r.agent_id is not null and (m.agent_id is null or m.agent_id <> r.agent_id)))
                   );
            for i in 1 .. l_found.count loop
               l_manifest := l_found(i);
               if not l_seen.exists('manifest:' || l_manifest) then
                  l_seen('manifest:' || l_manifest) := true;
                  l_manifests.extend();
                  l_manifests(l_manifests.count) := l_manifest;
               end if;
            end loop;
            l_copies := copies_of(in_tenant_id => l_tenant_id, in_memory_type => l_type, in_id => l_id,
                                  in_manifests => l_manifests);
            l_last := l_copies.get_size() - 1;
            for i in 0 .. l_last loop
               l_queue.append(val => l_copies.get(i));
            end loop;
            l_rows := scrub_row(in_table => l_table, in_tenant_id => l_tenant_id, in_id => l_id);
            -- the report lists what went: a row the session cannot see (VPD) was not touched
            if l_rows > 0 then
               l_erased.append(val => l_pair);
               l_total := l_total + l_rows;
               if l_tables.has(key => lower(l_table)) then
                  l_counts := l_tables.get_object(key => lower(l_table));
                  l_counts.put(key => 'rows', val => l_counts.get_number(key => 'rows') + l_rows);
               else
                  l_counts := json_object_t();
                  l_counts.put(key => 'rows', val => l_rows);
                  -- Oracle keeps no history table: earlier images are undo, the database's own (docs/security.md)
                  l_counts.put(key => 'history_rows', val => 0);
               end if;
               l_tables.put(key => lower(l_table), val => l_counts);
            end if;
         end if;
      end loop;
      for i in 1 .. l_manifests.count loop
         l_manifest := l_manifests(i);
         mark_manifest(
            in_tenant_id   => l_tenant_id,
            in_manifest_id => l_manifest,
            in_memory_type => in_memory_type,
            in_id          => in_id,
            in_contents    => l_contents,
            io_marked      => l_marked
         );
      end loop;
      l_report.put(key => 'erased', val => l_erased);
      l_report.put(key => 'tables', val => l_tables);
      l_report.put(key => 'manifests_marked', val => l_marked);
      l_report.put(key => 'total', val => l_total);
      return l_report.to_clob();
   end erase_report;

   function erase(in_memory_type in varchar2, in_id in varchar2) return number is
      l_report json_object_t;
   begin
      l_report := json_object_t.parse(jsn => erase_report(in_memory_type => in_memory_type, in_id => in_id));
      return l_report.get_number(key => 'total');
   end erase;

   function capture_snapshot return varchar2 is
   begin
      return to_char(sys.dbms_flashback.get_system_change_number);
   end capture_snapshot;

   function rows_as_of(in_memory_type in varchar2, in_snapshot in varchar2) return sys_refcursor is
      l_tenant_id ctx_tenant.tenant_id%type;
      l_table     user_tab_columns.table_name%type;
      l_columns   ctx_row_binder.t_column_tab;
      r_column    ctx_row_binder.t_column_rec;
      l_name      varchar2(128);
      l_members   varchar2(32767);
      l_sql       varchar2(32767);
      l_scn       number;
      l_probe     number;
      l_rows      sys_refcursor;
   begin
      l_tenant_id := ctx_session.require_tenant();
      l_table := table_for_type(in_memory_type => in_memory_type);
      if in_snapshot is null or not regexp_like(in_snapshot, co_snapshot_pattern) then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_snapshot,
            in_detail => ctx_errors.quoted(in_text => substr(in_snapshot, 1, 200)) || ' is not an SCN from capture_snapshot'
         );
      end if;
      l_scn := to_number(in_snapshot);
      l_columns := ctx_row_binder.table_columns(in_table => l_table);
      for i in 1 .. l_columns.count loop
         r_column := l_columns(i);
         l_name := lower(sys.dbms_assert.simple_sql_name(str => r_column.column_name));
         l_members := l_members || case when i > 1 then ', ' end || '''' || l_name || ''' value '
                      || case r_column.data_type
                            when ctx_row_binder.co_type_vector then 'from_vector(t.' || l_name || ' returning clob) format json'
                            else 't.' || l_name
                         end;
      end loop;
      -- A version erased since the SCN is left out: undo still holds its text, the contract does not.
      l_sql := 'select json_object(' || l_members || ' null on null returning clob) as row_json'
               || ' from ' || l_table || ' as of scn :b_scn t'
               || ' where t.tenant_id = :b_tenant_id'
               || ' and not exists (select 1 from ' || l_table || ' n where n.tenant_id = t.tenant_id'
               || ' and n.id = t.id and n.version = t.version and n.status = :b_erased)'
               || ' order by t.id, t.version';
      begin
         -- Oracle may refuse the SCN when a cursor opens or only at its first fetch, which would be the caller's
         -- and unmapped: one row is read here first, where the refusal is mapped
         execute immediate 'select count(*) from ' || l_table || ' as of scn :b_scn t where rownum <= 1'
            into l_probe
            using l_scn;
         open l_rows for l_sql using l_scn, l_tenant_id, co_erased;
      exception
         when e_invalid_scn or e_snapshot_not_found or e_table_changed then
            ctx_errors.raise_error(
               in_code   => ctx_errors.co_invalid_snapshot,
               in_detail => ctx_errors.quoted(in_text => in_snapshot) || ' is not an SCN Oracle can read: ' || sqlerrm
            );
      end;
      return l_rows;
   end rows_as_of;

   function read_event(in_event_id in conversation_memory.id%type) return clob is
      l_tenant_id ctx_tenant.tenant_id%type;
      l_event     clob;
   begin
      l_tenant_id := ctx_session.require_tenant();
      select json_object('event_type' value m.event_type, 'content' value m.content,
                         'content_json' value m.content_json null on null returning clob)
        into l_event
        from conversation_memory m
       where m.tenant_id = l_tenant_id
         and m.id = in_event_id
         and m.role = 'event'
         and m.status = co_active;
      return l_event;
   exception
      when no_data_found then
         return null;
   end read_event;

   -- in_refs parsed as a JSON array of at most co_max_refs [type, id, version] references (the version a number),
   -- else invalid_argument with in_problem: the check row_states and read_compressions share
   function ref_list(in_refs in clob, in_problem in varchar2) return json_array_t is
      co_max_refs constant pls_integer := 10000;
      l_element json_element_t;
      l_refs    json_array_t;
      l_ref     json_array_t;
      l_member  json_element_t;
      l_last    pls_integer;
   begin
      begin
         l_element := json_element_t.parse(in_refs);
      exception
         when e_json_syntax then
            ctx_errors.raise_error(in_code => ctx_errors.co_invalid_argument, in_detail => in_problem);
      end;
      if l_element is null or not l_element.is_array() then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_argument, in_detail => in_problem);
      end if;
      l_refs := treat(l_element as json_array_t);
      if l_refs.get_size() > co_max_refs then
         ctx_errors.raise_error(in_code => ctx_errors.co_invalid_argument, in_detail => in_problem);
      end if;
      l_last := l_refs.get_size() - 1;
      for i in 0 .. l_last loop
         l_member := l_refs.get(i);
         if not l_member.is_array() then
            ctx_errors.raise_error(in_code => ctx_errors.co_invalid_argument, in_detail => in_problem);
         end if;
         l_ref := treat(l_member as json_array_t);
         if l_ref.get_size() <> 3 then
            ctx_errors.raise_error(in_code => ctx_errors.co_invalid_argument, in_detail => in_problem);
         end if;
         l_member := l_ref.get(2);
         if not l_member.is_number() then
            ctx_errors.raise_error(in_code => ctx_errors.co_invalid_argument, in_detail => in_problem);
         end if;
      end loop;
      return l_refs;
   end ref_list;

   function row_states(in_refs in clob, in_snapshot in varchar2) return clob is
      co_bad_refs constant varchar2(200) :=
         'in_refs must be a JSON array of at most 10000 [type, id, version] references';
      l_tenant_id ctx_tenant.tenant_id%type;
      l_refs      json_array_t;
      l_ref       json_array_t;
      l_result    json_object_t := json_object_t();
      l_pair      json_array_t;
      l_table     user_tab_columns.table_name%type;
      l_id        varchar2(4000);
      l_version   number;
      l_now       varchar2(16);
      l_then      varchar2(16);
      l_scn       number;
      l_last      pls_integer;
   begin
      l_tenant_id := ctx_session.require_tenant();
      if in_snapshot is null or not regexp_like(in_snapshot, co_snapshot_pattern) then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_snapshot,
            in_detail => ctx_errors.quoted(in_text => in_snapshot) || ' is not an SCN from capture_snapshot'
         );
      end if;
      l_scn := to_number(in_snapshot);
      l_refs := ref_list(in_refs => in_refs, in_problem => co_bad_refs);
      l_last := l_refs.get_size() - 1;
      for i in 0 .. l_last loop
         l_ref := treat(l_refs.get(i) as json_array_t);
         l_table := table_for_type(in_memory_type => l_ref.get_string(0));
         l_id := l_ref.get_string(1);
         l_version := l_ref.get_number(2);
         begin
            execute immediate 'select t.status from ' || l_table || ' t'
                              || ' where t.tenant_id = :b_tenant_id and t.id = :b_id and t.version = :b_version'
               into l_now
               using l_tenant_id, l_id, l_version;
         exception
            when no_data_found then
               l_now := null;
         end;
         if l_now is not null then
            begin
               execute immediate 'select t.status from ' || l_table || ' as of scn :b_scn t'
                                 || ' where t.tenant_id = :b_tenant_id and t.id = :b_id and t.version = :b_version'
                  into l_then
                  using l_scn, l_tenant_id, l_id, l_version;
            exception
               when no_data_found or e_invalid_scn or e_snapshot_not_found or e_table_changed then
                  -- not readable at the snapshot (written later, the undo no longer reaches it, or the table's
                  -- definition changed since: ORA-01466)
                  l_then := null;
            end;
            l_pair := json_array_t();
            l_pair.append(l_now);
            if l_then is null then
               l_pair.append_null();
            else
               l_pair.append(l_then);
            end if;
            l_result.put(l_ref.get_string(0) || ':' || l_id || ':' || to_char(l_version), l_pair);
         end if;
      end loop;
      return l_result.to_clob();
   end row_states;

   function read_compressions(in_refs in clob) return clob is
      co_bad_refs constant varchar2(200) :=
         'in_refs must be a JSON array of at most 10000 ["compression", id, version] references';
      co_compression constant varchar2(16) := 'compression';
      l_tenant_id ctx_tenant.tenant_id%type;
      l_refs      json_array_t;
      l_ref       json_array_t;
      l_result    json_object_t := json_object_t();
      l_row       clob;
      l_id        context_compression.id%type;
      l_version   number;
      l_last      pls_integer;
   begin
      l_tenant_id := ctx_session.require_tenant();
      l_refs := ref_list(in_refs => in_refs, in_problem => co_bad_refs);
      l_last := l_refs.get_size() - 1;
      for i in 0 .. l_last loop
         l_ref := treat(l_refs.get(i) as json_array_t);
         if nvl(l_ref.get_string(0), '-') <> co_compression then
            ctx_errors.raise_error(in_code => ctx_errors.co_invalid_argument, in_detail => co_bad_refs);
         end if;
         l_id := l_ref.get_string(1);
         l_version := l_ref.get_number(2);
         begin
            select json_object(
                      'status' value k.status,
                      'content' value k.content,
                      'content_tokens' value k.content_tokens,
                      'source' value json_array(k.source_type, k.source_id, k.source_version),
                      'source_hash' value k.source_hash,
                      'generating_model' value k.generating_model,
                      'prompt_version' value k.prompt_version
                      null on null returning clob
                   )
              into l_row
              from context_compression k
             where k.tenant_id = l_tenant_id
               and k.id = l_id
               and k.version = l_version;
            l_result.put(co_compression || ':' || l_id || ':' || to_char(l_version), json_object_t.parse(l_row));
         exception
            when no_data_found then
               -- not a version this session can see: left out of the result, as on PostgreSQL
               null;
         end;
      end loop;
      return l_result.to_clob();
   end read_compressions;

   procedure require_limit(in_limit in number, in_max in pls_integer) is
   begin
      if in_limit is null or in_limit < 1 or in_limit > in_max or in_limit <> trunc(in_limit) then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_limit must be 1..' || to_char(in_max)
         );
      end if;
   end require_limit;

   function thread_activity(
      in_user_id  in conversation_memory.user_id%type,
      in_agent_id in conversation_memory.agent_id%type,
      in_limit    in number
   ) return clob is
      co_max_limit constant pls_integer := 10000;
      l_tenant_id ctx_tenant.tenant_id%type;
      l_result    clob;
   begin
      l_tenant_id := ctx_session.require_scope(in_user_id => in_user_id, in_agent_id => in_agent_id);
      require_limit(in_limit => in_limit, in_max => co_max_limit);
      -- The threads are counted first; the summary each continues is then read by its primary key (its text is a
      -- CLOB, which a GROUP BY cannot carry).
      select json_arrayagg(
                json_object(
                   'thread_id' value t.thread_id,
                   'user_id' value t.user_id,
                   'agent_id' value t.agent_id,
                   'turns' value t.turns,
                   'new_turns' value t.new_turns,
                   'last_turn_index' value t.last_turn_index,
                   'last_turn_at' value ctx_json.iso_utc(in_timestamp => t.last_turn_at),
                   'summarized_through' value t.through,
                   'summary' value
                      case
                         when m.id is not null
                         then json_object(
                                 'ref' value json_array('summary', m.id, m.version),
                                 'content' value m.content,
                                 'episode' value json_query(m.content_json, '$.episode'),
                                 'valid_from' value ctx_json.iso_utc(in_timestamp => m.valid_from)
                                 null on null returning clob
                              )
                      end format json
                   null on null returning clob
                )
                order by t.new_turns desc, t.thread_id, t.user_id, t.agent_id
                returning clob
             )
        into l_result
        from (
                select c.thread_id, c.user_id, c.agent_id,
                       count(*) as turns,
                       count(case when c.turn_index > nvl(e.through, 0) then 1 end) as new_turns,
                       max(c.turn_index) as last_turn_index,
                       max(c.valid_from) as last_turn_at,
                       e.id as summary_id, e.version as summary_version, e.through
                  from conversation_memory c
                  left join (
                          select s.summary_key, s.id, s.version,
                                 to_number(json_value(s.content_json, '$.episode.last_turn.number()')) as through
                            from summarization_memory s
                           where s.tenant_id = l_tenant_id
                             and s.status = co_active
                             and s.summary_key like 'thread:%'
                       ) e
                    on e.summary_key = 'thread:' || c.thread_id
                 where c.tenant_id = l_tenant_id
                   and c.event_type = 'message'
                   and c.status = co_active
                   and c.thread_id is not null
                   and (in_user_id is null or c.user_id = in_user_id)
                   and (in_agent_id is null or c.agent_id = in_agent_id)
                 group by c.thread_id, c.user_id, c.agent_id, e.id, e.version, e.through
                having count(case when c.turn_index > nvl(e.through, 0) then 1 end) > 0
                 order by new_turns desc, c.thread_id, c.user_id, c.agent_id
                 fetch first in_limit rows only
             ) t
        left join summarization_memory m
          on m.tenant_id = l_tenant_id
         and m.id = t.summary_id
         and m.version = t.summary_version;
      return nvl(l_result, to_clob(ctx_json.co_empty_array));
   end thread_activity;

   function thread_turns(
      in_thread_id  in conversation_memory.thread_id%type,
      in_after_turn in number,
      in_limit      in number
   ) return clob is
      co_max_limit   constant pls_integer := 10000;
      co_claim_user  constant varchar2(30) := 'USER_ID';
      co_claim_agent constant varchar2(30) := 'AGENT_ID';
      l_tenant_id ctx_tenant.tenant_id%type;
      l_user      conversation_memory.user_id%type;
      l_agent     conversation_memory.agent_id%type;
      l_result    clob;
   begin
      l_tenant_id := ctx_session.require_tenant();
      require_limit(in_limit => in_limit, in_max => co_max_limit);
      l_user := ctx_session.claim_scope(in_attribute => co_claim_user);
      l_agent := ctx_session.claim_scope(in_attribute => co_claim_agent);
      select json_arrayagg(
                json_object(
                   'ref' value json_array('conversation', t.id, t.version),
                   'turn_index' value t.turn_index,
                   'role' value t.role,
                   'speaker' value t.speaker,
                   'content' value t.content,
                   'valid_from' value ctx_json.iso_utc(in_timestamp => t.valid_from),
                   'user_id' value t.user_id,
                   'agent_id' value t.agent_id
                   null on null returning clob
                )
                order by t.turn_index, t.id
                returning clob
             )
        into l_result
        from (
                select c.id, c.version, c.turn_index, c.role, c.speaker, c.content, c.valid_from, c.user_id,
                       c.agent_id
                  from conversation_memory c
                 where c.tenant_id = l_tenant_id
                   and c.thread_id = in_thread_id
                   and c.event_type = 'message'
                   and c.status = co_active
                   and c.turn_index > nvl(in_after_turn, 0)
                   and (l_user is null or c.user_id = l_user)
                   and (l_agent is null or c.agent_id = l_agent)
                 order by c.turn_index, c.id
                 fetch first in_limit rows only
             ) t;
      return nvl(l_result, to_clob(ctx_json.co_empty_array));
   end thread_turns;

   function read_facts(
      in_subject_prefix in entity_memory.subject%type,
      in_predicate      in entity_memory.predicate%type,
      in_id             in entity_memory.id%type,
      in_limit          in number
   ) return clob is
      co_max_facts   constant pls_integer := 1000;
      co_claim_user  constant varchar2(30) := 'USER_ID';
      co_claim_agent constant varchar2(30) := 'AGENT_ID';
      l_tenant_id ctx_tenant.tenant_id%type;
      l_user      entity_memory.user_id%type;
      l_agent     entity_memory.agent_id%type;
      l_result    clob;
   begin
      l_tenant_id := ctx_session.require_tenant();
      require_limit(in_limit => in_limit, in_max => co_max_facts);
      if in_subject_prefix is null then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_subject_prefix is required'
         );
      end if;
      l_user := ctx_session.claim_scope(in_attribute => co_claim_user);
      l_agent := ctx_session.claim_scope(in_attribute => co_claim_agent);
      select json_arrayagg(
                json_object(
                   'ref' value json_array('entity', f.id, f.version),
                   'subject' value f.subject,
                   'predicate' value f.predicate,
                   'content' value f.content,
                   'content_json' value f.content_json,
                   'status' value f.status,
                   'valid_from' value ctx_json.iso_utc(in_timestamp => f.valid_from),
                   'first_valid_from' value ctx_json.iso_utc(in_timestamp => o.valid_from),
                   'deleted_at' value ctx_json.iso_utc(in_timestamp => f.deleted_at),
                   'user_id' value f.user_id,
                   'agent_id' value f.agent_id
                   null on null returning clob
                )
                order by f.newest desc, f.version, f.id
                returning clob
             )
        into l_result
        from (
                select e.id, e.version, e.subject, e.predicate, e.content, e.content_json, e.status, e.valid_from,
                       e.deleted_at, e.user_id, e.agent_id,
                       case when in_id is null then e.valid_from end as newest
                  from entity_memory e
                 where e.tenant_id = l_tenant_id
                   and substr(e.subject, 1, length(in_subject_prefix)) = in_subject_prefix
                   and (in_predicate is null or e.predicate = in_predicate)
                   and ((in_id is null and e.status = co_active)
                        or (e.id = in_id and e.status <> co_erased))
                   and (l_user is null or e.user_id = l_user)
                   and (l_agent is null or e.agent_id = l_agent)
                 order by newest desc, e.version, e.id
                 fetch first in_limit rows only
             ) f
        -- when the fact was first written: its first version, by the primary key
        left join entity_memory o
          on o.tenant_id = l_tenant_id
         and o.id = f.id
         and o.version = 1;
      return nvl(l_result, to_clob(ctx_json.co_empty_array));
   end read_facts;

   function inventory return clob is
      type t_type_tab is table of varchar2(32);
      l_tenant_id ctx_tenant.tenant_id%type;
      -- generated: inventory types from contract/memory_types.toml; edit the catalogue, then regenerate
      l_types     t_type_tab := t_type_tab('guideline', 'persona', 'toolbox', 'entity', 'workflow', 'kb_document',
                                           'kb_chunk', 'conversation', 'summary', 'compression', 'source_ref');
      -- end generated: inventory types
      l_counts    sys_refcursor;
      l_event     conversation_memory.event_type%type;
      l_status    varchar2(16);
      l_rows      number;
      l_entry     json_object_t;
      l_result    json_array_t := json_array_t();
      l_sql       varchar2(400);
   begin
      l_tenant_id := ctx_session.require_tenant();
      for i in 1 .. l_types.count loop
         -- A conversation row is a turn (event_type 'message') or an event (a recorded window, provider
         -- request, model response, tool result): counted apart, so events never pass for turns.
         if l_types(i) = 'conversation' then
            l_sql := 'select t.event_type, t.status, count(*) from ' || table_for_type(in_memory_type => l_types(i))
                     || ' t where t.tenant_id = :b_tenant_id group by t.event_type, t.status'
                     || ' order by t.event_type, t.status';
         else
            l_sql := 'select null, t.status, count(*) from ' || table_for_type(in_memory_type => l_types(i))
                     || ' t where t.tenant_id = :b_tenant_id group by t.status order by t.status';
         end if;
         open l_counts for l_sql using l_tenant_id;
         loop
            fetch l_counts into l_event, l_status, l_rows;
            exit when l_counts%notfound;
            l_entry := json_object_t();
            l_entry.put('memory_type', l_types(i));
            if l_event is null then
               l_entry.put_null('event_type');
            else
               l_entry.put('event_type', l_event);
            end if;
            l_entry.put('status', l_status);
            l_entry.put('rows', l_rows);
            l_result.append(l_entry);
         end loop;
         close l_counts;
      end loop;
      return l_result.to_clob();
   end inventory;
end ctx_memory;
/
