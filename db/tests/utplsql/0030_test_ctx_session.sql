--liquibase formatted sql

-- utPLSQL v3 suite for CTX_SESSION: verified tenant claims, the uniform refusal, the tenant bound to its
-- transaction, the scope a claim names, and no table privilege for the application user. The PostgreSQL
-- twin of these checks is py/tests/security/. The fixture tenants are registered and committed in
-- setup_tenants, hence --%rollback(manual).

--changeset ctxasm:ora-test-0030-01-test-ctx-session-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package test_ctx_session authid definer is
   --%suite(CTX_SESSION: verified claims, one refusal, a tenant per transaction)
   --%suitepath(ctxasm.oracle)
   --%rollback(manual)

   co_tenant constant varchar2(64) := 'ut-session-a';

   --%beforeall
   procedure setup_tenants;

   --%afterall
   procedure purge_tenants;

   --%aftereach
   procedure undo_uncommitted;

   --%test(a claim signed with the claim key scopes the transaction to its tenant)
   procedure signed_claim_sets_the_tenant;

   --%test(a valid claim naming tenant, user and agent is accepted and read: its tenant is looked up from a local)
   procedure claim_reads_tenant_user_and_agent;

   --%test(signed contents that do not parse or do not fit are refused like a forged claim)
   procedure signed_malformed_claims_are_refused_alike;

   --%test(a bare tenant id, a forged, tampered, expired, future, long-lived or unregistered claim: one error)
   procedure every_bad_claim_is_refused_alike;

   --%test(the tenant ends with the transaction: a pooled connection never hands it on)
   procedure tenant_ends_with_the_transaction;

   --%test(a claim naming a user and agent refuses routines called for another)
   --%throws(ctx_errors.e_scope_not_allowed)
   procedure scoped_claim_refuses_another_user;

   --%test(the application user holds no privilege on any table of the owner)
   procedure app_has_no_table_privilege;

   --%test(DBMS_CRYPTO.MAC with HMAC_SH256 is the RFC 4231 HMAC-SHA256 (test case 2))
   procedure mac_is_hmac_sha256;
end test_ctx_session;
/

--changeset ctxasm:ora-test-0030-02-test-ctx-session-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body test_ctx_session is
   co_refused constant varchar2(100) := 'ORA-20118: invalid_claim: the tenant claim was refused';

   -- SQLERRM of set_tenant(in_claim), or NULL when the claim is accepted; the transaction is rolled back.
   function refusal_of(in_claim in varchar2) return varchar2 is
      l_error varchar2(4000);
   begin
      begin
         ctx_session.set_tenant(in_claim => in_claim);
      exception
         when others then
            if sqlcode <> ctx_errors.co_invalid_claim then
               raise;
            end if;
            l_error := sqlerrm;
      end;
      rollback;
      return l_error;
   end refusal_of;

   procedure setup_tenants is
   begin
      purge_tenants;
      ctx_admin.register_tenant(in_tenant_id => co_tenant, in_display_name => 'utPLSQL session tenant');
      commit;
   end setup_tenants;

   procedure purge_tenants is
      l_removed number;
   begin
      rollback;
      l_removed := ctx_admin.purge_tenant(in_tenant_id => co_tenant);
      ctx_session.clear_tenant;
      commit;
   end purge_tenants;

   procedure undo_uncommitted is
   begin
      rollback;
      ctx_session.clear_tenant;
   end undo_uncommitted;

   procedure signed_claim_sets_the_tenant is
      l_expect ut_expectation;
   begin
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_expect := ut.expect(ctx_session.current_tenant());
      l_expect.to_equal(co_tenant);
   end signed_claim_sets_the_tenant;

   procedure claim_reads_tenant_user_and_agent is
      l_expect ut_expectation;
   begin
      -- every claim went through CTX_TENANT's lookup, which read the tenant with a PL/SQL JSON method inside
      -- SQL (ORA-40573): every valid claim was refused, or the body did not compile
      ctx_session.set_tenant(
         in_claim => test_claims.claim_for(in_tenant_id => co_tenant, in_user_id => 'jane',
                                           in_agent_id => 'research-assistant')
      );
      l_expect := ut.expect(ctx_session.current_tenant());
      l_expect.to_equal(co_tenant);
      l_expect := ut.expect(ctx_session.claim_scope(in_attribute => 'USER_ID'));
      l_expect.to_equal('jane');
      l_expect := ut.expect(ctx_session.claim_scope(in_attribute => 'AGENT_ID'));
      l_expect.to_equal('research-assistant');
      l_expect := ut.expect(ctx_session.require_scope(in_user_id => 'jane', in_agent_id => 'research-assistant'));
      l_expect.to_equal(co_tenant);
   end claim_reads_tenant_user_and_agent;

   procedure signed_malformed_claims_are_refused_alike is
      type t_payload_tab is table of varchar2(4000);
      l_expect   ut_expectation;
      l_payloads t_payload_tab;
   begin
      -- contents only a holder of the claim key could sign; set_tenant's handler takes exactly these errors
      l_payloads := t_payload_tab(
         'not json at all',
         '[1, 2, 3]',
         '{"tenant": 5, "iat": 1, "exp": 4102444800}',
         '{"tenant": "' || co_tenant || '", "iat": 1, "exp": 1e400}',
         '{"tenant": "' || rpad('x', 1000, 'x') || '", "iat": 1, "exp": 4102444800}'
      );
      for i in 1 .. l_payloads.count loop
         l_expect := ut.expect(refusal_of(in_claim => test_claims.signed(in_payload => l_payloads(i))));
         l_expect.to_equal(co_refused);
         l_expect := ut.expect(ctx_session.current_tenant());
         l_expect.to_be_null();
      end loop;
   end signed_malformed_claims_are_refused_alike;

   procedure every_bad_claim_is_refused_alike is
      type t_claim_tab is table of varchar2(4000);
      l_expect  ut_expectation;
      l_good    varchar2(4000);
      l_claims  t_claim_tab;
      l_forged  varchar2(4000);
   begin
      l_good := test_claims.claim_for(in_tenant_id => co_tenant);
      -- acme's signature on a payload that names another tenant
      l_forged := regexp_substr(l_good, '^[^.]+') || '.'
                  || test_claims.base64url(sys.utl_raw.cast_to_raw(c => '{"tenant":"ut-other","iat":1,"exp":4102444800}'))
                  || '.' || regexp_substr(l_good, '[^.]+$');
      l_claims := t_claim_tab(
         co_tenant,
         null,
         'a.b',
         l_forged,
         test_claims.claim_for(in_tenant_id => co_tenant, in_key => sys.utl_raw.cast_to_raw(c => rpad('x', 48, 'x'))),
         test_claims.claim_for(in_tenant_id => co_tenant, in_issued_offset => -7200, in_lifetime => 60),
         test_claims.claim_for(in_tenant_id => co_tenant, in_issued_offset => 3600),
         test_claims.claim_for(in_tenant_id => co_tenant, in_lifetime => 7 * 86400),
         test_claims.claim_for(in_tenant_id => 'ut-session-nobody')
      );
      for i in 1 .. l_claims.count loop
         l_expect := ut.expect(refusal_of(in_claim => l_claims(i)));
         l_expect.to_equal(co_refused);
         l_expect := ut.expect(ctx_session.current_tenant());
         l_expect.to_be_null();
      end loop;
   end every_bad_claim_is_refused_alike;

   procedure tenant_ends_with_the_transaction is
      l_expect  ut_expectation;
      l_id      varchar2(128);
      l_rows    number;
      l_refused boolean := false;
      l_report  clob;
   begin
      -- a row of the tenant, committed, so that there is something a leaked tenant would show
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      l_id := ctx_memory.put_memory(
                 in_memory_type => 'entity',
                 in_record      => '{"id": "ut_session_row", "subject": "s", "predicate": "p", '
                                   || '"content": "Only the session tenant reads this."}'
              );
      commit;
      ctx_session.set_tenant(in_claim => test_claims.claim_for(in_tenant_id => co_tenant));
      select count(*) into l_rows from entity_memory e where e.id = 'ut_session_row';
      l_expect := ut.expect(l_rows);
      l_expect.to_equal(1);
      rollback;
      l_expect := ut.expect(ctx_session.current_tenant());
      l_expect.to_be_null();
      -- The context's attributes outlive the transaction (Oracle Text's sync after the commit reads under them),
      -- so the guarantee is the packages': the application holds no table privilege, and every routine first
      -- asks for the tenant of the current transaction.
      begin
         l_report := ctx_memory.inventory();
      exception
         when others then
            if sqlcode <> ctx_errors.co_tenant_not_set then
               raise;
            end if;
            l_refused := true;
      end;
      l_expect := ut.expect(l_refused);
      l_expect.to_be_true();
   end tenant_ends_with_the_transaction;

   procedure scoped_claim_refuses_another_user is
      l_tools clob;
   begin
      ctx_session.set_tenant(
         in_claim => test_claims.claim_for(in_tenant_id => co_tenant, in_user_id => 'jane',
                                           in_agent_id => 'research-assistant')
      );
      l_tools := ctx_tools.active_tools(in_user_id => 'bob', in_agent_id => 'research-assistant',
                                        in_evaluation_time => systimestamp);
   end scoped_claim_refuses_another_user;

   procedure app_has_no_table_privilege is
      l_expect ut_expectation;
      l_grants number;
   begin
      select count(*)
        into l_grants
        from user_tab_privs_made p
       where p.grantee = 'CTXASM_APP'
         and p.type in ('TABLE', 'VIEW');
      l_expect := ut.expect(l_grants);
      l_expect.to_equal(0);
   end app_has_no_table_privilege;

   procedure mac_is_hmac_sha256 is
      l_expect ut_expectation;
      l_mac    raw(32);
   begin
      l_mac := sys.dbms_crypto.mac(src => sys.utl_raw.cast_to_raw(c => 'what do ya want for nothing?'),
                                   typ => sys.dbms_crypto.hmac_sh256,
                                   key => sys.utl_raw.cast_to_raw(c => 'Jefe'));
      l_expect := ut.expect(lower(rawtohex(l_mac)));
      l_expect.to_equal('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
   end mac_is_hmac_sha256;
end test_ctx_session;
/
