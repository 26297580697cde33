--liquibase formatted sql

--changeset ctxasm:ora-pkg-0040-ctx-policy-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_policy is
   co_tenant_predicate constant varchar2(100) := 'tenant_id = sys_context(''CTXASM_CTX'', ''TENANT_ID'')';

   function tenant_predicate(in_schema in varchar2, in_object in varchar2) return varchar2 is
   begin
      return co_tenant_predicate;
   end tenant_predicate;
end ctx_policy;
/
