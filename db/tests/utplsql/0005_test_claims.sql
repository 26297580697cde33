--liquibase formatted sql

-- Not a suite: the claims the suites scope their transactions with. The trusted side mints claims in Python
-- (ctxasm.claims); a utPLSQL test runs as the owner, which may read CTX_HMAC_KEY, so it mints its own here, the
-- same way: an HS256 JWT over {"tenant", "user", "agent", "iat", "exp"}.

--changeset ctxasm:ora-test-0005-01-test-claims-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package test_claims authid definer is
   /**
    * A claim for the tenant (and user and agent, when given) signed with the installed claim key, or with
    * in_key; issued in_issued_offset seconds from now and valid for in_lifetime seconds.
    */
   function claim_for(
      in_tenant_id      in varchar2,
      in_user_id        in varchar2 default null,
      in_agent_id       in varchar2 default null,
      in_lifetime       in pls_integer default 600,
      in_issued_offset  in pls_integer default 0,
      in_key            in raw default null
   ) return varchar2;

   /**
    * base64url without padding, as a claim's three parts are written.
    */
   function base64url(in_bytes in raw) return varchar2;

   /**
    * A claim whose payload is in_payload exactly (any text, JSON or not), signed with the installed claim key:
    * what only a holder of the key could send.
    */
   function signed(in_payload in varchar2) return varchar2;
end test_claims;
/

--changeset ctxasm:ora-test-0005-02-test-claims-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body test_claims is
   co_header constant varchar2(40) := '{"alg":"HS256","typ":"JWT"}';

   function base64url(in_bytes in raw) return varchar2 is
   begin
      return rtrim(
                translate(
                   replace(replace(sys.utl_raw.cast_to_varchar2(r => sys.utl_encode.base64_encode(r => in_bytes)),
                                   chr(13)), chr(10)),
                   '+/', '-_'),
                '=');
   end base64url;

   -- header.payload.signature over in_payload, with in_key or, when NULL, the installed claim key
   function signed_with(in_payload in varchar2, in_key in raw) return varchar2 is
      l_key   raw(256);
      l_input varchar2(4000);
   begin
      if in_key is null then
         select k.key_bytes into l_key from ctx_hmac_key k where k.purpose = 'claim';
      else
         l_key := in_key;
      end if;
      l_input := base64url(sys.utl_raw.cast_to_raw(c => co_header)) || '.'
                 || base64url(sys.utl_raw.cast_to_raw(c => in_payload));
      return l_input || '.' || base64url(sys.dbms_crypto.mac(src => sys.utl_raw.cast_to_raw(c => l_input),
                                                             typ => sys.dbms_crypto.hmac_sh256, key => l_key));
   end signed_with;

   function claim_for(
      in_tenant_id      in varchar2,
      in_user_id        in varchar2 default null,
      in_agent_id       in varchar2 default null,
      in_lifetime       in pls_integer default 600,
      in_issued_offset  in pls_integer default 0,
      in_key            in raw default null
   ) return varchar2 is
      l_payload json_object_t := json_object_t();
      l_now     number;
   begin
      l_now := round((cast(sys_extract_utc(systimestamp) as date) - to_date('1970-01-01', 'YYYY-MM-DD')) * 86400);
      l_payload.put('tenant', in_tenant_id);
      if in_user_id is not null then
         l_payload.put('user', in_user_id);
      end if;
      if in_agent_id is not null then
         l_payload.put('agent', in_agent_id);
      end if;
      l_payload.put('iat', l_now + in_issued_offset);
      l_payload.put('exp', l_now + in_issued_offset + in_lifetime);
      return signed_with(in_payload => l_payload.to_string(), in_key => in_key);
   end claim_for;

   function signed(in_payload in varchar2) return varchar2 is
   begin
      return signed_with(in_payload => in_payload, in_key => null);
   end signed;
end test_claims;
/
