--liquibase formatted sql logicalFilePath:db/packages/oracle/body/0010_ctx_errors.sql
-- generated from contract/errors.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)

--changeset ctxasm:ora-pkg-0010-ctx-errors-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_errors is
   co_max_message_length constant pls_integer := 2000;
   -- an error never echoes a long argument back whole
   co_max_quoted_length  constant pls_integer := 200;

   function error_name(in_code in pls_integer) return varchar2 deterministic is
   begin
      return case in_code
                when co_tenant_not_set then 'tenant_not_set'
                when co_invalid_memory_type then 'invalid_memory_type'
                when co_invalid_field then 'invalid_field'
                when co_duplicate_memory then 'duplicate_memory'
                when co_memory_not_found then 'memory_not_found'
                when co_invalid_snapshot then 'invalid_snapshot'
                when co_invalid_argument then 'invalid_argument'
                when co_unknown_intent then 'unknown_intent'
                when co_budget_missing then 'budget_missing'
                when co_invalid_budget then 'invalid_budget'
                when co_invalid_question then 'invalid_question'
                when co_invalid_manifest then 'invalid_manifest'
                when co_not_in_window then 'not_in_window'
                when co_source_unavailable then 'source_unavailable'
                when co_invalid_claim then 'invalid_claim'
                when co_scope_not_allowed then 'scope_not_allowed'
                when co_session_limits_lifted then 'session_limits_lifted'
             end;
   end error_name;

   function error_message(in_code in pls_integer) return varchar2 deterministic is
   begin
      return case in_code
                when co_tenant_not_set then 'no tenant is set in this transaction'
                when co_invalid_memory_type then 'not a memory type'
                when co_invalid_field then 'a field is missing, of the wrong type, out of range or unknown'
                when co_duplicate_memory then 'the id already exists for the tenant'
                when co_memory_not_found then 'no active version of the id'
                when co_invalid_snapshot then 'the snapshot does not parse'
                when co_invalid_argument then 'a NULL or malformed argument'
                when co_unknown_intent then 'the intent is not one of the budget''s shares'
                when co_budget_missing then 'no context_budget guideline is in effect'
                when co_invalid_budget then 'the budget is malformed'
                when co_invalid_question then 'the question is empty or too long'
                when co_invalid_manifest then 'the manifest is malformed'
                when co_not_in_window then 'the memory id was not issued in the manifest'
                when co_source_unavailable then 'the source row version is no longer available'
                when co_invalid_claim then 'the tenant claim was refused'
                when co_scope_not_allowed then 'the scope is not the one the session''s claim names'
                when co_session_limits_lifted then 'the session lifted a limit the deployment set'
             end;
   end error_message;

   procedure raise_error(in_code in pls_integer, in_detail in varchar2) is
      l_name varchar2(64);
   begin
      l_name := error_name(in_code => in_code);
      if l_name is null then
         raise_application_error(
            co_invalid_argument,
            'invalid_argument: ctx_errors.raise_error has no error number ' || to_char(in_code)
         );
      end if;
      raise_application_error(in_code, substr(l_name || ': ' || in_detail, 1, co_max_message_length));
   end raise_error;

   function quoted(in_text in varchar2) return varchar2 deterministic is
   begin
      if in_text is null then
         return 'NULL';
      end if;
      if length(in_text) > co_max_quoted_length then
         return sys.dbms_assert.enquote_literal(str => replace(substr(in_text, 1, co_max_quoted_length), '''', ''''''))
                || '... (' || to_char(length(in_text)) || ' characters)';
      end if;
      return sys.dbms_assert.enquote_literal(str => replace(in_text, '''', ''''''));
   end quoted;
end ctx_errors;
/
