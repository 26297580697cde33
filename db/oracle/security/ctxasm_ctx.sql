--liquibase formatted sql logicalFilePath:db/security/oracle/0010_ctxasm_ctx.sql

--changeset ctxasm:ora-sec-0010-ctxasm-ctx dbms:oracle runOnChange:true
--comment: the application context every VPD predicate reads; only CTX_SESSION can set it (needs CREATE ANY CONTEXT)
create or replace context ctxasm_ctx using ctx_session;
--rollback drop context ctxasm_ctx;
