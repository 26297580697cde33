--liquibase formatted sql logicalFilePath:db/security/postgresql/0020_grants.sql

--changeset ctxasm:pg-sec-0020-app-grants dbms:postgresql runAlways:true splitStatements:false
--comment: the application role reads and writes only through the contract routines (ctx_session, ctx_memory,
--comment: ctx_assembly, ctx_tools): no privilege on any table, view or internal function, not even USAGE on the
--comment: schema ctxasm, so it cannot read rows, plan a query over them (EXPLAIN: statistics of every tenant's
--comment: text) or call a helper. Re-run on every deployment so routines added later are granted (and grants
--comment: of earlier deployments revoked).
DO $$
BEGIN
    EXECUTE 'REVOKE ALL ON ALL TABLES IN SCHEMA ctxasm FROM ctxasm_app, PUBLIC';
    EXECUTE 'REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ctxasm FROM ctxasm_app, PUBLIC';
    EXECUTE 'REVOKE ALL ON SCHEMA ctxasm, ctx_admin FROM ctxasm_app, PUBLIC';
    EXECUTE 'REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ctx_session, ctx_memory, ctx_assembly, ctx_tools, ctx_admin '
            'FROM PUBLIC';
    EXECUTE 'GRANT USAGE ON SCHEMA ctx_session, ctx_memory, ctx_assembly, ctx_tools TO ctxasm_app';
    EXECUTE 'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ctx_session, ctx_memory, ctx_assembly, ctx_tools TO ctxasm_app';
END;
$$;
--rollback REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ctx_session, ctx_memory, ctx_assembly, ctx_tools FROM ctxasm_app; REVOKE USAGE ON SCHEMA ctx_session, ctx_memory, ctx_assembly, ctx_tools FROM ctxasm_app;
