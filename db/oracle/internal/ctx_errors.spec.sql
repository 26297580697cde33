--liquibase formatted sql logicalFilePath:db/packages/oracle/spec/0010_ctx_errors.sql
-- generated from contract/errors.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)

--changeset ctxasm:ora-pkg-0010-ctx-errors-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_errors authid definer is
   /**
    * The error numbers of docs/contract.md, in one place (Trivadis G-5050).
    *
    * Every error has a co_ constant with the number, an e_ exception bound to it with
    * PRAGMA EXCEPTION_INIT (so callers and utPLSQL tests can catch it by name), its symbolic name in
    * error_name and what it says without a detail in error_message. The PostgreSQL twin raises the same
    * names as SQLSTATE CX<nnn> (ctxasm.error_code, ctxasm.error_message).
    * Engine-internal: not part of the contract, never granted to CTXASM_APP.
    */

   -- -20101 (unknown_tenant) is retired: set_tenant refuses every bad claim with invalid_claim
   -- -20117 (tool_refused) is reserved: no routine here raises it
   co_tenant_not_set        constant pls_integer := -20102;
   co_invalid_memory_type   constant pls_integer := -20103;
   co_invalid_field         constant pls_integer := -20104;
   co_duplicate_memory      constant pls_integer := -20105;
   co_memory_not_found      constant pls_integer := -20106;
   co_invalid_snapshot      constant pls_integer := -20107;
   co_invalid_argument      constant pls_integer := -20108;
   co_unknown_intent        constant pls_integer := -20110;
   co_budget_missing        constant pls_integer := -20111;
   co_invalid_budget        constant pls_integer := -20112;
   co_invalid_question      constant pls_integer := -20113;
   co_invalid_manifest      constant pls_integer := -20114;
   co_not_in_window         constant pls_integer := -20115;
   co_source_unavailable    constant pls_integer := -20116;
   co_invalid_claim         constant pls_integer := -20118;
   co_scope_not_allowed     constant pls_integer := -20119;
   co_session_limits_lifted constant pls_integer := -20120;

   e_tenant_not_set exception;
   pragma exception_init(e_tenant_not_set, -20102);
   e_invalid_memory_type exception;
   pragma exception_init(e_invalid_memory_type, -20103);
   e_invalid_field exception;
   pragma exception_init(e_invalid_field, -20104);
   e_duplicate_memory exception;
   pragma exception_init(e_duplicate_memory, -20105);
   e_memory_not_found exception;
   pragma exception_init(e_memory_not_found, -20106);
   e_invalid_snapshot exception;
   pragma exception_init(e_invalid_snapshot, -20107);
   e_invalid_argument exception;
   pragma exception_init(e_invalid_argument, -20108);
   e_unknown_intent exception;
   pragma exception_init(e_unknown_intent, -20110);
   e_budget_missing exception;
   pragma exception_init(e_budget_missing, -20111);
   e_invalid_budget exception;
   pragma exception_init(e_invalid_budget, -20112);
   e_invalid_question exception;
   pragma exception_init(e_invalid_question, -20113);
   e_invalid_manifest exception;
   pragma exception_init(e_invalid_manifest, -20114);
   e_not_in_window exception;
   pragma exception_init(e_not_in_window, -20115);
   e_source_unavailable exception;
   pragma exception_init(e_source_unavailable, -20116);
   e_invalid_claim exception;
   pragma exception_init(e_invalid_claim, -20118);
   e_scope_not_allowed exception;
   pragma exception_init(e_scope_not_allowed, -20119);
   e_session_limits_lifted exception;
   pragma exception_init(e_session_limits_lifted, -20120);

   /**
    * The symbolic name of an error number (co_invalid_claim gives 'invalid_claim'); NULL for a number
    * that is not ours. Reads and writes nothing.
    */
   function error_name(in_code in pls_integer) return varchar2 deterministic;

   /**
    * What an error says without a detail (co_invalid_claim gives 'the tenant claim was refused'), for a
    * raise site that has no more to say; NULL for a number that is not ours. Reads and writes nothing.
    */
   function error_message(in_code in pls_integer) return varchar2 deterministic;

   /**
    * Raises in_code with the message '<symbolic name>: <in_detail>' (cut to the 2,000 characters
    * RAISE_APPLICATION_ERROR keeps). Reads and writes nothing.
    * @throws in_code always; -20108 invalid_argument when in_code is not one of the constants above
    */
   procedure raise_error(in_code in pls_integer, in_detail in varchar2);

   /**
    * A value quoted for an error message, as PostgreSQL's quote_literal does, or NULL spelt out; a value
    * longer than 200 characters is cut there and its length named (PostgreSQL: ctxasm.quoted).
    * Reads and writes nothing.
    */
   function quoted(in_text in varchar2) return varchar2 deterministic;
end ctx_errors;
/
