--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-row-binder-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_row_binder authid definer is
   /**
    * The JSON-to-column binder of CTX_MEMORY: a record (a JSON object whose keys are column names) checked
    * against the columns USER_TAB_COLUMNS reports for its table, each value converted for its column's type,
    * then written into a DBMS_SQL statement as binds. Every error names the field (-20104 invalid_field).
    * The PostgreSQL twin checks a record in ctxasm.check_record (db/postgresql/internal/row_checks.sql).
    * Engine-internal: called by CTX_MEMORY only, never granted to CTXASM_APP. Definer's rights: it reads the
    * owner's USER_TAB_COLUMNS. Reads no memory table and writes nothing.
    */

   -- column data types as USER_TAB_COLUMNS reports them
   co_type_varchar2     constant varchar2(30) := 'VARCHAR2';
   co_type_clob         constant varchar2(30) := 'CLOB';
   co_type_number       constant varchar2(30) := 'NUMBER';
   co_type_json         constant varchar2(30) := 'JSON';
   co_type_vector       constant varchar2(30) := 'VECTOR';
   co_type_timestamp_tz constant varchar2(30) := 'TIMESTAMP(_) WITH TIME ZONE';

   -- columns with rules of their own
   co_col_tenant_id   constant varchar2(30) := 'TENANT_ID';
   co_col_user_id     constant varchar2(30) := 'USER_ID';
   co_col_agent_id    constant varchar2(30) := 'AGENT_ID';
   co_col_id          constant varchar2(30) := 'ID';
   co_col_version     constant varchar2(30) := 'VERSION';
   co_col_status      constant varchar2(30) := 'STATUS';
   co_col_valid_from  constant varchar2(30) := 'VALID_FROM';
   co_col_valid_until constant varchar2(30) := 'VALID_UNTIL';
   co_col_deleted_at  constant varchar2(30) := 'DELETED_AT';
   co_col_created_at  constant varchar2(30) := 'CREATED_AT';
   co_col_tool_schema constant varchar2(30) := 'TOOL_SCHEMA';
   co_col_source_refs constant varchar2(30) := 'SOURCE_REFS';
   co_col_content        constant varchar2(30) := 'CONTENT';
   co_col_content_tokens constant varchar2(30) := 'CONTENT_TOKENS';
   co_col_text_key       constant varchar2(30) := 'TEXT_KEY';
   co_col_pointer_text   constant varchar2(30) := 'POINTER_TEXT';

   type t_column_rec is record (
      column_name    user_tab_columns.column_name%type,
      data_type      user_tab_columns.data_type%type,
      char_length    user_tab_columns.char_length%type,
      data_precision user_tab_columns.data_precision%type,
      data_scale     user_tab_columns.data_scale%type,
      nullable       user_tab_columns.nullable%type
   );
   type t_column_tab is table of t_column_rec;

   -- one key of in_record, checked and converted for its column
   type t_field_rec is record (
      column_name  user_tab_columns.column_name%type,
      data_type    user_tab_columns.data_type%type,
      is_null      boolean,
      text_value   clob,
      number_value number,
      ts_value     timestamp with time zone,
      bind_name    varchar2(30)
   );
   type t_field_tab is table of t_field_rec;

   /** Raises -20104 invalid_field as '<memory type>.<field>: <problem>'. */
   procedure field_error(in_memory_type in varchar2, in_field in varchar2, in_problem in varchar2);

   /** The columns of one owner's table (a name table_for_type returned), in column order. */
   function table_columns(in_table in varchar2) return t_column_tab;

   /** The position of the column a record key names (keys are lower-case column names), 0 for none. */
   function column_index(in_columns in t_column_tab, in_key in varchar2) return pls_integer;

   /** The position of the field of in_column_name (upper case, as USER_TAB_COLUMNS), 0 for none. */
   function field_index(in_fields in t_field_tab, in_column_name in varchar2) return pls_integer;

   /** The text of one field of a checked record (its first 4,000 characters), or NULL when not given. */
   function field_text(in_fields in t_field_tab, in_column_name in varchar2) return varchar2;

   /**
    * in_record checked against the table: a JSON object whose keys are all columns the caller may set
    * (tenant_id only as the session's tenant; version, status, created_at, text_key and pointer_text never),
    * each value of its column's type and size; a context budget's token counts (a guideline keyed
    * context_budget, or naming no key: a new version) at most max_budget_tokens.
    * @throws -20104 invalid_field naming the field (or the record, when it is no JSON object)
    * @throws -20112 invalid_budget naming the budget's field and the range allowed
    */
   function record_fields(
      in_memory_type in varchar2,
      in_columns     in t_column_tab,
      in_record      in clob,
      in_tenant_id   in varchar2
   ) return t_field_tab;

   /** The SQL expression for a field: 'null', or a bind named v<in_position>, converted for JSON and VECTOR. */
   function field_expression(io_field in out nocopy t_field_rec, in_position in pls_integer) return varchar2;

   /** Binds every field that field_expression gave a bind name, by its column's type. */
   procedure bind_fields(in_cursor in integer, in_fields in t_field_tab);

   /** Closes a DBMS_SQL cursor if it is open (exception handlers call it too). */
   procedure close_cursor(io_cursor in out integer);

   /**
    * ORA-01400 / ORA-02290 from an INSERT, raised again as -20104 invalid_field naming the column; call it from
    * the handler with SQLCODE and SQLERRM.
    */
   procedure raise_constraint_error(
      in_memory_type in varchar2,
      in_table       in varchar2,
      in_code        in pls_integer,
      in_message     in varchar2
   );
end ctx_row_binder;
/
