--liquibase formatted sql logicalFilePath:db/packages/oracle/spec/0020_ctx_session.sql

--changeset ctxasm:ora-pkg-0020-ctx-session-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_session authid definer is
   /**
    * The trusted package of the application context CTXASM_CTX (created USING ctx_session in
    * db/security/oracle/): only this package can set the tenant that every VPD policy compares with, and it
    * sets it only for a verified claim. Granted to CTXASM_APP.
    *
    * The context is bound to the transaction that set it: set_tenant records the local transaction id with
    * the tenant, and current_tenant returns NULL in any other transaction. Every CTX_ routine checks it
    * (require_tenant, require_scope) before it touches a table, and the application holds no table privilege,
    * so a pooled connection never hands a tenant to the next transaction, whoever runs it. (The VPD predicate
    * reads the context's attributes themselves: Oracle Text syncs after the commit, under that predicate.)
    */

   /**
    * Scopes the current transaction to the tenant of a signed claim: an HS256 JWT (HMAC-SHA256 under the
    * claim key of CTX_HMAC_KEY) whose payload holds "tenant", optionally "user" and "agent", "iat" and "exp"
    * (seconds since 1970). Refused: a claim that is malformed or longer than 4,096 characters, not signed
    * with the claim key, not HS256, expired, issued more than 5 minutes in the future, valid for more than a
    * day, or for a tenant that is not registered: all with the same error, which names nothing.
    * Reads CTX_HMAC_KEY and CTX_TENANT; writes the CTXASM_CTX attributes TENANT_ID, USER_ID, AGENT_ID and
    * TRANSACTION_ID (cleared first, so a refused claim never leaves the previous tenant in place); starts a
    * transaction when none is active.
    * @param in_claim the claim, as ctxasm mints it (`ctxasm claim`, ctxasm.claims)
    * @throws -20118 invalid_claim for every refusal
    */
   procedure set_tenant(in_claim in varchar2);

   /**
    * Removes the tenant from the session: every memory table then shows no rows.
    * Reads nothing; writes the CTXASM_CTX attributes. Raises nothing.
    */
   procedure clear_tenant;

   /**
    * The tenant of the current transaction, or NULL when none was set in it.
    * Reads the CTXASM_CTX attributes and the local transaction id; writes nothing. Raises nothing.
    */
   function current_tenant return ctx_tenant.tenant_id%type;

   /**
    * The session's tenant, for the other CTX_ packages (PostgreSQL: ctxasm.require_tenant).
    * Reads as current_tenant; writes nothing.
    * @throws -20102 tenant_not_set when no tenant is set in this transaction
    */
   -- contract:internal
   function require_tenant return ctx_tenant.tenant_id%type;

   /**
    * The user ('USER_ID') or agent ('AGENT_ID') the transaction's verified claim names, or NULL when it
    * names none or no tenant is set in this transaction (PostgreSQL: ctxasm.claim_scope).
    * @param in_attribute 'USER_ID' or 'AGENT_ID'
    */
   -- contract:internal
   function claim_scope(in_attribute in varchar2) return varchar2;

   /**
    * For a routine that takes a scope: the user and agent must be the ones the claim names, when it names
    * them (NULL included). Returns the tenant (PostgreSQL: ctxasm.require_scope).
    * @throws -20102 tenant_not_set, -20119 scope_not_allowed naming in_user_id or in_agent_id
    */
   -- contract:internal
   function require_scope(in_user_id in varchar2, in_agent_id in varchar2) return ctx_tenant.tenant_id%type;

   /**
    * Scopes the current transaction to a tenant without a claim: for CTX_ADMIN's own maintenance
    * (purge_tenant) only, which ACCESSIBLE BY enforces (PostgreSQL: ctxasm.enter_tenant, never granted).
    * Writes the CTXASM_CTX attributes as set_tenant does, with no user or agent.
    */
   -- contract:internal
   procedure enter_tenant(in_tenant_id in ctx_tenant.tenant_id%type) accessible by (package ctx_admin);

   /**
    * For a row a routine writes, deletes or erases: its user_id and agent_id must be the ones the claim
    * names, when it names them (PostgreSQL: ctxasm.require_row_scope).
    * @throws -20119 scope_not_allowed naming <type>.user_id or <type>.agent_id
    */
   -- contract:internal
   procedure require_row_scope(in_memory_type in varchar2, in_user_id in varchar2, in_agent_id in varchar2);
end ctx_session;
/
