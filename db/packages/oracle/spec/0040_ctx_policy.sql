--liquibase formatted sql

--changeset ctxasm:ora-pkg-0040-ctx-policy-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_policy authid definer is
   /**
    * The VPD policy function of every memory table (DBMS_RLS.ADD_POLICY in db/security/oracle/).
    * Engine-internal: PostgreSQL states the same rule with CREATE POLICY; never granted to CTXASM_APP.
    */

   /**
    * The predicate every statement on a memory table gets: the row's tenant is the tenant of the current
    * transaction's verified claim (CTX_SESSION.current_tenant, NULL in any other transaction, so no rows), and
    * when the claim names a user or an agent, rows scoped to another user or agent are left out too (rows
    * with no user or agent belong to the whole tenant). The CTX_SESSION calls sit in scalar subqueries, which
    * Oracle evaluates once per statement.
    * Reads and writes nothing. Raises nothing.
    * @param in_schema the owner of the protected table (passed by VPD): the schema of CTX_SESSION
    * @param in_object the protected table (passed by VPD, not used)
    */
   function tenant_predicate(in_schema in varchar2, in_object in varchar2) return varchar2;
end ctx_policy;
/
