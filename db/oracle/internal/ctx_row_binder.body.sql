--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-row-binder-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_row_binder is
   co_embedding_dimensions constant pls_integer := 384;
   -- what one row may store (contract/constants.toml): free text, a kb_document's content, JSON, source references
   co_max_text_chars     constant pls_integer := 100000;
   co_max_document_chars constant pls_integer := 2000000;
   co_max_json_chars     constant pls_integer := 2000000;
   co_max_source_refs    constant pls_integer := 1000;
   -- the largest token count of a context budget (contract/constants.toml: max_budget_tokens)
   co_max_budget_tokens  constant pls_integer := 10000000;
   co_kb_document        constant varchar2(32) := 'kb_document';
   co_guideline          constant varchar2(32) := 'guideline';
   co_budget_key         constant varchar2(32) := 'context_budget';
   co_key_guideline_key  constant varchar2(32) := 'guideline_key';
   co_key_content_json   constant varchar2(32) := 'content_json';

   e_json_syntax exception;
   pragma exception_init(e_json_syntax, -40441);

   -- ISO 8601 timestamps, after normalised_timestamp; without an offset the session time zone applies
   co_timestamp_pattern   constant varchar2(100) :=
      '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{1,9}([+-][0-9]{2}:[0-9]{2})?$';
   co_offset_pattern      constant varchar2(30)  := '[+-][0-9]{2}:[0-9]{2}$';
   co_timestamp_tz_format constant varchar2(40)  := 'YYYY-MM-DD"T"HH24:MI:SS.FFTZH:TZM';
   co_timestamp_format    constant varchar2(40)  := 'YYYY-MM-DD"T"HH24:MI:SS.FF';

   -- TO_TIMESTAMP_TZ rejecting a well-formed but impossible timestamp
   e_bad_year exception;
   pragma exception_init(e_bad_year, -1841);
   e_bad_month exception;
   pragma exception_init(e_bad_month, -1843);
   e_bad_day exception;
   pragma exception_init(e_bad_day, -1847);
   e_bad_day_of_month exception;
   pragma exception_init(e_bad_day_of_month, -1839);
   e_bad_hour exception;
   pragma exception_init(e_bad_hour, -1850);
   e_bad_minute exception;
   pragma exception_init(e_bad_minute, -1851);
   e_bad_second exception;
   pragma exception_init(e_bad_second, -1852);
   e_bad_tz_hour exception;
   pragma exception_init(e_bad_tz_hour, -1874);
   e_bad_tz_minute exception;
   pragma exception_init(e_bad_tz_minute, -1875);

   procedure field_error(in_memory_type in varchar2, in_field in varchar2, in_problem in varchar2) is
   begin
      ctx_errors.raise_error(
         in_code   => ctx_errors.co_invalid_field,
         in_detail => in_memory_type || '.' || in_field || ': ' || in_problem
      );
   end field_error;

   function table_columns(in_table in varchar2) return t_column_tab is
      l_columns t_column_tab;
   begin
      select c.column_name, c.data_type, c.char_length, c.data_precision, c.data_scale, c.nullable
        bulk collect into l_columns
        from user_tab_columns c
       where c.table_name = in_table
       order by c.column_id;
      return l_columns;
   end table_columns;

   -- the position of the column a record key names (keys are lowercase column names), 0 for none
   function column_index(in_columns in t_column_tab, in_key in varchar2) return pls_integer is
   begin
      for i in 1 .. in_columns.count loop
         if lower(in_columns(i).column_name) = in_key then
            return i;
         end if;
      end loop;
      return 0;
   end column_index;

   function field_index(in_fields in t_field_tab, in_column_name in varchar2) return pls_integer is
      l_field t_field_rec;
   begin
      for i in 1 .. in_fields.count loop
         l_field := in_fields(i);
         if l_field.column_name = in_column_name then
            return i;
         end if;
      end loop;
      return 0;
   end field_index;

   -- The text of one field of a checked record, or NULL when the record does not give it.
   function field_text(in_fields in t_field_tab, in_column_name in varchar2) return varchar2 is
      l_field pls_integer;
      r_field t_field_rec;
   begin
      l_field := field_index(in_fields => in_fields, in_column_name => in_column_name);
      if l_field = 0 then
         return null;
      end if;
      r_field := in_fields(l_field);
      if r_field.is_null then
         return null;
      end if;
      return substr(r_field.text_value, 1, 4000);
   end field_text;

   function json_kind(in_value in json_element_t) return varchar2 is
   begin
      return case
                when in_value.is_object() then 'object'
                when in_value.is_array() then 'array'
                when in_value.is_string() then 'string'
                when in_value.is_number() then 'number'
                when in_value.is_boolean() then 'boolean'
                else 'null'
             end;
   end json_kind;

   -- ISO 8601 variants (date only, space for T, Z, +hhmm, +hh, no fraction) brought to one form
   function normalised_timestamp(in_text in varchar2) return varchar2 is
      l_text varchar2(100);
   begin
      l_text := trim(substr(in_text, 1, 100));
      if regexp_like(l_text, '^[0-9]{4}-[0-9]{2}-[0-9]{2}$') then
         l_text := l_text || 'T00:00:00';
      end if;
      l_text := regexp_replace(l_text, '^([0-9]{4}-[0-9]{2}-[0-9]{2}) ', '\1T');
      l_text := regexp_replace(l_text, '[Zz]$', '+00:00');
      l_text := regexp_replace(l_text, '([+-][0-9]{2})([0-9]{2})$', '\1:\2');
      l_text := regexp_replace(l_text, '(:[0-9]{2}[+-][0-9]{2})$', '\1:00');
      l_text := regexp_replace(l_text, '(T[0-9]{2}:[0-9]{2}:[0-9]{2})([^.0-9]|$)', '\1.0\2');
      return l_text;
   end normalised_timestamp;

   function timestamp_value(
      in_memory_type in varchar2,
      in_key         in varchar2,
      in_text        in varchar2
   ) return timestamp with time zone is
      l_text  varchar2(100);
      l_value timestamp with time zone;
   begin
      l_text := normalised_timestamp(in_text => in_text);
      if not regexp_like(l_text, co_timestamp_pattern) then
         field_error(
            in_memory_type => in_memory_type,
            in_field       => in_key,
            in_problem     => 'must be an ISO 8601 timestamp, not ' || ctx_errors.quoted(in_text => in_text)
         );
      end if;
      if regexp_like(l_text, co_offset_pattern) then
         l_value := to_timestamp_tz(l_text, co_timestamp_tz_format);
      else
         l_value := to_timestamp_tz(l_text, co_timestamp_format);
      end if;
      return l_value;
   exception
      when e_bad_year or e_bad_month or e_bad_day or e_bad_day_of_month or e_bad_hour or e_bad_minute
           or e_bad_second or e_bad_tz_hour or e_bad_tz_minute then
         field_error(
            in_memory_type => in_memory_type,
            in_field       => in_key,
            in_problem     => 'is not a valid timestamp: ' || ctx_errors.quoted(in_text => in_text)
         );
   end timestamp_value;

   -- one value of in_record, checked against its column's type
   function field_value(
      in_memory_type in varchar2,
      in_column      in t_column_rec,
      in_key         in varchar2,
      in_record      in json_object_t
   ) return t_field_rec is
      l_value json_element_t;
      l_array json_array_t;
      l_item  json_element_t;
      l_last  pls_integer;
      l_field t_field_rec;
   begin
      l_value := in_record.get(in_key);
      l_field.column_name := in_column.column_name;
      l_field.data_type := in_column.data_type;
      l_field.is_null := l_value.is_null();
      if l_field.is_null then
         return l_field;
      end if;
      if in_column.data_type in (co_type_varchar2, co_type_clob) then
         if not l_value.is_scalar() then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'must be a string, not a JSON ' || json_kind(in_value => l_value)
            );
         end if;
         if l_value.is_string() then
            l_field.text_value := in_record.get_clob(in_key);
         else
            l_field.text_value := l_value.to_clob();
         end if;
         -- Oracle stores '' as NULL: an empty string is a missing value (NOT NULL then names the field), except
         -- a user or agent id, where NULL means the whole tenant (or agent): an empty one is refused, as on
         -- PostgreSQL
         l_field.is_null := l_field.text_value is null or sys.dbms_lob.getlength(lob_loc => l_field.text_value) = 0;
         if l_field.is_null and in_column.column_name in (co_col_user_id, co_col_agent_id) then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'must not be empty (leave it out, or null, for a row of the whole tenant)'
            );
         end if;
         if in_column.data_type = co_type_clob
            and sys.dbms_lob.getlength(lob_loc => l_field.text_value)
                > case
                     when in_column.column_name = co_col_content and in_memory_type = co_kb_document
                     then co_max_document_chars
                     else co_max_text_chars
                  end
         then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => to_char(sys.dbms_lob.getlength(lob_loc => l_field.text_value))
                                 || ' characters, more than a ' || in_memory_type || ' may store'
            );
         end if;
         if in_column.data_type = co_type_varchar2
            and sys.dbms_lob.getlength(lob_loc => l_field.text_value) > in_column.char_length
         then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'longer than ' || to_char(in_column.char_length) || ' characters'
            );
         end if;
      elsif in_column.data_type = co_type_number then
         if not l_value.is_number() then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'must be a number, not a JSON ' || json_kind(in_value => l_value)
            );
         end if;
         l_field.number_value := in_record.get_number(in_key);
         if in_column.data_scale = 0 and l_field.number_value <> trunc(l_field.number_value) then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'must be an integer'
            );
         end if;
         if in_column.data_precision is not null
            and abs(l_field.number_value)
                >= power(10, in_column.data_precision - nvl(in_column.data_scale, 0))
         then
            field_error(in_memory_type => in_memory_type, in_field => in_key, in_problem => 'out of range');
         end if;
      elsif in_column.data_type like co_type_timestamp_tz then
         if not l_value.is_string() then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'must be an ISO 8601 timestamp string, not a JSON ' || json_kind(in_value => l_value)
            );
         end if;
         l_field.ts_value := timestamp_value(
            in_memory_type => in_memory_type,
            in_key         => in_key,
            in_text        => in_record.get_string(in_key)
         );
      elsif in_column.data_type = co_type_json then
         if in_column.column_name = co_col_tool_schema and not l_value.is_object() then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'must be a JSON object'
            );
         end if;
         if in_column.column_name = co_col_source_refs and not l_value.is_array() then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'must be a JSON array'
            );
         end if;
         if in_column.column_name = co_col_source_refs
            and l_value.get_size() > co_max_source_refs
         then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'more than ' || to_char(co_max_source_refs) || ' references'
            );
         end if;
         l_field.text_value := l_value.to_clob();
         if sys.dbms_lob.getlength(lob_loc => l_field.text_value) > co_max_json_chars then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'more than ' || to_char(co_max_json_chars) || ' characters of JSON'
            );
         end if;
      elsif in_column.data_type = co_type_vector then
         if not l_value.is_array() then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'must be an array of ' || to_char(co_embedding_dimensions) || ' numbers'
            );
         end if;
         l_array := treat(l_value as json_array_t);
         if l_array.get_size() <> co_embedding_dimensions then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => in_key,
               in_problem     => 'has ' || to_char(l_array.get_size()) || ' dimensions, not ' || to_char(co_embedding_dimensions)
            );
         end if;
         l_last := l_array.get_size() - 1;
         for i in 0 .. l_last loop
            l_item := l_array.get(i);
            if not l_item.is_number() then
               field_error(
                  in_memory_type => in_memory_type,
                  in_field       => in_key,
                  in_problem     => 'element ' || to_char(i) || ' is not a number'
               );
            end if;
         end loop;
         l_field.text_value := l_value.to_clob();
      else
         field_error(
            in_memory_type => in_memory_type,
            in_field       => in_key,
            in_problem     => 'has a column type ctx_memory cannot write: ' || in_column.data_type
         );
      end if;
      return l_field;
   end field_value;

   -- A budget: a guideline naming the key context_budget, or a guideline's new version that names no key (the key
   -- is the stored version's; a budget's new version sends only what changes). The Python layer checks every
   -- field of a budget; the database bounds the counts its own arithmetic reads (CTX_BUDGET.candidate_limits),
   -- so a writer that skips the Python checks cannot store a budget that breaks every window of its scope.
   -- The PostgreSQL twin: the end of ctxasm.check_record.
   procedure check_budget_counts(in_memory_type in varchar2, in_record in json_object_t) is
      l_counts sys.odcivarchar2list := sys.odcivarchar2list(
         'usable_context', 'output_reserve', 'tool_reserve', 'request_overhead_reserve', 'max_rounds',
         'max_tool_result_tokens'
      );
      l_key    json_element_t;
      l_budget json_object_t;
      l_value  json_element_t;
      l_count  number;
   begin
      if in_memory_type <> co_guideline then
         return;
      end if;
      l_key := in_record.get(co_key_guideline_key);
      if l_key is not null and not l_key.is_null()
         and (not l_key.is_string() or in_record.get_string(co_key_guideline_key) <> co_budget_key)
      then
         return;
      end if;
      l_value := in_record.get(co_key_content_json);
      if l_value is null or not l_value.is_object() then
         return;
      end if;
      l_budget := treat(l_value as json_object_t);
      for i in 1 .. l_counts.count loop
         l_value := l_budget.get(l_counts(i));
         if l_value is not null and l_value.is_number() then
            l_count := l_budget.get_number(l_counts(i));
            if l_count < 0 or l_count > co_max_budget_tokens then
               ctx_errors.raise_error(
                  in_code   => ctx_errors.co_invalid_budget,
                  in_detail => in_memory_type || '.content_json.' || l_counts(i) || ': must be 0..'
                               || to_char(co_max_budget_tokens) || ', got ' || substr(l_value.to_string(), 1, 40)
               );
            end if;
         end if;
      end loop;
   end check_budget_counts;

   -- in_record checked against the table: a JSON object whose keys are all columns the caller may set
   function record_fields(
      in_memory_type in varchar2,
      in_columns     in t_column_tab,
      in_record      in clob,
      in_tenant_id   in varchar2
   ) return t_field_tab is
      l_element json_element_t;
      l_record  json_object_t;
      l_keys    json_key_list;
      l_key     varchar2(4000);
      l_value   json_element_t;
      l_column  pls_integer;
      r_column  t_column_rec;
      l_fields  t_field_tab := t_field_tab();
   begin
      if in_record is null then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_field,
            in_detail => in_memory_type || ': in_record must be a JSON object'
         );
      end if;
      begin
         l_element := json_element_t.parse(in_record);
      exception
         when e_json_syntax then
            ctx_errors.raise_error(
               in_code   => ctx_errors.co_invalid_field,
               in_detail => in_memory_type || ': in_record is not valid JSON'
            );
      end;
      if not l_element.is_object() then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_field,
            in_detail => in_memory_type || ': in_record must be a JSON object, not a JSON '
                         || json_kind(in_value => l_element)
         );
      end if;
      l_record := treat(l_element as json_object_t);
      l_keys := l_record.get_keys();
      if l_keys is null then
         return l_fields;
      end if;
      for i in 1 .. l_keys.count loop
         l_key := l_keys(i);
         l_column := column_index(in_columns => in_columns, in_key => l_key);
         if l_column = 0 then
            field_error(in_memory_type => in_memory_type, in_field => l_key, in_problem => 'unknown field');
         end if;
         l_value := l_record.get(l_key);
         r_column := in_columns(l_column);
         if r_column.column_name = co_col_tenant_id then
            if not l_value.is_string() or l_record.get_string(l_key) <> in_tenant_id then
               field_error(
                  in_memory_type => in_memory_type,
                  in_field       => l_key,
                  in_problem     => ctx_errors.quoted(in_text => substr(l_value.to_string(), 1, 200)) || ' is not the session tenant'
               );
            end if;
         elsif r_column.column_name in (co_col_version, co_col_status, co_col_created_at, co_col_text_key,
                                        co_col_pointer_text)
         then
            field_error(
               in_memory_type => in_memory_type,
               in_field       => l_key,
               in_problem     => 'set by ctx_memory, not by the caller'
            );
         else
            l_fields.extend();
            l_fields(l_fields.last) := field_value(
               in_memory_type => in_memory_type,
               in_column      => r_column,
               in_key         => l_key,
               in_record      => l_record
            );
         end if;
      end loop;
      check_budget_counts(in_memory_type => in_memory_type, in_record => l_record);
      return l_fields;
   end record_fields;

   -- the SQL expression for a field: a bind named v<position>, converted for JSON and VECTOR columns
   function field_expression(io_field in out nocopy t_field_rec, in_position in pls_integer) return varchar2 is
   begin
      if io_field.is_null then
         return 'null';
      end if;
      io_field.bind_name := 'v' || to_char(in_position);
      return case io_field.data_type
                when co_type_json then 'json(:' || io_field.bind_name || ')'
                when co_type_vector then
                   'to_vector(:' || io_field.bind_name || ', ' || to_char(co_embedding_dimensions) || ', float32)'
                else ':' || io_field.bind_name
             end;
   end field_expression;

   procedure bind_fields(in_cursor in integer, in_fields in t_field_tab) is
      l_field t_field_rec;
   begin
      for i in 1 .. in_fields.count loop
         l_field := in_fields(i);
         if l_field.bind_name is not null then
            if l_field.data_type = co_type_number then
               sys.dbms_sql.bind_variable(c => in_cursor, name => l_field.bind_name, value => l_field.number_value);
            elsif l_field.data_type like co_type_timestamp_tz then
               sys.dbms_sql.bind_variable(c => in_cursor, name => l_field.bind_name, value => l_field.ts_value);
            else
               sys.dbms_sql.bind_variable(c => in_cursor, name => l_field.bind_name, value => l_field.text_value);
            end if;
         end if;
      end loop;
   end bind_fields;

   procedure close_cursor(io_cursor in out integer) is
   begin
      if io_cursor is not null and sys.dbms_sql.is_open(c => io_cursor) then
         sys.dbms_sql.close_cursor(c => io_cursor);
      end if;
   end close_cursor;

   -- ORA-01400 / ORA-02290 from an INSERT, as invalid_field naming the column (call from the handler)
   procedure raise_constraint_error(
      in_memory_type in varchar2,
      in_table       in varchar2,
      in_code        in pls_integer,
      in_message     in varchar2
   ) is
      co_not_null_code constant pls_integer := -1400;
      l_name varchar2(400);
   begin
      if in_code = co_not_null_code then
         -- ORA-01400: cannot insert NULL into ("OWNER"."TABLE"."COLUMN")
         l_name := lower(regexp_substr(in_message, '"([^"]+)"\)', 1, 1, null, 1));
         field_error(in_memory_type => in_memory_type, in_field => l_name, in_problem => 'required');
      else
         -- ORA-02290: check constraint (OWNER.<TABLE>_<COLUMN>_CK) violated
         l_name := lower(regexp_substr(regexp_substr(in_message, '\(([^)]+)\)', 1, 1, null, 1), '[^.]+$'));
         field_error(
            in_memory_type => in_memory_type,
            in_field       => regexp_replace(l_name, '^' || lower(in_table) || '_(.+)_ck$', '\1'),
            in_problem     => 'out of range (check ' || l_name || ')'
         );
      end if;
   end raise_constraint_error;
end ctx_row_binder;
/
