--liquibase formatted sql logicalFilePath:db/schema/postgresql/0020_memory_tables.sql
-- Every memory table is LIST-partitioned by tenant: ctx_admin.register_tenant adds one partition per tenant
-- (ctxasm.add_tenant_partitions), so each tenant's rows, indexes (btree, GIN, HNSW) and planner statistics
-- are its own. A small tenant's reads never walk a large neighbour's index, and a filtered vector search
-- inside a tenant's partition returns its full k.

--changeset ctxasm:pg-0020-01-guideline-memory dbms:postgresql
--comment: guideline rules, budgets and policies
CREATE TABLE ctxasm.guideline_memory (
    LIKE ctxasm.memory_common INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    guideline_key    varchar(128) NOT NULL,
    CONSTRAINT guideline_memory_pk PRIMARY KEY (tenant_id, id, version)
) PARTITION BY LIST (tenant_id);
CREATE UNIQUE INDEX guideline_memory_one_active
    ON ctxasm.guideline_memory (tenant_id, id) WHERE status = 'active';
--rollback DROP TABLE ctxasm.guideline_memory;

--changeset ctxasm:pg-0020-02-persona-memory dbms:postgresql
--comment: the agent's persona
CREATE TABLE ctxasm.persona_memory (
    LIKE ctxasm.memory_common INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    persona_key      varchar(128) NOT NULL,
    CONSTRAINT persona_memory_pk PRIMARY KEY (tenant_id, id, version)
) PARTITION BY LIST (tenant_id);
CREATE UNIQUE INDEX persona_memory_one_active
    ON ctxasm.persona_memory (tenant_id, id) WHERE status = 'active';
--rollback DROP TABLE ctxasm.persona_memory;

--changeset ctxasm:pg-0020-03-toolbox-memory dbms:postgresql
--comment: tool definitions the MCP server advertises
CREATE TABLE ctxasm.toolbox_memory (
    LIKE ctxasm.memory_common INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    tool_name        varchar(128) NOT NULL,
    tool_schema      jsonb NOT NULL CHECK (jsonb_typeof(tool_schema) = 'object'),
    usage_notes      text NOT NULL,
    tool_handler     varchar(128) NOT NULL,
    access_policy    jsonb,
    CONSTRAINT toolbox_memory_pk PRIMARY KEY (tenant_id, id, version)
) PARTITION BY LIST (tenant_id);
CREATE UNIQUE INDEX toolbox_memory_one_active
    ON ctxasm.toolbox_memory (tenant_id, id) WHERE status = 'active';
--rollback DROP TABLE ctxasm.toolbox_memory;

--changeset ctxasm:pg-0020-04-entity-memory dbms:postgresql
--comment: canonical facts: subject, predicate, confidence
CREATE TABLE ctxasm.entity_memory (
    LIKE ctxasm.memory_common INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    subject          varchar(256) NOT NULL,
    predicate        varchar(256) NOT NULL,
    confidence       numeric(4,3) CHECK (confidence BETWEEN 0 AND 1),
    CONSTRAINT entity_memory_pk PRIMARY KEY (tenant_id, id, version)
) PARTITION BY LIST (tenant_id);
CREATE UNIQUE INDEX entity_memory_one_active
    ON ctxasm.entity_memory (tenant_id, id) WHERE status = 'active';
--rollback DROP TABLE ctxasm.entity_memory;

--changeset ctxasm:pg-0020-05-workflow-memory dbms:postgresql
--comment: procedures the agent follows
CREATE TABLE ctxasm.workflow_memory (
    LIKE ctxasm.memory_common INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    workflow_key     varchar(128) NOT NULL,
    CONSTRAINT workflow_memory_pk PRIMARY KEY (tenant_id, id, version)
) PARTITION BY LIST (tenant_id);
CREATE UNIQUE INDEX workflow_memory_one_active
    ON ctxasm.workflow_memory (tenant_id, id) WHERE status = 'active';
--rollback DROP TABLE ctxasm.workflow_memory;

--changeset ctxasm:pg-0020-06-knowledge-base-document dbms:postgresql
--comment: research documents
CREATE TABLE ctxasm.knowledge_base_document (
    LIKE ctxasm.memory_common INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    title            varchar(512) NOT NULL,
    collection       varchar(128),
    source_uri       varchar(1024),
    published_at     timestamptz,
    CONSTRAINT knowledge_base_document_pk PRIMARY KEY (tenant_id, id, version)
) PARTITION BY LIST (tenant_id);
CREATE UNIQUE INDEX knowledge_base_document_one_active
    ON ctxasm.knowledge_base_document (tenant_id, id) WHERE status = 'active';
--rollback DROP TABLE ctxasm.knowledge_base_document;

--changeset ctxasm:pg-0020-07-knowledge-base-chunk dbms:postgresql
--comment: retrievable chunks of documents
CREATE TABLE ctxasm.knowledge_base_chunk (
    LIKE ctxasm.memory_common INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    document_id      varchar(128) NOT NULL,
    document_version integer NOT NULL DEFAULT 1,
    chunk_index      integer NOT NULL CHECK (chunk_index >= 0),
    title            varchar(512),
    embedding        vector(384),
    CONSTRAINT knowledge_base_chunk_pk PRIMARY KEY (tenant_id, id, version)
) PARTITION BY LIST (tenant_id);
CREATE UNIQUE INDEX knowledge_base_chunk_one_active
    ON ctxasm.knowledge_base_chunk (tenant_id, id) WHERE status = 'active';
--rollback DROP TABLE ctxasm.knowledge_base_chunk;

--changeset ctxasm:pg-0020-08-conversation-memory dbms:postgresql
--comment: turns and events of threads (manifests too)
CREATE TABLE ctxasm.conversation_memory (
    LIKE ctxasm.memory_common INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    turn_index       integer,
    role             varchar(16) NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system', 'event')),
    event_type       varchar(64) NOT NULL DEFAULT 'message',
    CONSTRAINT conversation_memory_pk PRIMARY KEY (tenant_id, id, version)
) PARTITION BY LIST (tenant_id);
CREATE UNIQUE INDEX conversation_memory_one_active
    ON ctxasm.conversation_memory (tenant_id, id) WHERE status = 'active';
--rollback DROP TABLE ctxasm.conversation_memory;

--changeset ctxasm:pg-0020-09-summarization-memory dbms:postgresql
--comment: episode summaries
CREATE TABLE ctxasm.summarization_memory (
    LIKE ctxasm.memory_common INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    summary_key      varchar(128),
    period_start     timestamptz,
    period_end       timestamptz,
    CONSTRAINT summarization_memory_pk PRIMARY KEY (tenant_id, id, version)
) PARTITION BY LIST (tenant_id);
CREATE UNIQUE INDEX summarization_memory_one_active
    ON ctxasm.summarization_memory (tenant_id, id) WHERE status = 'active';
--rollback DROP TABLE ctxasm.summarization_memory;

--changeset ctxasm:pg-0020-10-context-compression dbms:postgresql
--comment: persisted compressions (the summary tier)
CREATE TABLE ctxasm.context_compression (
    LIKE ctxasm.memory_common INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    source_type      varchar(32) NOT NULL,
    source_id        varchar(128) NOT NULL,
    source_version   integer NOT NULL,
    source_hash      char(64) NOT NULL CHECK (source_hash ~ '^[0-9a-f]{64}$'),
    generating_model varchar(128) NOT NULL,
    prompt_version   varchar(64) NOT NULL,
    CONSTRAINT context_compression_pk PRIMARY KEY (tenant_id, id, version)
) PARTITION BY LIST (tenant_id);
CREATE UNIQUE INDEX context_compression_one_active
    ON ctxasm.context_compression (tenant_id, id) WHERE status = 'active';
--rollback DROP TABLE ctxasm.context_compression;

--changeset ctxasm:pg-0020-11-context-source-ref dbms:postgresql
--comment: provenance links from derived rows to their sources
CREATE TABLE ctxasm.context_source_ref (
    LIKE ctxasm.memory_common INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    derived_type     varchar(32) NOT NULL,
    derived_id       varchar(128) NOT NULL,
    derived_version  integer NOT NULL,
    source_type      varchar(32) NOT NULL,
    source_id        varchar(128) NOT NULL,
    source_version   integer NOT NULL,
    relation         varchar(32) NOT NULL,
    CONSTRAINT context_source_ref_pk PRIMARY KEY (tenant_id, id, version)
) PARTITION BY LIST (tenant_id);
CREATE UNIQUE INDEX context_source_ref_one_active
    ON ctxasm.context_source_ref (tenant_id, id) WHERE status = 'active';
--rollback DROP TABLE ctxasm.context_source_ref;
