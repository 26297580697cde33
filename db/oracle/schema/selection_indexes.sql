--liquibase formatted sql logicalFilePath:db/schema/oracle/0060_selection_indexes.sql

-- What bounded, tenant-aware selection reads (PostgreSQL: db/postgresql/schema/selection_indexes.sql):
-- every searchable memory type carries an embedding (written with the row by the writer) and an Oracle Text
-- index filtered by tenant, the text identity of the dedup step and the pointer tier's line are stored with each
-- row version, and the reads of the assembly path have B-tree indexes that lead with the tenant.
-- The tables are not partitioned (docs/oracle.md, "Tenants and partitions"): the tenant leads every key and
-- B-tree index, the Oracle Text indexes FILTER BY tenant_id, and every vector query names the tenant, which
-- the optimizer applies as a pre-filter or in-filter of the HNSW scan.

--changeset ctxasm:ora-0060-01-entity-memory-embedding dbms:oracle
--comment: the all-MiniLM-L6-v2 embedding of entity_memory.content, written with the row (vector retrieval)
alter table entity_memory add (embedding vector(384, float32));
--rollback alter table entity_memory drop column embedding;

--changeset ctxasm:ora-0060-02-workflow-memory-embedding dbms:oracle
--comment: the all-MiniLM-L6-v2 embedding of workflow_memory.content, written with the row (vector retrieval)
alter table workflow_memory add (embedding vector(384, float32));
--rollback alter table workflow_memory drop column embedding;

--changeset ctxasm:ora-0060-03-conversation-memory-embedding dbms:oracle
--comment: the all-MiniLM-L6-v2 embedding of conversation_memory.content, written with the row (vector retrieval)
alter table conversation_memory add (embedding vector(384, float32));
--rollback alter table conversation_memory drop column embedding;

--changeset ctxasm:ora-0060-04-summarization-memory-embedding dbms:oracle
--comment: the all-MiniLM-L6-v2 embedding of summarization_memory.content, written with the row (vector retrieval)
alter table summarization_memory add (embedding vector(384, float32));
--rollback alter table summarization_memory drop column embedding;

--changeset ctxasm:ora-0060-05-entity-memory-text-columns dbms:oracle
--comment: the stored text identity (md5 of the normalized content) and pointer line of entity_memory,
--comment: computed by CTX_MEMORY when a row version is written (CTX_MEMORY.text_key, CTX_MEMORY.pointer_line)
alter table entity_memory add (text_key varchar2(32), pointer_text varchar2(64));
--rollback alter table entity_memory drop (text_key, pointer_text);

--changeset ctxasm:ora-0060-06-workflow-memory-text-columns dbms:oracle
--comment: the stored text identity (md5 of the normalized content) and pointer line of workflow_memory,
--comment: computed by CTX_MEMORY when a row version is written (CTX_MEMORY.text_key, CTX_MEMORY.pointer_line)
alter table workflow_memory add (text_key varchar2(32), pointer_text varchar2(64));
--rollback alter table workflow_memory drop (text_key, pointer_text);

--changeset ctxasm:ora-0060-07-knowledge-base-document-text-columns dbms:oracle
--comment: the stored text identity (md5 of the normalized content) and pointer line of knowledge_base_document,
--comment: computed by CTX_MEMORY when a row version is written (CTX_MEMORY.text_key, CTX_MEMORY.pointer_line)
alter table knowledge_base_document add (text_key varchar2(32), pointer_text varchar2(64));
--rollback alter table knowledge_base_document drop (text_key, pointer_text);

--changeset ctxasm:ora-0060-08-knowledge-base-chunk-text-columns dbms:oracle
--comment: the stored text identity (md5 of the normalized content) and pointer line of knowledge_base_chunk,
--comment: computed by CTX_MEMORY when a row version is written (CTX_MEMORY.text_key, CTX_MEMORY.pointer_line)
alter table knowledge_base_chunk add (text_key varchar2(32), pointer_text varchar2(64));
--rollback alter table knowledge_base_chunk drop (text_key, pointer_text);

--changeset ctxasm:ora-0060-09-conversation-memory-text-columns dbms:oracle
--comment: the stored text identity (md5 of the normalized content) and pointer line of conversation_memory,
--comment: computed by CTX_MEMORY when a row version is written (CTX_MEMORY.text_key, CTX_MEMORY.pointer_line)
alter table conversation_memory add (text_key varchar2(32), pointer_text varchar2(64));
--rollback alter table conversation_memory drop (text_key, pointer_text);

--changeset ctxasm:ora-0060-10-summarization-memory-text-columns dbms:oracle
--comment: the stored text identity (md5 of the normalized content) and pointer line of summarization_memory,
--comment: computed by CTX_MEMORY when a row version is written (CTX_MEMORY.text_key, CTX_MEMORY.pointer_line)
alter table summarization_memory add (text_key varchar2(32), pointer_text varchar2(64));
--rollback alter table summarization_memory drop (text_key, pointer_text);

--changeset ctxasm:ora-0060-11-entity-memory-text dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: Oracle Text CONTEXT index on entity_memory.content, filtered by tenant, synced on commit
declare
   l_ddl varchar2(400) := 'create index entity_memory_text_ix on entity_memory (content)'
                          || ' indextype is ctxsys.context filter by tenant_id'
                          || ' parameters (''sync (on commit)'')';
begin
   execute immediate l_ddl;
end;
/
--rollback begin execute immediate 'drop index entity_memory_text_ix'; end;

--changeset ctxasm:ora-0060-12-workflow-memory-text dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: Oracle Text CONTEXT index on workflow_memory.content, filtered by tenant, synced on commit
declare
   l_ddl varchar2(400) := 'create index workflow_memory_text_ix on workflow_memory (content)'
                          || ' indextype is ctxsys.context filter by tenant_id'
                          || ' parameters (''sync (on commit)'')';
begin
   execute immediate l_ddl;
end;
/
--rollback begin execute immediate 'drop index workflow_memory_text_ix'; end;

--changeset ctxasm:ora-0060-13-conversation-memory-text dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: Oracle Text CONTEXT index on conversation_memory.content, filtered by tenant, synced on commit. Recalled
--comment: history reads one user's messages, but user_id and event_type stay out of the filter: they hold any 64
--comment: characters, up to 256 bytes, and a FILTER BY column takes at most 249 (DRG-11309); the text query's
--comment: user and event predicates apply to the tenant's hits of the bounded probe (CTX_RETRIEVAL)
declare
   l_ddl varchar2(400) := 'create index conversation_memory_text_ix on conversation_memory (content)'
                          || ' indextype is ctxsys.context filter by tenant_id'
                          || ' parameters (''sync (on commit)'')';
begin
   execute immediate l_ddl;
end;
/
--rollback begin execute immediate 'drop index conversation_memory_text_ix'; end;

--changeset ctxasm:ora-0060-14-summarization-memory-text dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: Oracle Text CONTEXT index on summarization_memory.content, filtered by tenant, synced on commit
declare
   l_ddl varchar2(400) := 'create index summarization_memory_text_ix on summarization_memory (content)'
                          || ' indextype is ctxsys.context filter by tenant_id'
                          || ' parameters (''sync (on commit)'')';
begin
   execute immediate l_ddl;
end;
/
--rollback begin execute immediate 'drop index summarization_memory_text_ix'; end;

--changeset ctxasm:ora-0060-15-entity-memory-embedding-hnsw dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: HNSW vector index on entity_memory.embedding, cosine distance, as knowledge_base_chunk_embedding_vx
declare
   l_ddl varchar2(400) := 'create vector index entity_memory_embedding_vx on entity_memory (embedding)'
                          || ' organization inmemory neighbor graph distance cosine with target accuracy 95'
                          || ' parameters (type hnsw, neighbors 16, efconstruction 64)';
begin
   execute immediate l_ddl;
end;
/
--rollback begin execute immediate 'drop index entity_memory_embedding_vx'; end;

--changeset ctxasm:ora-0060-16-workflow-memory-embedding-hnsw dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: HNSW vector index on workflow_memory.embedding, cosine distance, as knowledge_base_chunk_embedding_vx
declare
   l_ddl varchar2(400) := 'create vector index workflow_memory_embedding_vx on workflow_memory (embedding)'
                          || ' organization inmemory neighbor graph distance cosine with target accuracy 95'
                          || ' parameters (type hnsw, neighbors 16, efconstruction 64)';
begin
   execute immediate l_ddl;
end;
/
--rollback begin execute immediate 'drop index workflow_memory_embedding_vx'; end;

--changeset ctxasm:ora-0060-17-conversation-memory-embedding-hnsw dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: HNSW vector index on conversation_memory.embedding, cosine distance, as knowledge_base_chunk_embedding_vx
declare
   l_ddl varchar2(400) := 'create vector index conversation_memory_embedding_vx on conversation_memory (embedding)'
                          || ' organization inmemory neighbor graph distance cosine with target accuracy 95'
                          || ' parameters (type hnsw, neighbors 16, efconstruction 64)';
begin
   execute immediate l_ddl;
end;
/
--rollback begin execute immediate 'drop index conversation_memory_embedding_vx'; end;

--changeset ctxasm:ora-0060-18-summarization-memory-embedding-hnsw dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: HNSW vector index on summarization_memory.embedding, cosine distance, as knowledge_base_chunk_embedding_vx
declare
   l_ddl varchar2(400) := 'create vector index summarization_memory_embedding_vx on summarization_memory (embedding)'
                          || ' organization inmemory neighbor graph distance cosine with target accuracy 95'
                          || ' parameters (type hnsw, neighbors 16, efconstruction 64)';
begin
   execute immediate l_ddl;
end;
/
--rollback begin execute immediate 'drop index summarization_memory_embedding_vx'; end;

--changeset ctxasm:ora-0060-19-conversation-memory-thread-turns dbms:oracle
--comment: the thread's latest turns (the volatile tail), led by the tenant
create index conversation_memory_thread_turns on conversation_memory (tenant_id, thread_id, event_type, turn_index);
--rollback drop index conversation_memory_thread_turns;

--changeset ctxasm:ora-0060-20-conversation-memory-user-threads dbms:oracle
--comment: a user's messages in all threads (recalled history), led by the tenant
create index conversation_memory_user_threads on conversation_memory (tenant_id, user_id, event_type, thread_id);
--rollback drop index conversation_memory_user_threads;

--changeset ctxasm:ora-0060-21-conversation-memory-events dbms:oracle
--comment: a scope's events, the latest manifest first, led by the tenant
create index conversation_memory_events on conversation_memory (tenant_id, event_type, thread_id, created_at);
--rollback drop index conversation_memory_events;

--changeset ctxasm:ora-0060-22-entity-memory-claim dbms:oracle
--comment: the facts of a claim, led by the tenant
create index entity_memory_claim on entity_memory (tenant_id, subject, predicate);
--rollback drop index entity_memory_claim;

--changeset ctxasm:ora-0060-23-entity-memory-scope dbms:oracle
--comment: the durable facts in scope, led by the tenant
create index entity_memory_scope on entity_memory (tenant_id, user_id, agent_id);
--rollback drop index entity_memory_scope;

--changeset ctxasm:ora-0060-24-workflow-memory-scope dbms:oracle
--comment: the procedures in scope, led by the tenant
create index workflow_memory_scope on workflow_memory (tenant_id, user_id, agent_id);
--rollback drop index workflow_memory_scope;

--changeset ctxasm:ora-0060-25-context-compression-source dbms:oracle
--comment: a row version's persisted compression (the summary tier), led by the tenant
create index context_compression_source on context_compression (tenant_id, source_type, source_id, source_version);
--rollback drop index context_compression_source;

--changeset ctxasm:ora-0060-26-context-source-ref-source dbms:oracle
--comment: what depends on a source row (retention, erasure), led by the tenant
create index context_source_ref_source on context_source_ref (tenant_id, source_type, source_id, source_version);
--rollback drop index context_source_ref_source;

--changeset ctxasm:ora-0060-27-context-source-ref-derived dbms:oracle
--comment: the sources of a derived row (a manifest's dependencies), led by the tenant
create index context_source_ref_derived on context_source_ref (tenant_id, derived_type, derived_id);
--rollback drop index context_source_ref_derived;

--changeset ctxasm:ora-0060-28-summarization-memory-scope dbms:oracle
--comment: the summaries in scope, led by the tenant: when few rows are in scope the exact ranking reads them
--comment: through this index instead of every summary of the tenant
create index summarization_memory_scope on summarization_memory (tenant_id, user_id, agent_id);
--rollback drop index summarization_memory_scope;

--changeset ctxasm:ora-0060-29-knowledge-base-chunk-scope dbms:oracle
--comment: the knowledge base chunks in scope, led by the tenant: when few chunks are in scope (another agent's
--comment: or user's knowledge base beside a large one) the ranking reads them through this index
create index knowledge_base_chunk_scope on knowledge_base_chunk (tenant_id, user_id, agent_id);
--rollback drop index knowledge_base_chunk_scope;

--changeset ctxasm:ora-0060-30-lifecycle-indexes dbms:oracle
--comment: the rows of a retrieved type still in effect, led by the tenant: when most rows were superseded the
--comment: ranking reads the few in effect through these indexes
create index entity_memory_lifecycle on entity_memory (tenant_id, valid_until);
create index workflow_memory_lifecycle on workflow_memory (tenant_id, valid_until);
create index knowledge_base_chunk_lifecycle on knowledge_base_chunk (tenant_id, valid_until);
create index summarization_memory_lifecycle on summarization_memory (tenant_id, valid_until);
--rollback drop index entity_memory_lifecycle; drop index workflow_memory_lifecycle; drop index knowledge_base_chunk_lifecycle; drop index summarization_memory_lifecycle;
