--liquibase formatted sql

-- The candidate rows of one window, in the order CTX_SOURCES read them (row_no = position); what each step of
-- CTX_SELECTION takes and returns, read in SQL with TABLE(). Needs ctx_selection_candidate.

--changeset ctxasm:ora-type-ctx-selection-candidates dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace type ctx_selection_candidates force as table of ctx_selection_candidate
/
--rollback drop type ctx_selection_candidates force;
