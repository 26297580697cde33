--liquibase formatted sql logicalFilePath:db/security/oracle/0030_grants.sql

-- CTXASM_APP (created by the DBA, owns nothing) gets exactly what docs/contract.md lists: EXECUTE on
-- CTX_SESSION, CTX_MEMORY, CTX_ASSEMBLY and CTX_TOOLS, and nothing on any table (every read goes through those
-- packages: a SELECT grant would let it see the tables' optimizer statistics, ALL_TAB_COL_STATISTICS and its
-- histograms, which hold every tenant's values). Nothing on CTX_TENANT, CTX_HMAC_KEY, CTX_ADMIN, CTX_POLICY
-- or the internal packages (CTX_ERRORS, CTX_RULES, CTX_RETRIEVAL, CTX_SOURCES, CTX_BUDGET, CTX_SELECTION, CTX_JSON,
-- CTX_ROW_BINDER, CTX_MANIFEST_STORE), which only the owner's packages call (CTX_RETRIEVAL, CTX_SOURCES and
-- CTX_BUDGET read the tenant they are given), nor on the types ctx_selection_candidate(s), which only CTX_SOURCES
-- and CTX_SELECTION use.
-- The first changeset below granted SELECT before that rule; the last one takes it back. CTX_MEMORY.rows_as_of,
-- CTX_ASSEMBLY.select_window and CTX_TOOLS.search_memory read AS OF SCN as the owner (definer's rights), so the app needs no FLASHBACK
-- privilege, and nothing on the Oracle Text or vector indexes or the embedding model either.

--changeset ctxasm:ora-sec-0030-01-app-select dbms:oracle
--comment: SELECT on every memory table (VPD filters it to the session's tenant)
grant select on guideline_memory to ctxasm_app;
grant select on persona_memory to ctxasm_app;
grant select on toolbox_memory to ctxasm_app;
grant select on entity_memory to ctxasm_app;
grant select on workflow_memory to ctxasm_app;
grant select on knowledge_base_document to ctxasm_app;
grant select on knowledge_base_chunk to ctxasm_app;
grant select on conversation_memory to ctxasm_app;
grant select on summarization_memory to ctxasm_app;
grant select on context_compression to ctxasm_app;
grant select on context_source_ref to ctxasm_app;
--rollback revoke select on guideline_memory from ctxasm_app; revoke select on persona_memory from ctxasm_app; revoke select on toolbox_memory from ctxasm_app; revoke select on entity_memory from ctxasm_app; revoke select on workflow_memory from ctxasm_app; revoke select on knowledge_base_document from ctxasm_app; revoke select on knowledge_base_chunk from ctxasm_app; revoke select on conversation_memory from ctxasm_app; revoke select on summarization_memory from ctxasm_app; revoke select on context_compression from ctxasm_app; revoke select on context_source_ref from ctxasm_app;

--changeset ctxasm:ora-sec-0030-02-app-execute dbms:oracle
--comment: EXECUTE on the two packages the application calls
grant execute on ctx_session to ctxasm_app;
grant execute on ctx_memory to ctxasm_app;
--rollback revoke execute on ctx_session from ctxasm_app; revoke execute on ctx_memory from ctxasm_app;

--changeset ctxasm:ora-sec-0030-03-app-execute-assembly dbms:oracle
--comment: EXECUTE on CTX_ASSEMBLY, the assembler's package (select_window, record_manifest)
grant execute on ctx_assembly to ctxasm_app;
--rollback revoke execute on ctx_assembly from ctxasm_app;

--changeset ctxasm:ora-sec-0030-04-app-execute-tools dbms:oracle
--comment: EXECUTE on CTX_TOOLS, the database half of the MCP tools
grant execute on ctx_tools to ctxasm_app;
--rollback revoke execute on ctx_tools from ctxasm_app;

--changeset ctxasm:ora-sec-0030-05-app-no-table-access dbms:oracle
--comment: no table privilege at all: reads go through the packages (definer's rights), so the application user
--comment: sees no row, no plan and no optimizer statistic of any memory table
revoke select on guideline_memory from ctxasm_app;
revoke select on persona_memory from ctxasm_app;
revoke select on toolbox_memory from ctxasm_app;
revoke select on entity_memory from ctxasm_app;
revoke select on workflow_memory from ctxasm_app;
revoke select on knowledge_base_document from ctxasm_app;
revoke select on knowledge_base_chunk from ctxasm_app;
revoke select on conversation_memory from ctxasm_app;
revoke select on summarization_memory from ctxasm_app;
revoke select on context_compression from ctxasm_app;
revoke select on context_source_ref from ctxasm_app;
--rollback grant select on guideline_memory to ctxasm_app; grant select on persona_memory to ctxasm_app; grant select on toolbox_memory to ctxasm_app; grant select on entity_memory to ctxasm_app; grant select on workflow_memory to ctxasm_app; grant select on knowledge_base_document to ctxasm_app; grant select on knowledge_base_chunk to ctxasm_app; grant select on conversation_memory to ctxasm_app; grant select on summarization_memory to ctxasm_app; grant select on context_compression to ctxasm_app; grant select on context_source_ref to ctxasm_app;
