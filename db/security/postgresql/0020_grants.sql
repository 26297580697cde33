--liquibase formatted sql

--changeset ctxasm:pg-sec-0020-app-grants dbms:postgresql runAlways:true splitStatements:false
--comment: the application role reads memory (RLS-filtered) and writes only through ctx_memory;
--comment: re-run on every deployment so functions added later are granted too
DO $$
DECLARE
    l_table text;
BEGIN
    EXECUTE 'GRANT USAGE ON SCHEMA ctxasm, ctx_session, ctx_memory, ctx_assembly, ctx_tools TO ctxasm_app';
    EXECUTE 'REVOKE ALL ON SCHEMA ctx_admin FROM PUBLIC';
    EXECUTE 'GRANT SELECT ON ctxasm.memory_type, ctxasm.memory_row, ctxasm.memory_row_history TO ctxasm_app';
    EXECUTE 'GRANT EXECUTE ON FUNCTION ctxasm.memory_rows(pg_snapshot), ctxasm.compressions(pg_snapshot) TO ctxasm_app';
    FOR l_table IN
        SELECT name FROM ctxasm.memory_type m, LATERAL (VALUES (m.table_name), (m.table_name || '_history')) AS t(name)
    LOOP
        EXECUTE format('GRANT SELECT ON ctxasm.%I TO ctxasm_app', l_table);
    END LOOP;
    EXECUTE 'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ctx_session, ctx_memory, ctx_assembly, ctx_tools TO ctxasm_app';
END;
$$;
--rollback REVOKE ALL ON ALL TABLES IN SCHEMA ctxasm FROM ctxasm_app; REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ctx_session, ctx_memory FROM ctxasm_app; REVOKE USAGE ON SCHEMA ctxasm, ctx_session, ctx_memory FROM ctxasm_app;
