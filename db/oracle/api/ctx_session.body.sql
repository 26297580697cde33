--liquibase formatted sql logicalFilePath:db/packages/oracle/body/0020_ctx_session.sql

--changeset ctxasm:ora-pkg-0020-ctx-session-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_session is
   co_namespace   constant varchar2(30) := 'CTXASM_CTX';
   co_tenant      constant varchar2(30) := 'TENANT_ID';
   co_user        constant varchar2(30) := 'USER_ID';
   co_agent       constant varchar2(30) := 'AGENT_ID';
   co_transaction constant varchar2(30) := 'TRANSACTION_ID';

   co_claim_purpose    constant varchar2(16)  := 'claim';
   co_max_claim_length constant pls_integer   := 4096;
   -- seconds from iat to exp
   co_max_lifetime     constant pls_integer   := 86400;
   -- seconds an iat may lie in the future
   co_clock_skew       constant pls_integer   := 300;
   co_claim_shape      constant varchar2(100) := '^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$';

   -- base64url (RFC 4648 section 5) without padding, as JWTs write it
   function base64url_decode(in_text in varchar2) return raw is
      l_padding pls_integer;
   begin
      l_padding := mod(4 - mod(length(in_text), 4), 4);
      return sys.utl_encode.base64_decode(
                r => sys.utl_raw.cast_to_raw(c => translate(in_text, '-_', '+/')
                                                  || case when l_padding > 0 then rpad('=', l_padding, '=') end));
   end base64url_decode;

   function base64url_encode(in_bytes in raw) return varchar2 is
   begin
      return rtrim(
                translate(
                   replace(replace(sys.utl_raw.cast_to_varchar2(r => sys.utl_encode.base64_encode(r => in_bytes)),
                                   chr(13)), chr(10)),
                   '+/', '-_'),
                '=');
   end base64url_encode;

   -- Seconds since 1970-01-01 UTC, to the second (a claim's iat and exp are whole seconds).
   function epoch_seconds return number is
   begin
      return round((cast(sys_extract_utc(systimestamp) as date) - to_date('1970-01-01', 'YYYY-MM-DD')) * 86400);
   end epoch_seconds;

   function sha256(in_text in varchar2) return raw is
   begin
      return sys.dbms_crypto.hash(src => sys.utl_raw.cast_to_raw(c => in_text), typ => sys.dbms_crypto.hash_sh256);
   end sha256;

   -- What a member of a JSON object is: string, number, null, absent, or other.
   function member_kind(in_object in json_object_t, in_key in varchar2) return varchar2 is
      l_member json_element_t;
   begin
      if not in_object.has(in_key) then
         return 'absent';
      end if;
      l_member := in_object.get(in_key);
      return case
                when l_member.is_string() then 'string'
                when l_member.is_number() then 'number'
                when l_member.is_null() then 'null'
                else 'other'
             end;
   end member_kind;

   -- The payload of a claim whose signature was verified; NULL when its contents break a rule.
   function checked_payload(in_header in varchar2, in_payload in varchar2) return json_object_t is
      l_header    json_object_t;
      l_payload   json_object_t;
      l_now       number := epoch_seconds();
      l_count     pls_integer;
      l_tenant_id varchar2(4096);
   begin
      l_header := treat(json_element_t.parse(sys.utl_raw.cast_to_varchar2(r => base64url_decode(in_header)))
                        as json_object_t);
      l_payload := treat(json_element_t.parse(sys.utl_raw.cast_to_varchar2(r => base64url_decode(in_payload)))
                         as json_object_t);
      if l_header is null or l_payload is null
         or member_kind(in_object => l_header, in_key => 'alg') <> 'string'
         or l_header.get_string('alg') <> 'HS256'
         or member_kind(in_object => l_header, in_key => 'typ') not in ('absent', 'string')
         or nvl(l_header.get_string('typ'), 'JWT') <> 'JWT'
         or member_kind(in_object => l_payload, in_key => 'tenant') <> 'string'
         or member_kind(in_object => l_payload, in_key => 'iat') <> 'number'
         or member_kind(in_object => l_payload, in_key => 'exp') <> 'number'
         or member_kind(in_object => l_payload, in_key => 'user') not in ('absent', 'null', 'string')
         or member_kind(in_object => l_payload, in_key => 'agent') not in ('absent', 'null', 'string')
         -- an empty user or agent names no one and would act tenant-wide: get_string gives NULL for "" only
         or (member_kind(in_object => l_payload, in_key => 'user') = 'string' and l_payload.get_string('user') is null)
         or (member_kind(in_object => l_payload, in_key => 'agent') = 'string'
             and l_payload.get_string('agent') is null)
         or l_payload.get_number('exp') <= l_now
         or l_payload.get_number('iat') > l_now + co_clock_skew
         or l_payload.get_number('exp') - l_payload.get_number('iat') > co_max_lifetime then
         return null;
      end if;
      -- read into a local first: a method of a PL/SQL JSON type is not SQL (ORA-40573)
      l_tenant_id := l_payload.get_string('tenant');
      select count(*)
        into l_count
        from ctx_tenant t
       where t.tenant_id = l_tenant_id;
      return case when l_count = 1 then l_payload end;
   end checked_payload;

   -- The tenant, the claim's user and agent, and the transaction they hold for (started here if none is).
   procedure bind_to_transaction(in_tenant_id in varchar2, in_user_id in varchar2, in_agent_id in varchar2) is
   begin
      sys.dbms_session.set_context(namespace => co_namespace, attribute => co_tenant, value => in_tenant_id);
      sys.dbms_session.set_context(namespace => co_namespace, attribute => co_user, value => in_user_id);
      sys.dbms_session.set_context(namespace => co_namespace, attribute => co_agent, value => in_agent_id);
      sys.dbms_session.set_context(namespace => co_namespace, attribute => co_transaction,
                                   value => sys.dbms_transaction.local_transaction_id(create_transaction => true));
   end bind_to_transaction;

   procedure set_tenant(in_claim in varchar2) is
      -- what the contents of a signed claim can raise while they are read: JSON that does not parse
      -- (ORA-40441) or is no input (ORA-40834), a value that does not convert or fit (ORA-06502, ORA-01426)
      e_json_syntax exception;
      pragma exception_init(e_json_syntax, -40441);
      e_json_input exception;
      pragma exception_init(e_json_input, -40834);
      e_numeric_overflow exception;
      pragma exception_init(e_numeric_overflow, -1426);
      l_header    varchar2(4096);
      l_payload   varchar2(4096);
      l_signature varchar2(64);
      l_key       ctx_hmac_key.key_bytes%type;
      l_expected  varchar2(64);
      l_claims    json_object_t;
   begin
      clear_tenant();
      if in_claim is not null and length(in_claim) <= co_max_claim_length
         and regexp_like(in_claim, co_claim_shape) then
         l_header := regexp_substr(in_claim, co_claim_shape, 1, 1, null, 1);
         l_payload := regexp_substr(in_claim, co_claim_shape, 1, 1, null, 2);
         l_signature := regexp_substr(in_claim, co_claim_shape, 1, 1, null, 3);
         select k.key_bytes
           into l_key
           from ctx_hmac_key k
          where k.purpose = co_claim_purpose;
         l_expected := base64url_encode(
                          sys.dbms_crypto.mac(src => sys.utl_raw.cast_to_raw(c => l_header || '.' || l_payload),
                                              typ => sys.dbms_crypto.hmac_sh256,
                                              key => l_key));
         -- The signature first: nothing else about the claim is read unless the claim key signed it. Both
         -- MACs are hashed before comparing, so the comparison takes the same time wherever they differ.
         if sha256(l_expected) = sha256(l_signature) then
            begin
               l_claims := checked_payload(in_header => l_header, in_payload => l_payload);
            exception
               when e_json_syntax or e_json_input or value_error or e_numeric_overflow then
                  -- contents of a signed claim that do not parse (bad base64, bad JSON, a number out of range)
                  -- are refused exactly like a forged one, below; any other error (a missing privilege, an
                  -- invalid object) propagates as itself and is never reported as a bad claim
                  l_claims := null;
            end;
         end if;
      end if;
      if l_claims is null then
         -- one answer for every refusal, so no detail: the catalogue's message is the answer
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_invalid_claim,
            in_detail => ctx_errors.error_message(in_code => ctx_errors.co_invalid_claim)
         );
      end if;
      bind_to_transaction(
         in_tenant_id => l_claims.get_string('tenant'),
         in_user_id   => case when l_claims.has('user') then l_claims.get_string('user') end,
         in_agent_id  => case when l_claims.has('agent') then l_claims.get_string('agent') end
      );
   end set_tenant;

   procedure enter_tenant(in_tenant_id in ctx_tenant.tenant_id%type) accessible by (package ctx_admin) is
   begin
      clear_tenant();
      bind_to_transaction(in_tenant_id => in_tenant_id, in_user_id => null, in_agent_id => null);
   end enter_tenant;

   procedure clear_tenant is
   begin
      sys.dbms_session.clear_context(namespace => co_namespace, attribute => co_tenant);
      sys.dbms_session.clear_context(namespace => co_namespace, attribute => co_user);
      sys.dbms_session.clear_context(namespace => co_namespace, attribute => co_agent);
      sys.dbms_session.clear_context(namespace => co_namespace, attribute => co_transaction);
   end clear_tenant;

   function current_tenant return ctx_tenant.tenant_id%type is
      l_bound   varchar2(200);
      l_current varchar2(200);
   begin
      l_bound := sys_context(co_namespace, co_transaction);
      l_current := sys.dbms_transaction.local_transaction_id(create_transaction => false);
      if l_bound is null or l_current is null or l_bound <> l_current then
         return null;
      end if;
      return sys_context(co_namespace, co_tenant);
   end current_tenant;

   function require_tenant return ctx_tenant.tenant_id%type is
      l_tenant_id ctx_tenant.tenant_id%type;
   begin
      l_tenant_id := current_tenant();
      if l_tenant_id is null then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_tenant_not_set,
            in_detail => 'call ctx_session.set_tenant in this transaction first'
         );
      end if;
      return l_tenant_id;
   end require_tenant;

   function claim_scope(in_attribute in varchar2) return varchar2 is
   begin
      if current_tenant() is null or in_attribute not in (co_user, co_agent) then
         return null;
      end if;
      return sys_context(co_namespace, in_attribute);
   end claim_scope;

   function require_scope(in_user_id in varchar2, in_agent_id in varchar2) return ctx_tenant.tenant_id%type is
      l_tenant_id ctx_tenant.tenant_id%type;
   begin
      l_tenant_id := require_tenant();
      if claim_scope(co_user) is not null and (in_user_id is null or in_user_id <> claim_scope(co_user)) then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_scope_not_allowed,
            in_detail => 'in_user_id ' || ctx_errors.quoted(in_text => in_user_id)
                         || ' is not the user the session''s claim names'
         );
      end if;
      if claim_scope(co_agent) is not null and (in_agent_id is null or in_agent_id <> claim_scope(co_agent)) then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_scope_not_allowed,
            in_detail => 'in_agent_id ' || ctx_errors.quoted(in_text => in_agent_id)
                         || ' is not the agent the session''s claim names'
         );
      end if;
      return l_tenant_id;
   end require_scope;

   procedure require_row_scope(in_memory_type in varchar2, in_user_id in varchar2, in_agent_id in varchar2) is
   begin
      if claim_scope(co_user) is not null and (in_user_id is null or in_user_id <> claim_scope(co_user)) then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_scope_not_allowed,
            in_detail => in_memory_type || '.user_id ' || ctx_errors.quoted(in_text => in_user_id)
                         || ' is not the user the session''s claim names'
         );
      end if;
      if claim_scope(co_agent) is not null and (in_agent_id is null or in_agent_id <> claim_scope(co_agent)) then
         ctx_errors.raise_error(
            in_code   => ctx_errors.co_scope_not_allowed,
            in_detail => in_memory_type || '.agent_id ' || ctx_errors.quoted(in_text => in_agent_id)
                         || ' is not the agent the session''s claim names'
         );
      end if;
   end require_row_scope;
end ctx_session;
/
