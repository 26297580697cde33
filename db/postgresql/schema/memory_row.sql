--liquibase formatted sql logicalFilePath:db/schema/postgresql/0090_memory_row.sql
-- generated from contract/memory_types.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)

--changeset ctxasm:pg-0090-memory-row-guideline dbms:postgresql runOnChange:true splitStatements:false
--comment: the guideline rows in the shape of ctxasm.memory_row. A read of one type goes here, not through the union
--comment: with a type filter: there the other branches' filters fold to a constant false, which the planner
--comment: cannot prune partitions with, so it would open and lock every tenant's partitions of eight tables.
--comment: The columns keep ctxasm.memory_row's order (sqlfluff ST06 would sort them).
CREATE OR REPLACE VIEW ctxasm.memory_row_guideline WITH (security_invoker = TRUE) AS
SELECT
    'guideline'::varchar AS memory_type,
    'guideline_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    guideline_key AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    NULL::jsonb AS extra,
    created_xid,
    content_tokens,
    NULL::vector AS embedding,
    NULL::tsvector AS search_text,
    NULL::char(32) AS text_key,
    NULL::text AS pointer_text
FROM ctxasm.guideline_memory;
--rollback DROP VIEW ctxasm.memory_row_guideline;

--changeset ctxasm:pg-0090-memory-row-persona dbms:postgresql runOnChange:true splitStatements:false
--comment: the persona rows in the shape of ctxasm.memory_row. A read of one type goes here, not through the union
--comment: with a type filter: there the other branches' filters fold to a constant false, which the planner
--comment: cannot prune partitions with, so it would open and lock every tenant's partitions of eight tables.
--comment: The columns keep ctxasm.memory_row's order (sqlfluff ST06 would sort them).
CREATE OR REPLACE VIEW ctxasm.memory_row_persona WITH (security_invoker = TRUE) AS
SELECT
    'persona'::varchar AS memory_type,
    'persona_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    persona_key AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    NULL::jsonb AS extra,
    created_xid,
    content_tokens,
    NULL::vector AS embedding,
    NULL::tsvector AS search_text,
    NULL::char(32) AS text_key,
    NULL::text AS pointer_text
FROM ctxasm.persona_memory;
--rollback DROP VIEW ctxasm.memory_row_persona;

--changeset ctxasm:pg-0090-memory-row-toolbox dbms:postgresql runOnChange:true splitStatements:false
--comment: the toolbox rows in the shape of ctxasm.memory_row. A read of one type goes here, not through the union
--comment: with a type filter: there the other branches' filters fold to a constant false, which the planner
--comment: cannot prune partitions with, so it would open and lock every tenant's partitions of eight tables.
--comment: The columns keep ctxasm.memory_row's order (sqlfluff ST06 would sort them).
CREATE OR REPLACE VIEW ctxasm.memory_row_toolbox WITH (security_invoker = TRUE) AS
SELECT  -- noqa: ST06
    'toolbox'::varchar AS memory_type,
    'toolbox_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    tool_name AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    jsonb_build_object(
        'tool_schema', tool_schema, 'usage_notes', usage_notes, 'tool_handler', tool_handler,
        'access_policy', access_policy
    ) AS extra,
    created_xid,
    content_tokens,
    NULL::vector AS embedding,
    NULL::tsvector AS search_text,
    NULL::char(32) AS text_key,
    NULL::text AS pointer_text
FROM ctxasm.toolbox_memory;
--rollback DROP VIEW ctxasm.memory_row_toolbox;

--changeset ctxasm:pg-0090-memory-row-entity dbms:postgresql runOnChange:true splitStatements:false
--comment: the entity rows in the shape of ctxasm.memory_row. A read of one type goes here, not through the union
--comment: with a type filter: there the other branches' filters fold to a constant false, which the planner
--comment: cannot prune partitions with, so it would open and lock every tenant's partitions of eight tables.
--comment: The columns keep ctxasm.memory_row's order (sqlfluff ST06 would sort them).
CREATE OR REPLACE VIEW ctxasm.memory_row_entity WITH (security_invoker = TRUE) AS
SELECT
    'entity'::varchar AS memory_type,
    'entity_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    confidence,
    NULL::varchar AS key_name,
    subject,
    predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    NULL::jsonb AS extra,
    created_xid,
    content_tokens,
    embedding,
    search_text,
    text_key,
    pointer_text
FROM ctxasm.entity_memory;
--rollback DROP VIEW ctxasm.memory_row_entity;

--changeset ctxasm:pg-0090-memory-row-workflow dbms:postgresql runOnChange:true splitStatements:false
--comment: the workflow rows in the shape of ctxasm.memory_row. A read of one type goes here, not through the union
--comment: with a type filter: there the other branches' filters fold to a constant false, which the planner
--comment: cannot prune partitions with, so it would open and lock every tenant's partitions of eight tables.
--comment: The columns keep ctxasm.memory_row's order (sqlfluff ST06 would sort them).
CREATE OR REPLACE VIEW ctxasm.memory_row_workflow WITH (security_invoker = TRUE) AS
SELECT
    'workflow'::varchar AS memory_type,
    'workflow_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    workflow_key AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    NULL::jsonb AS extra,
    created_xid,
    content_tokens,
    embedding,
    search_text,
    text_key,
    pointer_text
FROM ctxasm.workflow_memory;
--rollback DROP VIEW ctxasm.memory_row_workflow;

--changeset ctxasm:pg-0090-memory-row-kb-document dbms:postgresql runOnChange:true splitStatements:false
--comment: the kb_document rows in the shape of ctxasm.memory_row. A read of one type goes here, not through the union
--comment: with a type filter: there the other branches' filters fold to a constant false, which the planner
--comment: cannot prune partitions with, so it would open and lock every tenant's partitions of eight tables.
--comment: The columns keep ctxasm.memory_row's order (sqlfluff ST06 would sort them).
CREATE OR REPLACE VIEW ctxasm.memory_row_kb_document WITH (security_invoker = TRUE) AS
SELECT  -- noqa: ST06
    'kb_document'::varchar AS memory_type,
    'knowledge_base_document'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    collection AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    jsonb_build_object('source_uri', source_uri, 'published_at', published_at) AS extra,
    created_xid,
    content_tokens,
    NULL::vector AS embedding,
    search_text,
    text_key,
    pointer_text
FROM ctxasm.knowledge_base_document;
--rollback DROP VIEW ctxasm.memory_row_kb_document;

--changeset ctxasm:pg-0090-memory-row-kb-chunk dbms:postgresql runOnChange:true splitStatements:false
--comment: the kb_chunk rows in the shape of ctxasm.memory_row. A read of one type goes here, not through the union
--comment: with a type filter: there the other branches' filters fold to a constant false, which the planner
--comment: cannot prune partitions with, so it would open and lock every tenant's partitions of eight tables.
--comment: The columns keep ctxasm.memory_row's order (sqlfluff ST06 would sort them).
CREATE OR REPLACE VIEW ctxasm.memory_row_kb_chunk WITH (security_invoker = TRUE) AS
SELECT  -- noqa: ST06
    'kb_chunk'::varchar AS memory_type,
    'knowledge_base_chunk'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    document_id AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    title,
    chunk_index AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    jsonb_build_object('document_version', document_version) AS extra,
    created_xid,
    content_tokens,
    embedding,
    search_text,
    text_key,
    pointer_text
FROM ctxasm.knowledge_base_chunk;
--rollback DROP VIEW ctxasm.memory_row_kb_chunk;

--changeset ctxasm:pg-0090-memory-row-conversation dbms:postgresql runOnChange:true splitStatements:false
--comment: the conversation rows in the shape of ctxasm.memory_row. A read of one type goes here, not through the union
--comment: with a type filter: there the other branches' filters fold to a constant false, which the planner
--comment: cannot prune partitions with, so it would open and lock every tenant's partitions of eight tables.
--comment: The columns keep ctxasm.memory_row's order (sqlfluff ST06 would sort them).
CREATE OR REPLACE VIEW ctxasm.memory_row_conversation WITH (security_invoker = TRUE) AS
SELECT  -- noqa: ST06
    'conversation'::varchar AS memory_type,
    'conversation_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    NULL::varchar AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    turn_index,
    role,
    event_type,
    jsonb_build_object('speaker', speaker) AS extra,
    created_xid,
    content_tokens,
    embedding,
    search_text,
    text_key,
    pointer_text
FROM ctxasm.conversation_memory;
--rollback DROP VIEW ctxasm.memory_row_conversation;

--changeset ctxasm:pg-0090-memory-row-summary dbms:postgresql runOnChange:true splitStatements:false
--comment: the summary rows in the shape of ctxasm.memory_row. A read of one type goes here, not through the union
--comment: with a type filter: there the other branches' filters fold to a constant false, which the planner
--comment: cannot prune partitions with, so it would open and lock every tenant's partitions of eight tables.
--comment: The columns keep ctxasm.memory_row's order (sqlfluff ST06 would sort them).
CREATE OR REPLACE VIEW ctxasm.memory_row_summary WITH (security_invoker = TRUE) AS
SELECT  -- noqa: ST06
    'summary'::varchar AS memory_type,
    'summarization_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    summary_key AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    jsonb_build_object('period_start', period_start, 'period_end', period_end) AS extra,
    created_xid,
    content_tokens,
    embedding,
    search_text,
    text_key,
    pointer_text
FROM ctxasm.summarization_memory;
--rollback DROP VIEW ctxasm.memory_row_summary;

--changeset ctxasm:pg-0090-memory-row dbms:postgresql runOnChange:true splitStatements:false
--comment: every renderable memory row in one shape, for the assembler; RLS of the tables applies (invoker). Its
--comment: branches are the per-type views above, whose columns are this view's (sqlfluff AM04 cannot see that).
--comment: The view names its columns: PostgreSQL expands SELECT * when the view is made, so a column the
--comment: catalogue adds must change this text for the view to be made again (runOnChange) and carry it.
CREATE OR REPLACE VIEW ctxasm.memory_row (
    memory_type, table_name, tenant_id, id, version, user_id, agent_id, thread_id, status, valid_from,
    valid_until, deleted_at, content, content_json, source_refs, confidence, key_name, subject, predicate,
    title, turn_index, role, event_type, extra, created_xid, content_tokens, embedding, search_text, text_key,
    pointer_text
) WITH (security_invoker = TRUE) AS
SELECT * FROM ctxasm.memory_row_guideline  -- noqa: AM04
UNION ALL
SELECT * FROM ctxasm.memory_row_persona
UNION ALL
SELECT * FROM ctxasm.memory_row_toolbox
UNION ALL
SELECT * FROM ctxasm.memory_row_entity
UNION ALL
SELECT * FROM ctxasm.memory_row_workflow
UNION ALL
SELECT * FROM ctxasm.memory_row_kb_document
UNION ALL
SELECT * FROM ctxasm.memory_row_kb_chunk
UNION ALL
SELECT * FROM ctxasm.memory_row_conversation
UNION ALL
SELECT * FROM ctxasm.memory_row_summary;
--rollback DROP VIEW ctxasm.memory_row;

--changeset ctxasm:pg-0090-memory-row-history dbms:postgresql runOnChange:true splitStatements:false
--comment: the retired row versions in the same shape, with the xid that retired each
CREATE OR REPLACE VIEW ctxasm.memory_row_history WITH (security_invoker = TRUE) AS
SELECT
    'guideline'::varchar AS memory_type,
    'guideline_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    guideline_key AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    NULL::jsonb AS extra,
    created_xid,
    retired_xid,
    content_tokens,
    NULL::vector AS embedding,
    NULL::tsvector AS search_text,
    NULL::char(32) AS text_key,
    NULL::text AS pointer_text
FROM ctxasm.guideline_memory_history
UNION ALL
SELECT
    'persona'::varchar AS memory_type,
    'persona_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    persona_key AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    NULL::jsonb AS extra,
    created_xid,
    retired_xid,
    content_tokens,
    NULL::vector AS embedding,
    NULL::tsvector AS search_text,
    NULL::char(32) AS text_key,
    NULL::text AS pointer_text
FROM ctxasm.persona_memory_history
UNION ALL
SELECT
    'toolbox'::varchar AS memory_type,
    'toolbox_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    tool_name AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    jsonb_build_object(
        'tool_schema', tool_schema, 'usage_notes', usage_notes, 'tool_handler', tool_handler,
        'access_policy', access_policy
    ) AS extra,
    created_xid,
    retired_xid,
    content_tokens,
    NULL::vector AS embedding,
    NULL::tsvector AS search_text,
    NULL::char(32) AS text_key,
    NULL::text AS pointer_text
FROM ctxasm.toolbox_memory_history
UNION ALL
SELECT
    'entity'::varchar AS memory_type,
    'entity_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    confidence,
    NULL::varchar AS key_name,
    subject,
    predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    NULL::jsonb AS extra,
    created_xid,
    retired_xid,
    content_tokens,
    embedding,
    NULL::tsvector AS search_text,
    text_key,
    pointer_text
FROM ctxasm.entity_memory_history
UNION ALL
SELECT
    'workflow'::varchar AS memory_type,
    'workflow_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    workflow_key AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    NULL::jsonb AS extra,
    created_xid,
    retired_xid,
    content_tokens,
    embedding,
    NULL::tsvector AS search_text,
    text_key,
    pointer_text
FROM ctxasm.workflow_memory_history
UNION ALL
SELECT
    'kb_document'::varchar AS memory_type,
    'knowledge_base_document'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    collection AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    jsonb_build_object('source_uri', source_uri, 'published_at', published_at) AS extra,
    created_xid,
    retired_xid,
    content_tokens,
    NULL::vector AS embedding,
    NULL::tsvector AS search_text,
    text_key,
    pointer_text
FROM ctxasm.knowledge_base_document_history
UNION ALL
SELECT
    'kb_chunk'::varchar AS memory_type,
    'knowledge_base_chunk'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    document_id AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    title,
    chunk_index AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    jsonb_build_object('document_version', document_version) AS extra,
    created_xid,
    retired_xid,
    content_tokens,
    embedding,
    NULL::tsvector AS search_text,
    text_key,
    pointer_text
FROM ctxasm.knowledge_base_chunk_history
UNION ALL
SELECT
    'conversation'::varchar AS memory_type,
    'conversation_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    NULL::varchar AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    turn_index,
    role,
    event_type,
    jsonb_build_object('speaker', speaker) AS extra,
    created_xid,
    retired_xid,
    content_tokens,
    embedding,
    NULL::tsvector AS search_text,
    text_key,
    pointer_text
FROM ctxasm.conversation_memory_history
UNION ALL
SELECT
    'summary'::varchar AS memory_type,
    'summarization_memory'::varchar AS table_name,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    content,
    content_json,
    source_refs,
    NULL::numeric AS confidence,
    summary_key AS key_name,
    NULL::varchar AS subject,
    NULL::varchar AS predicate,
    NULL::varchar AS title,
    NULL::integer AS turn_index,
    NULL::varchar AS role,
    NULL::varchar AS event_type,
    jsonb_build_object('period_start', period_start, 'period_end', period_end) AS extra,
    created_xid,
    retired_xid,
    content_tokens,
    embedding,
    NULL::tsvector AS search_text,
    text_key,
    pointer_text
FROM ctxasm.summarization_memory_history;
--rollback DROP VIEW ctxasm.memory_row_history;

--changeset ctxasm:pg-0090-memory-rows dbms:postgresql runOnChange:true splitStatements:false
--comment: the memory rows now (NULL snapshot), or exactly those visible in a recorded snapshot (replay)
CREATE OR REPLACE FUNCTION ctxasm.memory_rows(in_snapshot pg_snapshot) RETURNS SETOF ctxasm.memory_row
LANGUAGE sql STABLE AS $$
    SELECT r.*
    FROM ctxasm.memory_row AS r
    WHERE in_snapshot IS NULL OR pg_visible_in_snapshot(r.created_xid, in_snapshot)
    UNION ALL
    SELECT
        h.memory_type,
        h.table_name,
        h.tenant_id,
        h.id,
        h.version,
        h.user_id,
        h.agent_id,
        h.thread_id,
        h.status,
        h.valid_from,
        h.valid_until,
        h.deleted_at,
        h.content,
        h.content_json,
        h.source_refs,
        h.confidence,
        h.key_name,
        h.subject,
        h.predicate,
        h.title,
        h.turn_index,
        h.role,
        h.event_type,
        h.extra,
        h.created_xid,
        h.content_tokens,
        h.embedding,
        h.search_text,
        h.text_key,
        h.pointer_text
    FROM ctxasm.memory_row_history AS h
    WHERE
        in_snapshot IS NOT NULL
        AND pg_visible_in_snapshot(h.created_xid, in_snapshot)
        AND NOT pg_visible_in_snapshot(h.retired_xid, in_snapshot)
$$;
--rollback DROP FUNCTION ctxasm.memory_rows(pg_snapshot);

--changeset ctxasm:pg-0090-compressions dbms:postgresql runOnChange:true splitStatements:false
--comment: the persisted compressions now, or as of a recorded snapshot
CREATE OR REPLACE FUNCTION ctxasm.compressions(in_snapshot pg_snapshot) RETURNS SETOF ctxasm.context_compression
LANGUAGE sql STABLE AS $$
    SELECT c.*
    FROM ctxasm.context_compression AS c
    WHERE in_snapshot IS NULL OR pg_visible_in_snapshot(c.created_xid, in_snapshot)
    UNION ALL
    SELECT (jsonb_populate_record(NULL::ctxasm.context_compression, to_jsonb(h) - 'retired_xid')).*
    FROM ctxasm.context_compression_history AS h
    WHERE
        in_snapshot IS NOT NULL
        AND pg_visible_in_snapshot(h.created_xid, in_snapshot)
        AND NOT pg_visible_in_snapshot(h.retired_xid, in_snapshot)
$$;
--rollback DROP FUNCTION ctxasm.compressions(pg_snapshot);

--changeset ctxasm:pg-0090-search-row dbms:postgresql runOnChange:true splitStatements:false
--comment: the searchable memory rows in one shape, for retrieval: each with the slice it competes for. A read
--comment: that names the tenant reads that tenant's partition of each table (RLS of the tables applies)
CREATE OR REPLACE VIEW ctxasm.search_row WITH (security_invoker = TRUE) AS
SELECT
    'entity'::varchar AS memory_type,
    'durable_facts'::varchar AS slice,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    NULL::varchar AS event_type,
    search_text,
    embedding
FROM ctxasm.entity_memory
UNION ALL
SELECT
    'workflow'::varchar,
    'durable_facts'::varchar,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    NULL::varchar,
    search_text,
    embedding
FROM ctxasm.workflow_memory
UNION ALL
SELECT
    'kb_document'::varchar,
    'evidence'::varchar,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    NULL::varchar,
    search_text,
    NULL::vector
FROM ctxasm.knowledge_base_document
UNION ALL
SELECT
    'kb_chunk'::varchar,
    'evidence'::varchar,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    NULL::varchar,
    search_text,
    embedding
FROM ctxasm.knowledge_base_chunk
UNION ALL
SELECT
    'conversation'::varchar,
    'recalled_history'::varchar,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    event_type,
    search_text,
    embedding
FROM ctxasm.conversation_memory
UNION ALL
SELECT
    'summary'::varchar,
    'recalled_history'::varchar,
    tenant_id,
    id,
    version,
    user_id,
    agent_id,
    thread_id,
    status,
    valid_from,
    valid_until,
    deleted_at,
    NULL::varchar,
    search_text,
    embedding
FROM ctxasm.summarization_memory;
--rollback DROP VIEW ctxasm.search_row;
