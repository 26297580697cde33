--liquibase formatted sql logicalFilePath:db/packages/oracle/body/0040_ctx_policy.sql

--changeset ctxasm:ora-pkg-0040-ctx-policy-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_policy is
   -- The context's attributes, not CTX_SESSION.current_tenant: Oracle Text's SYNC (ON COMMIT) reads the new rows
   -- after the transaction ended, under this predicate; bound to the transaction it would index nothing.
   co_tenant_predicate constant varchar2(400) :=
      'tenant_id = sys_context(''CTXASM_CTX'', ''TENANT_ID'')'
      || ' and (user_id is null or sys_context(''CTXASM_CTX'', ''USER_ID'') is null'
      || ' or user_id = sys_context(''CTXASM_CTX'', ''USER_ID''))'
      || ' and (agent_id is null or sys_context(''CTXASM_CTX'', ''AGENT_ID'') is null'
      || ' or agent_id = sys_context(''CTXASM_CTX'', ''AGENT_ID''))';

   function tenant_predicate(in_schema in varchar2, in_object in varchar2) return varchar2 is
   begin
      return co_tenant_predicate;
   end tenant_predicate;
end ctx_policy;
/
