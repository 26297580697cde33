--liquibase formatted sql logicalFilePath:db/schema/oracle/0020_memory_tables.sql

-- The memory tables of docs/contract.md: the common columns, then the type's own.
-- varchar2(n) carries no BYTE/CHAR qualifier: the deployment sets NLS_LENGTH_SEMANTICS=CHAR
-- (docs/oracle-gates.md). No created_xid: Flashback Query (AS OF SCN) replaces it on Oracle.
-- Each table has a unique function-based index that allows one active version per (tenant_id, id):
-- rows that are not active have both keys NULL and are not indexed.

--changeset ctxasm:ora-0020-01a-guideline-memory dbms:oracle
--comment: guideline rules, budgets and policies
create table guideline_memory (
   tenant_id      varchar2(64) not null,
   id             varchar2(128) not null,
   version        number(10) default 1 not null,
   user_id        varchar2(64),
   agent_id       varchar2(64),
   thread_id      varchar2(64),
   status         varchar2(16) default 'active' not null,
   valid_from     timestamp with time zone default systimestamp not null,
   valid_until    timestamp with time zone,
   deleted_at     timestamp with time zone,
   content        clob not null,
   content_json   json,
   source_refs    json default json('[]') not null,
   created_at     timestamp with time zone default systimestamp not null,
   guideline_key  varchar2(128) not null,
   constraint guideline_memory_pk primary key (tenant_id, id, version),
   constraint guideline_memory_version_ck check (version >= 1),
   constraint guideline_memory_status_ck check (status in ('active', 'superseded', 'deleted', 'erased')),
   constraint guideline_memory_valid_until_ck check (valid_until is null or valid_until >= valid_from)
);
--rollback drop table guideline_memory purge;

--changeset ctxasm:ora-0020-01b-guideline-memory-one-active dbms:oracle
--comment: at most one active version per (tenant_id, id) in guideline_memory
create unique index guideline_memory_active_ux on guideline_memory (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index guideline_memory_active_ux;

--changeset ctxasm:ora-0020-02a-persona-memory dbms:oracle
--comment: the agent's persona
create table persona_memory (
   tenant_id     varchar2(64) not null,
   id            varchar2(128) not null,
   version       number(10) default 1 not null,
   user_id       varchar2(64),
   agent_id      varchar2(64),
   thread_id     varchar2(64),
   status        varchar2(16) default 'active' not null,
   valid_from    timestamp with time zone default systimestamp not null,
   valid_until   timestamp with time zone,
   deleted_at    timestamp with time zone,
   content       clob not null,
   content_json  json,
   source_refs   json default json('[]') not null,
   created_at    timestamp with time zone default systimestamp not null,
   persona_key   varchar2(128) not null,
   constraint persona_memory_pk primary key (tenant_id, id, version),
   constraint persona_memory_version_ck check (version >= 1),
   constraint persona_memory_status_ck check (status in ('active', 'superseded', 'deleted', 'erased')),
   constraint persona_memory_valid_until_ck check (valid_until is null or valid_until >= valid_from)
);
--rollback drop table persona_memory purge;

--changeset ctxasm:ora-0020-02b-persona-memory-one-active dbms:oracle
--comment: at most one active version per (tenant_id, id) in persona_memory
create unique index persona_memory_active_ux on persona_memory (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index persona_memory_active_ux;

--changeset ctxasm:ora-0020-03a-toolbox-memory dbms:oracle
--comment: tool definitions the MCP server advertises
create table toolbox_memory (
   tenant_id      varchar2(64) not null,
   id             varchar2(128) not null,
   version        number(10) default 1 not null,
   user_id        varchar2(64),
   agent_id       varchar2(64),
   thread_id      varchar2(64),
   status         varchar2(16) default 'active' not null,
   valid_from     timestamp with time zone default systimestamp not null,
   valid_until    timestamp with time zone,
   deleted_at     timestamp with time zone,
   content        clob not null,
   content_json   json,
   source_refs    json default json('[]') not null,
   created_at     timestamp with time zone default systimestamp not null,
   tool_name      varchar2(128) not null,
   tool_schema    json not null,
   usage_notes    clob not null,
   tool_handler   varchar2(128) not null,
   access_policy  json,
   constraint toolbox_memory_pk primary key (tenant_id, id, version),
   constraint toolbox_memory_version_ck check (version >= 1),
   constraint toolbox_memory_status_ck check (status in ('active', 'superseded', 'deleted', 'erased')),
   constraint toolbox_memory_valid_until_ck check (valid_until is null or valid_until >= valid_from)
);
--rollback drop table toolbox_memory purge;

--changeset ctxasm:ora-0020-03b-toolbox-memory-one-active dbms:oracle
--comment: at most one active version per (tenant_id, id) in toolbox_memory
create unique index toolbox_memory_active_ux on toolbox_memory (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index toolbox_memory_active_ux;

--changeset ctxasm:ora-0020-04a-entity-memory dbms:oracle
--comment: canonical facts: subject, predicate, confidence
create table entity_memory (
   tenant_id     varchar2(64) not null,
   id            varchar2(128) not null,
   version       number(10) default 1 not null,
   user_id       varchar2(64),
   agent_id      varchar2(64),
   thread_id     varchar2(64),
   status        varchar2(16) default 'active' not null,
   valid_from    timestamp with time zone default systimestamp not null,
   valid_until   timestamp with time zone,
   deleted_at    timestamp with time zone,
   content       clob not null,
   content_json  json,
   source_refs   json default json('[]') not null,
   created_at    timestamp with time zone default systimestamp not null,
   subject       varchar2(256) not null,
   predicate     varchar2(256) not null,
   confidence    number(4,3),
   constraint entity_memory_pk primary key (tenant_id, id, version),
   constraint entity_memory_version_ck check (version >= 1),
   constraint entity_memory_status_ck check (status in ('active', 'superseded', 'deleted', 'erased')),
   constraint entity_memory_valid_until_ck check (valid_until is null or valid_until >= valid_from),
   constraint entity_memory_confidence_ck check (confidence between 0 and 1)
);
--rollback drop table entity_memory purge;

--changeset ctxasm:ora-0020-04b-entity-memory-one-active dbms:oracle
--comment: at most one active version per (tenant_id, id) in entity_memory
create unique index entity_memory_active_ux on entity_memory (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index entity_memory_active_ux;

--changeset ctxasm:ora-0020-05a-workflow-memory dbms:oracle
--comment: procedures the agent follows
create table workflow_memory (
   tenant_id     varchar2(64) not null,
   id            varchar2(128) not null,
   version       number(10) default 1 not null,
   user_id       varchar2(64),
   agent_id      varchar2(64),
   thread_id     varchar2(64),
   status        varchar2(16) default 'active' not null,
   valid_from    timestamp with time zone default systimestamp not null,
   valid_until   timestamp with time zone,
   deleted_at    timestamp with time zone,
   content       clob not null,
   content_json  json,
   source_refs   json default json('[]') not null,
   created_at    timestamp with time zone default systimestamp not null,
   workflow_key  varchar2(128) not null,
   constraint workflow_memory_pk primary key (tenant_id, id, version),
   constraint workflow_memory_version_ck check (version >= 1),
   constraint workflow_memory_status_ck check (status in ('active', 'superseded', 'deleted', 'erased')),
   constraint workflow_memory_valid_until_ck check (valid_until is null or valid_until >= valid_from)
);
--rollback drop table workflow_memory purge;

--changeset ctxasm:ora-0020-05b-workflow-memory-one-active dbms:oracle
--comment: at most one active version per (tenant_id, id) in workflow_memory
create unique index workflow_memory_active_ux on workflow_memory (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index workflow_memory_active_ux;

--changeset ctxasm:ora-0020-06a-knowledge-base-document dbms:oracle
--comment: research documents
create table knowledge_base_document (
   tenant_id     varchar2(64) not null,
   id            varchar2(128) not null,
   version       number(10) default 1 not null,
   user_id       varchar2(64),
   agent_id      varchar2(64),
   thread_id     varchar2(64),
   status        varchar2(16) default 'active' not null,
   valid_from    timestamp with time zone default systimestamp not null,
   valid_until   timestamp with time zone,
   deleted_at    timestamp with time zone,
   content       clob not null,
   content_json  json,
   source_refs   json default json('[]') not null,
   created_at    timestamp with time zone default systimestamp not null,
   title         varchar2(512) not null,
   collection    varchar2(128),
   source_uri    varchar2(1024),
   published_at  timestamp with time zone,
   constraint knowledge_base_document_pk primary key (tenant_id, id, version),
   constraint knowledge_base_document_version_ck check (version >= 1),
   constraint knowledge_base_document_status_ck check (status in ('active', 'superseded', 'deleted', 'erased')),
   constraint knowledge_base_document_valid_until_ck check (valid_until is null or valid_until >= valid_from)
);
--rollback drop table knowledge_base_document purge;

--changeset ctxasm:ora-0020-06b-knowledge-base-document-one-active dbms:oracle
--comment: at most one active version per (tenant_id, id) in knowledge_base_document
create unique index knowledge_base_document_active_ux on knowledge_base_document (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index knowledge_base_document_active_ux;

--changeset ctxasm:ora-0020-07a-knowledge-base-chunk dbms:oracle
--comment: retrievable chunks of documents
create table knowledge_base_chunk (
   tenant_id         varchar2(64) not null,
   id                varchar2(128) not null,
   version           number(10) default 1 not null,
   user_id           varchar2(64),
   agent_id          varchar2(64),
   thread_id         varchar2(64),
   status            varchar2(16) default 'active' not null,
   valid_from        timestamp with time zone default systimestamp not null,
   valid_until       timestamp with time zone,
   deleted_at        timestamp with time zone,
   content           clob not null,
   content_json      json,
   source_refs       json default json('[]') not null,
   created_at        timestamp with time zone default systimestamp not null,
   document_id       varchar2(128) not null,
   document_version  number(10) default 1 not null,
   chunk_index       number(10) not null,
   title             varchar2(512),
   embedding         vector(384, float32),
   constraint knowledge_base_chunk_pk primary key (tenant_id, id, version),
   constraint knowledge_base_chunk_version_ck check (version >= 1),
   constraint knowledge_base_chunk_status_ck check (status in ('active', 'superseded', 'deleted', 'erased')),
   constraint knowledge_base_chunk_valid_until_ck check (valid_until is null or valid_until >= valid_from),
   constraint knowledge_base_chunk_chunk_index_ck check (chunk_index >= 0)
);
--rollback drop table knowledge_base_chunk purge;

--changeset ctxasm:ora-0020-07b-knowledge-base-chunk-one-active dbms:oracle
--comment: at most one active version per (tenant_id, id) in knowledge_base_chunk
create unique index knowledge_base_chunk_active_ux on knowledge_base_chunk (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index knowledge_base_chunk_active_ux;

--changeset ctxasm:ora-0020-08a-conversation-memory dbms:oracle
--comment: turns and events of threads (manifests too)
create table conversation_memory (
   tenant_id     varchar2(64) not null,
   id            varchar2(128) not null,
   version       number(10) default 1 not null,
   user_id       varchar2(64),
   agent_id      varchar2(64),
   thread_id     varchar2(64),
   status        varchar2(16) default 'active' not null,
   valid_from    timestamp with time zone default systimestamp not null,
   valid_until   timestamp with time zone,
   deleted_at    timestamp with time zone,
   content       clob not null,
   content_json  json,
   source_refs   json default json('[]') not null,
   created_at    timestamp with time zone default systimestamp not null,
   turn_index    number(10),
   role          varchar2(16) not null,
   event_type    varchar2(64) default 'message' not null,
   constraint conversation_memory_pk primary key (tenant_id, id, version),
   constraint conversation_memory_version_ck check (version >= 1),
   constraint conversation_memory_status_ck check (status in ('active', 'superseded', 'deleted', 'erased')),
   constraint conversation_memory_valid_until_ck check (valid_until is null or valid_until >= valid_from),
   constraint conversation_memory_role_ck check (role in ('user', 'assistant', 'tool', 'system', 'event'))
);
--rollback drop table conversation_memory purge;

--changeset ctxasm:ora-0020-08b-conversation-memory-one-active dbms:oracle
--comment: at most one active version per (tenant_id, id) in conversation_memory
create unique index conversation_memory_active_ux on conversation_memory (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index conversation_memory_active_ux;

--changeset ctxasm:ora-0020-09a-summarization-memory dbms:oracle
--comment: episode summaries
create table summarization_memory (
   tenant_id     varchar2(64) not null,
   id            varchar2(128) not null,
   version       number(10) default 1 not null,
   user_id       varchar2(64),
   agent_id      varchar2(64),
   thread_id     varchar2(64),
   status        varchar2(16) default 'active' not null,
   valid_from    timestamp with time zone default systimestamp not null,
   valid_until   timestamp with time zone,
   deleted_at    timestamp with time zone,
   content       clob not null,
   content_json  json,
   source_refs   json default json('[]') not null,
   created_at    timestamp with time zone default systimestamp not null,
   summary_key   varchar2(128),
   period_start  timestamp with time zone,
   period_end    timestamp with time zone,
   constraint summarization_memory_pk primary key (tenant_id, id, version),
   constraint summarization_memory_version_ck check (version >= 1),
   constraint summarization_memory_status_ck check (status in ('active', 'superseded', 'deleted', 'erased')),
   constraint summarization_memory_valid_until_ck check (valid_until is null or valid_until >= valid_from)
);
--rollback drop table summarization_memory purge;

--changeset ctxasm:ora-0020-09b-summarization-memory-one-active dbms:oracle
--comment: at most one active version per (tenant_id, id) in summarization_memory
create unique index summarization_memory_active_ux on summarization_memory (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index summarization_memory_active_ux;

--changeset ctxasm:ora-0020-10a-context-compression dbms:oracle
--comment: persisted compressions (the summary tier)
create table context_compression (
   tenant_id         varchar2(64) not null,
   id                varchar2(128) not null,
   version           number(10) default 1 not null,
   user_id           varchar2(64),
   agent_id          varchar2(64),
   thread_id         varchar2(64),
   status            varchar2(16) default 'active' not null,
   valid_from        timestamp with time zone default systimestamp not null,
   valid_until       timestamp with time zone,
   deleted_at        timestamp with time zone,
   content           clob not null,
   content_json      json,
   source_refs       json default json('[]') not null,
   created_at        timestamp with time zone default systimestamp not null,
   source_type       varchar2(32) not null,
   source_id         varchar2(128) not null,
   source_version    number(10) not null,
   source_hash       varchar2(64) not null,
   generating_model  varchar2(128) not null,
   prompt_version    varchar2(64) not null,
   constraint context_compression_pk primary key (tenant_id, id, version),
   constraint context_compression_version_ck check (version >= 1),
   constraint context_compression_status_ck check (status in ('active', 'superseded', 'deleted', 'erased')),
   constraint context_compression_valid_until_ck check (valid_until is null or valid_until >= valid_from),
   constraint context_compression_source_hash_ck check (regexp_like(source_hash, '^[0-9a-f]{64}$', 'c'))
);
--rollback drop table context_compression purge;

--changeset ctxasm:ora-0020-10b-context-compression-one-active dbms:oracle
--comment: at most one active version per (tenant_id, id) in context_compression
create unique index context_compression_active_ux on context_compression (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index context_compression_active_ux;

--changeset ctxasm:ora-0020-11a-context-source-ref dbms:oracle
--comment: provenance links from derived rows to their sources
create table context_source_ref (
   tenant_id        varchar2(64) not null,
   id               varchar2(128) not null,
   version          number(10) default 1 not null,
   user_id          varchar2(64),
   agent_id         varchar2(64),
   thread_id        varchar2(64),
   status           varchar2(16) default 'active' not null,
   valid_from       timestamp with time zone default systimestamp not null,
   valid_until      timestamp with time zone,
   deleted_at       timestamp with time zone,
   content          clob not null,
   content_json     json,
   source_refs      json default json('[]') not null,
   created_at       timestamp with time zone default systimestamp not null,
   derived_type     varchar2(32) not null,
   derived_id       varchar2(128) not null,
   derived_version  number(10) not null,
   source_type      varchar2(32) not null,
   source_id        varchar2(128) not null,
   source_version   number(10) not null,
   relation         varchar2(32) not null,
   constraint context_source_ref_pk primary key (tenant_id, id, version),
   constraint context_source_ref_version_ck check (version >= 1),
   constraint context_source_ref_status_ck check (status in ('active', 'superseded', 'deleted', 'erased')),
   constraint context_source_ref_valid_until_ck check (valid_until is null or valid_until >= valid_from)
);
--rollback drop table context_source_ref purge;

--changeset ctxasm:ora-0020-11b-context-source-ref-one-active dbms:oracle
--comment: at most one active version per (tenant_id, id) in context_source_ref
create unique index context_source_ref_active_ux on context_source_ref (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index context_source_ref_active_ux;

-- The tables with an Oracle Text index keep tenant_id in bytes. A FILTER BY column is stored in an SDATA section,
-- at most 249 bytes (DRG-11309): varchar2(64) under the deployment's NLS_LENGTH_SEMANTICS=CHAR is 256 bytes in
-- AL32UTF8, and the CONTEXT index would not be created (ORA-29855). A tenant id is ASCII (ctx_tenant's check
-- constraint), so 64 bytes hold every id a tenant can have. The one-active index reads tenant_id, so it is
-- dropped and created again around the change (ORA-30556 otherwise). docs/oracle.md, "Oracle readiness".

--changeset ctxasm:ora-0020-12-knowledge-base-chunk-tenant-in-bytes dbms:oracle
--comment: knowledge_base_chunk.tenant_id in bytes (at most 249 for its CONTEXT index's FILTER BY)
drop index knowledge_base_chunk_active_ux;
alter table knowledge_base_chunk modify (tenant_id varchar2(64 byte));
create unique index knowledge_base_chunk_active_ux on knowledge_base_chunk (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index knowledge_base_chunk_active_ux; alter table knowledge_base_chunk modify (tenant_id varchar2(64)); create unique index knowledge_base_chunk_active_ux on knowledge_base_chunk (case when status = 'active' then tenant_id end, case when status = 'active' then id end);

--changeset ctxasm:ora-0020-13-knowledge-base-document-tenant-in-bytes dbms:oracle
--comment: knowledge_base_document.tenant_id in bytes (at most 249 for its CONTEXT index's FILTER BY)
drop index knowledge_base_document_active_ux;
alter table knowledge_base_document modify (tenant_id varchar2(64 byte));
create unique index knowledge_base_document_active_ux on knowledge_base_document (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index knowledge_base_document_active_ux; alter table knowledge_base_document modify (tenant_id varchar2(64)); create unique index knowledge_base_document_active_ux on knowledge_base_document (case when status = 'active' then tenant_id end, case when status = 'active' then id end);

--changeset ctxasm:ora-0020-14-entity-memory-tenant-in-bytes dbms:oracle
--comment: entity_memory.tenant_id in bytes (at most 249 for its CONTEXT index's FILTER BY)
drop index entity_memory_active_ux;
alter table entity_memory modify (tenant_id varchar2(64 byte));
create unique index entity_memory_active_ux on entity_memory (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index entity_memory_active_ux; alter table entity_memory modify (tenant_id varchar2(64)); create unique index entity_memory_active_ux on entity_memory (case when status = 'active' then tenant_id end, case when status = 'active' then id end);

--changeset ctxasm:ora-0020-15-workflow-memory-tenant-in-bytes dbms:oracle
--comment: workflow_memory.tenant_id in bytes (at most 249 for its CONTEXT index's FILTER BY)
drop index workflow_memory_active_ux;
alter table workflow_memory modify (tenant_id varchar2(64 byte));
create unique index workflow_memory_active_ux on workflow_memory (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index workflow_memory_active_ux; alter table workflow_memory modify (tenant_id varchar2(64)); create unique index workflow_memory_active_ux on workflow_memory (case when status = 'active' then tenant_id end, case when status = 'active' then id end);

--changeset ctxasm:ora-0020-16-conversation-memory-tenant-in-bytes dbms:oracle
--comment: conversation_memory.tenant_id in bytes (at most 249 for its CONTEXT index's FILTER BY)
drop index conversation_memory_active_ux;
alter table conversation_memory modify (tenant_id varchar2(64 byte));
create unique index conversation_memory_active_ux on conversation_memory (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index conversation_memory_active_ux; alter table conversation_memory modify (tenant_id varchar2(64)); create unique index conversation_memory_active_ux on conversation_memory (case when status = 'active' then tenant_id end, case when status = 'active' then id end);

--changeset ctxasm:ora-0020-17-summarization-memory-tenant-in-bytes dbms:oracle
--comment: summarization_memory.tenant_id in bytes (at most 249 for its CONTEXT index's FILTER BY)
drop index summarization_memory_active_ux;
alter table summarization_memory modify (tenant_id varchar2(64 byte));
create unique index summarization_memory_active_ux on summarization_memory (
   case when status = 'active' then tenant_id end,
   case when status = 'active' then id end
);
--rollback drop index summarization_memory_active_ux; alter table summarization_memory modify (tenant_id varchar2(64)); create unique index summarization_memory_active_ux on summarization_memory (case when status = 'active' then tenant_id end, case when status = 'active' then id end);
