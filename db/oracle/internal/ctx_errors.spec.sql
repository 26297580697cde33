--liquibase formatted sql logicalFilePath:db/packages/oracle/spec/0010_ctx_errors.sql
-- generated from contract/errors.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)

--changeset ctxasm:ora-pkg-0010-ctx-errors-spec dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package ctx_errors authid definer is
   /**
    * The error numbers of docs/contract.md, in one place (Trivadis G-5050).
    *
    * Every error has a co_ constant with the number, an e_ exception bound to it with
    * PRAGMA EXCEPTION_INIT (so callers and utPLSQL tests can catch it by name), a co_msg_ constant with
    * what it says without its detail, and its symbolic name in error_name. The PostgreSQL twin raises the
    * same names as SQLSTATE CX<nnn> (ctxasm.error_code).
    * Engine-internal: not part of the contract, never granted to CTXASM_APP.
    */

   -- -20101 (unknown_tenant) is retired: set_tenant refuses every bad claim with invalid_claim
   -- -20117 (tool_refused) is reserved: no routine here raises it
   co_tenant_not_set      constant pls_integer := -20102;
   co_invalid_memory_type constant pls_integer := -20103;
   co_invalid_field       constant pls_integer := -20104;
   co_duplicate_memory    constant pls_integer := -20105;
   co_memory_not_found    constant pls_integer := -20106;
   co_invalid_snapshot    constant pls_integer := -20107;
   co_invalid_argument    constant pls_integer := -20108;
   co_unknown_intent      constant pls_integer := -20110;
   co_budget_missing      constant pls_integer := -20111;
   co_invalid_budget      constant pls_integer := -20112;
   co_invalid_question    constant pls_integer := -20113;
   co_invalid_manifest    constant pls_integer := -20114;
   co_not_in_window       constant pls_integer := -20115;
   co_source_unavailable  constant pls_integer := -20116;
   co_invalid_claim       constant pls_integer := -20118;
   co_scope_not_allowed   constant pls_integer := -20119;

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

   co_msg_tenant_not_set      constant varchar2(200) := 'no tenant is set in this transaction';
   co_msg_invalid_memory_type constant varchar2(200) := 'not a memory type';
   co_msg_invalid_field       constant varchar2(200) := 'a field is missing, of the wrong type, out of range or unknown';
   co_msg_duplicate_memory    constant varchar2(200) := 'the id already exists for the tenant';
   co_msg_memory_not_found    constant varchar2(200) := 'no active version of the id';
   co_msg_invalid_snapshot    constant varchar2(200) := 'the snapshot does not parse';
   co_msg_invalid_argument    constant varchar2(200) := 'a NULL or malformed argument';
   co_msg_unknown_intent      constant varchar2(200) := 'the intent is not one of the budget''s shares';
   co_msg_budget_missing      constant varchar2(200) := 'no context_budget guideline is in effect';
   co_msg_invalid_budget      constant varchar2(200) := 'the budget is malformed';
   co_msg_invalid_question    constant varchar2(200) := 'the question is empty or too long';
   co_msg_invalid_manifest    constant varchar2(200) := 'the manifest is malformed';
   co_msg_not_in_window       constant varchar2(200) := 'the memory id was not issued in the manifest';
   co_msg_source_unavailable  constant varchar2(200) := 'the source row version is no longer available';
   co_msg_invalid_claim       constant varchar2(200) := 'the tenant claim was refused';
   co_msg_scope_not_allowed   constant varchar2(200) := 'the scope is not the one the session''s claim names';

   /**
    * The symbolic name of an error number (co_invalid_claim gives 'invalid_claim'); NULL for a number
    * that is not ours. Reads and writes nothing.
    */
   function error_name(in_code in pls_integer) return varchar2 deterministic;

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
