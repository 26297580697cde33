--liquibase formatted sql

--changeset ctxasm:ora-pkg-0040-ctx-policy-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_policy authid definer is
   /**
    * The VPD policy function of every memory table (DBMS_RLS.ADD_POLICY in db/security/oracle/).
    * Engine-internal: PostgreSQL states the same rule with CREATE POLICY; never granted to CTXASM_APP.
    */

   /**
    * The predicate 'tenant_id = sys_context(''CTXASM_CTX'', ''TENANT_ID'')'. With no tenant in the session
    * the context is NULL, the comparison is never true and the table shows no rows.
    * Reads and writes nothing. Raises nothing.
    * @param in_schema the owner of the protected table (passed by VPD, not used)
    * @param in_object the protected table (passed by VPD, not used)
    */
   function tenant_predicate(in_schema in varchar2, in_object in varchar2) return varchar2;
end ctx_policy;
/
