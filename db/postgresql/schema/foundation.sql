--liquibase formatted sql logicalFilePath:db/schema/postgresql/0010_foundation.sql

--changeset ctxasm:pg-0010-schemas dbms:postgresql
--comment: one schema for the tables, one per package (the PL/pgSQL twin of an Oracle package)
CREATE SCHEMA ctxasm;
CREATE SCHEMA ctx_session;
CREATE SCHEMA ctx_admin;
CREATE SCHEMA ctx_memory;
--rollback DROP SCHEMA ctx_memory CASCADE; DROP SCHEMA ctx_admin CASCADE; DROP SCHEMA ctx_session CASCADE; DROP SCHEMA ctxasm CASCADE;

--changeset ctxasm:pg-0010-no-public-execute dbms:postgresql
--comment: functions are executable by PUBLIC by default; ours are granted one by one in db/security/
ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
--rollback ALTER DEFAULT PRIVILEGES GRANT EXECUTE ON FUNCTIONS TO PUBLIC;

--changeset ctxasm:pg-0010-tenant dbms:postgresql
--comment: the tenant registry; no RLS and no grant to the app: only ctx_admin and ctx_session read it
CREATE TABLE ctxasm.ctx_tenant (
    tenant_id    varchar(64)  PRIMARY KEY CHECK (tenant_id ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    display_name varchar(256) NOT NULL,
    created_at   timestamptz  NOT NULL DEFAULT now()
);
--rollback DROP TABLE ctxasm.ctx_tenant;

--changeset ctxasm:pg-0010-secret dbms:postgresql
--comment: the key that signs the session tenant; readable only by the owner (SECURITY DEFINER functions)
CREATE TABLE ctxasm.ctx_session_key (
    singleton boolean PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    key_text  text    NOT NULL
);
INSERT INTO ctxasm.ctx_session_key (key_text)
VALUES (gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text);
--rollback DROP TABLE ctxasm.ctx_session_key;

--changeset ctxasm:pg-0010-memory-common dbms:postgresql
--comment: the columns every memory row carries (docs/contract.md); a template for LIKE, never written to
CREATE TABLE ctxasm.memory_common (
    tenant_id    varchar(64)  NOT NULL,
    id           varchar(128) NOT NULL CHECK (id <> ''),
    version      integer      NOT NULL DEFAULT 1 CHECK (version >= 1),
    user_id      varchar(64),
    agent_id     varchar(64),
    thread_id    varchar(64),
    status       varchar(16)  NOT NULL DEFAULT 'active'
                 CHECK (status IN ('active', 'superseded', 'deleted')),
    valid_from   timestamptz  NOT NULL DEFAULT now(),
    valid_until  timestamptz,
    deleted_at   timestamptz,
    content      text         NOT NULL,
    content_json jsonb,
    source_refs  jsonb        NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(source_refs) = 'array'),
    created_at   timestamptz  NOT NULL DEFAULT now(),
    created_xid  xid8         NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT memory_common_valid_until_check CHECK (valid_until IS NULL OR valid_until >= valid_from)
);
REVOKE ALL ON ctxasm.memory_common FROM PUBLIC;
--rollback DROP TABLE ctxasm.memory_common;
