--liquibase formatted sql

--changeset ctxasm:ora-pkg-0020-ctx-session-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_session authid definer is
   /**
    * The trusted package of the application context CTXASM_CTX (created USING ctx_session in
    * db/security/oracle/): only this package can set the tenant that every VPD policy compares with.
    * Granted to CTXASM_APP. The context lasts for the database session until clear_tenant.
    */

   /**
    * Scopes the session to a registered tenant.
    * Reads CTX_TENANT; writes the CTXASM_CTX attribute TENANT_ID (cleared first, so a failed call never
    * leaves the previous tenant in place).
    * @param in_tenant_id the tenant, as registered by ctx_admin.register_tenant
    * @throws -20108 invalid_argument when in_tenant_id is NULL
    * @throws -20101 unknown_tenant when no such tenant is registered
    */
   procedure set_tenant(in_tenant_id in ctx_tenant.tenant_id%type);

   /**
    * Removes the tenant from the session: every memory table then shows no rows.
    * Reads nothing; writes the CTXASM_CTX attribute TENANT_ID. Raises nothing.
    */
   procedure clear_tenant;

   /**
    * The session's tenant, or NULL when none is set.
    * Reads the CTXASM_CTX attribute TENANT_ID; writes nothing. Raises nothing.
    */
   function current_tenant return ctx_tenant.tenant_id%type;

   /**
    * The session's tenant, for the other CTX_ packages (PostgreSQL: ctxasm.require_tenant).
    * Reads the CTXASM_CTX attribute TENANT_ID; writes nothing.
    * @throws -20102 tenant_not_set when no tenant is set
    */
   -- contract:internal
   function require_tenant return ctx_tenant.tenant_id%type;
end ctx_session;
/
