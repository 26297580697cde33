--liquibase formatted sql logicalFilePath:db/postgresql/internal/ctxasm_errors.sql
-- generated from contract/errors.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)

--changeset ctxasm:pg-errors-error-code dbms:postgresql runOnChange:true splitStatements:false
--comment: the SQLSTATE of a contract error by its name (docs/contract.md, "Errors"), for RAISE ... USING
--comment: ERRCODE = ctxasm.error_code('invalid_field'): the twin of Oracle's CTX_ERRORS.co_<name>. A name
--comment: that is not in the catalogue is a bug of the caller, refused loudly.
CREATE OR REPLACE FUNCTION ctxasm.error_code(in_name varchar) RETURNS varchar
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_code varchar := CASE in_name
        WHEN 'tenant_not_set'        THEN 'CX102'
        WHEN 'invalid_memory_type'   THEN 'CX103'
        WHEN 'invalid_field'         THEN 'CX104'
        WHEN 'duplicate_memory'      THEN 'CX105'
        WHEN 'memory_not_found'      THEN 'CX106'
        WHEN 'invalid_snapshot'      THEN 'CX107'
        WHEN 'invalid_argument'      THEN 'CX108'
        WHEN 'unknown_intent'        THEN 'CX110'
        WHEN 'budget_missing'        THEN 'CX111'
        WHEN 'invalid_budget'        THEN 'CX112'
        WHEN 'invalid_question'      THEN 'CX113'
        WHEN 'invalid_manifest'      THEN 'CX114'
        WHEN 'not_in_window'         THEN 'CX115'
        WHEN 'source_unavailable'    THEN 'CX116'
        WHEN 'invalid_claim'         THEN 'CX118'
        WHEN 'scope_not_allowed'     THEN 'CX119'
        WHEN 'session_limits_lifted' THEN 'CX120'
    END;
BEGIN
    IF l_code IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('ctxasm.error_code: %s is not a contract error name', quote_nullable(in_name));
    END IF;
    RETURN l_code;
END;
$$;
--rollback DROP FUNCTION ctxasm.error_code(varchar);

--changeset ctxasm:pg-errors-error-message dbms:postgresql runOnChange:true splitStatements:false
--comment: what a contract error says without a detail, for a raise site that has no more to say
--comment: (Oracle: CTX_ERRORS.error_message); NULL for a name that is not in the catalogue
CREATE OR REPLACE FUNCTION ctxasm.error_message(in_name varchar) RETURNS varchar
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE in_name
        WHEN 'tenant_not_set'        THEN 'no tenant is set in this transaction'
        WHEN 'invalid_memory_type'   THEN 'not a memory type'
        WHEN 'invalid_field'         THEN 'a field is missing, of the wrong type, out of range or unknown'
        WHEN 'duplicate_memory'      THEN 'the id already exists for the tenant'
        WHEN 'memory_not_found'      THEN 'no active version of the id'
        WHEN 'invalid_snapshot'      THEN 'the snapshot does not parse'
        WHEN 'invalid_argument'      THEN 'a NULL or malformed argument'
        WHEN 'unknown_intent'        THEN 'the intent is not one of the budget''s shares'
        WHEN 'budget_missing'        THEN 'no context_budget guideline is in effect'
        WHEN 'invalid_budget'        THEN 'the budget is malformed'
        WHEN 'invalid_question'      THEN 'the question is empty or too long'
        WHEN 'invalid_manifest'      THEN 'the manifest is malformed'
        WHEN 'not_in_window'         THEN 'the memory id was not issued in the manifest'
        WHEN 'source_unavailable'    THEN 'the source row version is no longer available'
        WHEN 'invalid_claim'         THEN 'the tenant claim was refused'
        WHEN 'scope_not_allowed'     THEN 'the scope is not the one the session''s claim names'
        WHEN 'session_limits_lifted' THEN 'the session lifted a limit the deployment set'
    END
$$;
--rollback DROP FUNCTION ctxasm.error_message(varchar);
