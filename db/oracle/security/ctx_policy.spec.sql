--liquibase formatted sql logicalFilePath:db/packages/oracle/spec/0040_ctx_policy.sql

--changeset ctxasm:ora-pkg-0040-ctx-policy-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_policy authid definer is
   /**
    * The VPD policy function of every memory table (DBMS_RLS.ADD_POLICY in db/security/oracle/).
    * Engine-internal: PostgreSQL states the same rule with CREATE POLICY; never granted to CTXASM_APP.
    */

   /**
    * The predicate every statement on a memory table gets: the row's tenant is the tenant CTX_SESSION set for
    * a verified claim, and when the claim names a user or an agent, rows scoped to another user or agent are
    * left out too (rows with no user or agent belong to the whole tenant). It reads the context's attributes,
    * which live for the session: the application has no privilege on any table, so it reaches rows only
    * through the CTX_ packages, and every one of them first checks that the tenant was set in the current
    * transaction (CTX_SESSION.require_tenant). Oracle Text's SYNC (ON COMMIT), which reads the new rows after
    * the commit under this predicate, still sees the committing tenant's rows.
    * Reads and writes nothing. Raises nothing.
    * @param in_schema the owner of the protected table (passed by VPD, not used)
    * @param in_object the protected table (passed by VPD, not used)
    */
   function tenant_predicate(in_schema in varchar2, in_object in varchar2) return varchar2;
end ctx_policy;
/
