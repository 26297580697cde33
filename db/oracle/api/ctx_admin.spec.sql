--liquibase formatted sql logicalFilePath:db/packages/oracle/spec/0030_ctx_admin.sql

--changeset ctxasm:ora-pkg-0030-ctx-admin-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_admin authid definer is
   /**
    * Owner-only administration (deployment, loader). Never granted to CTXASM_APP.
    */

   /**
    * Registers a tenant, or renames it if it exists (idempotent).
    * Reads and writes CTX_TENANT (MERGE); does not commit (the caller does).
    * @param in_tenant_id 1..64 characters of a-z, 0-9, _ and -, starting with a letter or digit
    * @param in_display_name a non-empty name of at most 256 characters
    * @throws -20108 invalid_argument when either argument is NULL or malformed
    */
   procedure register_tenant(
      in_tenant_id    in ctx_tenant.tenant_id%type,
      in_display_name in ctx_tenant.display_name%type
   );

   /**
    * Removes every row of one tenant from the memory tables, and the tenant from CTX_TENANT (owner only:
    * test fixtures and offboarding). Oracle keeps no history table: past versions stay readable by
    * Flashback Query only until the undo retention ends.
    * Reads CTX_TENANT; deletes from every memory table and CTX_TENANT; sets the session tenant to
    * in_tenant_id for the deletes (VPD) and clears it afterwards. Does not commit.
    * @param in_tenant_id the tenant
    * @return the number of memory rows removed; 0 for a tenant that is not registered
    */
   function purge_tenant(in_tenant_id in ctx_tenant.tenant_id%type) return number;

   /**
    * Installs the key tenant claims are signed with (HMAC-SHA256): the one the deployment hands to the
    * trusted side (ctxasm's launch configuration). Claims signed with an earlier key are refused from now.
    * Writes CTX_HMAC_KEY; does not commit.
    * @param in_key at least 32 bytes of secret text (its AL32UTF8 bytes are the key)
    * @throws -20108 invalid_argument when in_key is NULL or shorter
    */
   procedure set_claim_key(in_key in varchar2);
end ctx_admin;
/
