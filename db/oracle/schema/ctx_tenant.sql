--liquibase formatted sql logicalFilePath:db/schema/oracle/0010_ctx_tenant.sql

--changeset ctxasm:ora-0010-01-ctx-tenant dbms:oracle
--comment: the tenant registry; no VPD policy and no grant to CTXASM_APP: only CTX_ADMIN and CTX_SESSION read it
create table ctx_tenant (
   tenant_id     varchar2(64)  not null,
   display_name  varchar2(256) not null,
   created_at    timestamp with time zone default systimestamp not null,
   constraint ctx_tenant_pk primary key (tenant_id),
   constraint ctx_tenant_tenant_id_ck check (regexp_like(tenant_id, '^[a-z0-9][a-z0-9_-]{0,63}$', 'c'))
);
--rollback drop table ctx_tenant purge;
