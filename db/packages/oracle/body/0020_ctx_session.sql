--liquibase formatted sql

--changeset ctxasm:ora-pkg-0020-ctx-session-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_session is
   co_namespace constant varchar2(30) := 'CTXASM_CTX';
   co_attribute constant varchar2(30) := 'TENANT_ID';

   procedure set_tenant(in_tenant_id in ctx_tenant.tenant_id%type) is
      l_tenant_id ctx_tenant.tenant_id%type;
   begin
      clear_tenant();
      if in_tenant_id is null then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_tenant_id must not be empty'
         );
      end if;
      begin
         select t.tenant_id
           into l_tenant_id
           from ctx_tenant t
          where t.tenant_id = in_tenant_id;
      exception
         when no_data_found then
            ctx_errors.raise_error(
               in_code   => ctx_errors.co_unknown_tenant,
               in_detail => 'no tenant ' || ctx_errors.quoted(in_text => in_tenant_id)
                            || ' is registered'
            );
      end;
      sys.dbms_session.set_context(namespace => co_namespace, attribute => co_attribute, value => l_tenant_id);
   end set_tenant;

   procedure clear_tenant is
   begin
      sys.dbms_session.clear_context(namespace => co_namespace, attribute => co_attribute);
   end clear_tenant;

   function current_tenant return ctx_tenant.tenant_id%type is
   begin
      return sys_context(co_namespace, co_attribute);
   end current_tenant;

   function require_tenant return ctx_tenant.tenant_id%type is
      l_tenant_id ctx_tenant.tenant_id%type;
   begin
      l_tenant_id := current_tenant();
      if l_tenant_id is null then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_tenant_not_set,
            in_detail => 'call ctx_session.set_tenant in this session first'
         );
      end if;
      return l_tenant_id;
   end require_tenant;
end ctx_session;
/
