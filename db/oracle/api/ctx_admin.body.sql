--liquibase formatted sql logicalFilePath:db/packages/oracle/body/0030_ctx_admin.sql

--changeset ctxasm:ora-pkg-0030-ctx-admin-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_admin is
   -- the same rule as the check constraint ctx_tenant_tenant_id_ck and the PostgreSQL twin
   co_tenant_id_pattern      constant varchar2(40) := '^[a-z0-9][a-z0-9_-]{0,63}$';
   co_case_sensitive         constant varchar2(1)  := 'c';
   co_max_display_name_chars constant pls_integer  := 256;

   procedure register_tenant(
      in_tenant_id    in ctx_tenant.tenant_id%type,
      in_display_name in ctx_tenant.display_name%type
   ) is
   begin
      if in_tenant_id is null or not regexp_like(in_tenant_id, co_tenant_id_pattern, co_case_sensitive) then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_tenant_id '
                         || ctx_errors.quoted(in_text => in_tenant_id)
                         || ' must be 1..64 of a-z, 0-9, _ and -, starting with a letter or digit'
         );
      end if;
      if in_display_name is null or length(in_display_name) > co_max_display_name_chars then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_display_name must be 1..' || to_char(co_max_display_name_chars) || ' characters'
         );
      end if;
      merge into ctx_tenant t
      using (select in_tenant_id as tenant_id, in_display_name as display_name from dual) s
         on (t.tenant_id = s.tenant_id)
       when matched then
            update set t.display_name = s.display_name
       when not matched then
            insert (tenant_id, display_name)
            values (s.tenant_id, s.display_name);
   end register_tenant;

   function purge_tenant(in_tenant_id in ctx_tenant.tenant_id%type) return number is
      l_tenant_id ctx_tenant.tenant_id%type;
      l_total     number := 0;
   begin
      begin
         select t.tenant_id
           into l_tenant_id
           from ctx_tenant t
          where t.tenant_id = in_tenant_id;
      exception
         when no_data_found then
            return 0;
      end;
      -- the VPD policies let a session delete only its own tenant's rows
      ctx_session.enter_tenant(in_tenant_id => l_tenant_id);
      -- generated: purge tables from contract/memory_types.toml; edit the catalogue, then regenerate
      delete from guideline_memory m where m.tenant_id = l_tenant_id;
      l_total := l_total + sql%rowcount;
      delete from persona_memory m where m.tenant_id = l_tenant_id;
      l_total := l_total + sql%rowcount;
      delete from toolbox_memory m where m.tenant_id = l_tenant_id;
      l_total := l_total + sql%rowcount;
      delete from entity_memory m where m.tenant_id = l_tenant_id;
      l_total := l_total + sql%rowcount;
      delete from workflow_memory m where m.tenant_id = l_tenant_id;
      l_total := l_total + sql%rowcount;
      delete from knowledge_base_document m where m.tenant_id = l_tenant_id;
      l_total := l_total + sql%rowcount;
      delete from knowledge_base_chunk m where m.tenant_id = l_tenant_id;
      l_total := l_total + sql%rowcount;
      delete from conversation_memory m where m.tenant_id = l_tenant_id;
      l_total := l_total + sql%rowcount;
      delete from summarization_memory m where m.tenant_id = l_tenant_id;
      l_total := l_total + sql%rowcount;
      delete from context_compression m where m.tenant_id = l_tenant_id;
      l_total := l_total + sql%rowcount;
      delete from context_source_ref m where m.tenant_id = l_tenant_id;
      l_total := l_total + sql%rowcount;
      -- end generated: purge tables
      delete from ctx_tenant t where t.tenant_id = l_tenant_id;
      ctx_session.clear_tenant();
      return l_total;
   end purge_tenant;

   procedure set_claim_key(in_key in varchar2) is
      co_min_key_bytes constant pls_integer  := 32;
      -- ctx_hmac_key.key_bytes is raw(256)
      co_max_key_bytes constant pls_integer  := 256;
      co_claim_purpose constant varchar2(16) := 'claim';
   begin
      if in_key is null or lengthb(in_key) not between co_min_key_bytes and co_max_key_bytes then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_argument,
            in_detail => 'in_key must be ' || to_char(co_min_key_bytes) || ' to ' || to_char(co_max_key_bytes)
                         || ' bytes of secret text'
         );
      end if;
      update ctx_hmac_key k
         set k.key_bytes = sys.utl_raw.cast_to_raw(c => in_key),
             k.changed_at = systimestamp
       where k.purpose = co_claim_purpose;
   end set_claim_key;
end ctx_admin;
/
