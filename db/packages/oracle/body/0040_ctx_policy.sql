--liquibase formatted sql

--changeset ctxasm:ora-pkg-0040-ctx-policy-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_policy is
   function tenant_predicate(in_schema in varchar2, in_object in varchar2) return varchar2 is
      l_session varchar2(300);
   begin
      l_session := sys.dbms_assert.enquote_name(str => in_schema, capitalize => false) || '.ctx_session';
      return 'tenant_id = (select ' || l_session || '.current_tenant() from dual)'
             || ' and (user_id is null or (select ' || l_session || '.claim_scope(''USER_ID'') from dual) is null'
             || ' or user_id = (select ' || l_session || '.claim_scope(''USER_ID'') from dual))'
             || ' and (agent_id is null or (select ' || l_session || '.claim_scope(''AGENT_ID'') from dual) is null'
             || ' or agent_id = (select ' || l_session || '.claim_scope(''AGENT_ID'') from dual))';
   end tenant_predicate;
end ctx_policy;
/
