--liquibase formatted sql logicalFilePath:db/schema/oracle/0030_retrieval_indexes.sql

-- The retrieval indexes of the knowledge base (PostgreSQL: db/postgresql/schema/retrieval_indexes.sql); the other
-- searchable tables get theirs in 0060_selection_indexes.sql.
-- Lexical: an Oracle Text CONTEXT index on the content of each knowledge-base table, synced on commit (a
-- CONTEXT index is not transactional by default: without SYNC (ON COMMIT) new rows would not be found until
-- CTX_DDL.SYNC_INDEX ran), and a composite domain index: FILTER BY tenant_id stores the tenant with every
-- document, so the tenant predicate of a CONTAINS query is applied inside the text index. Vector: an HNSW
-- index on the chunk embeddings, cosine distance.
-- sqlfluff's oracle dialect parses neither CREATE INDEX ... INDEXTYPE IS nor CREATE VECTOR INDEX, so each
-- statement is run by EXECUTE IMMEDIATE from an anonymous block (docs/oracle-assembly.md, "Indexes").
-- Needs Oracle Text installed (not in the gvenzl 23-slim image) and, for HNSW, a vector pool
-- (VECTOR_MEMORY_SIZE > 0).

--changeset ctxasm:ora-0030-03-knowledge-base-chunk-embedding-hnsw dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: HNSW vector index on knowledge_base_chunk.embedding (all-MiniLM-L6-v2, normalised), cosine distance;
--comment: neighbors and efconstruction as PostgreSQL's m = 16, ef_construction = 64
declare
   l_ddl varchar2(400) := 'create vector index knowledge_base_chunk_embedding_vx on knowledge_base_chunk (embedding)'
                          || ' organization inmemory neighbor graph distance cosine with target accuracy 95'
                          || ' parameters (type hnsw, neighbors 16, efconstruction 64)';
begin
   execute immediate l_ddl;
end;
/
--rollback begin execute immediate 'drop index knowledge_base_chunk_embedding_vx'; end;

--changeset ctxasm:ora-0030-04-knowledge-base-chunk-text-by-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: Oracle Text CONTEXT index on knowledge_base_chunk.content, filtered by tenant, synced on commit; it
--comment: replaces the index of the same name without FILTER BY that earlier deployments created
declare
   -- ORA-01418: a fresh schema has no earlier index to drop
   e_no_index exception;
   pragma exception_init(e_no_index, -1418);
   l_drop varchar2(200) := 'drop index knowledge_base_chunk_text_ix';
   l_ddl  varchar2(400) := 'create index knowledge_base_chunk_text_ix on knowledge_base_chunk (content)'
                           || ' indextype is ctxsys.context filter by tenant_id'
                           || ' parameters (''sync (on commit)'')';
begin
   begin
      execute immediate l_drop;
   exception
      when e_no_index then
         null;
   end;
   execute immediate l_ddl;
end;
/
--rollback begin execute immediate 'drop index knowledge_base_chunk_text_ix'; end;

--changeset ctxasm:ora-0030-05-knowledge-base-document-text-by-tenant dbms:oracle endDelimiter:/ stripComments:false rollbackSplitStatements:false
--comment: Oracle Text CONTEXT index on knowledge_base_document.content, filtered by tenant, synced on commit; it
--comment: replaces the index of the same name without FILTER BY that earlier deployments created
declare
   -- ORA-01418: a fresh schema has no earlier index to drop
   e_no_index exception;
   pragma exception_init(e_no_index, -1418);
   l_drop varchar2(200) := 'drop index knowledge_base_document_text_ix';
   l_ddl  varchar2(400) := 'create index knowledge_base_document_text_ix on knowledge_base_document (content)'
                           || ' indextype is ctxsys.context filter by tenant_id'
                           || ' parameters (''sync (on commit)'')';
begin
   begin
      execute immediate l_drop;
   exception
      when e_no_index then
         null;
   end;
   execute immediate l_ddl;
end;
/
--rollback begin execute immediate 'drop index knowledge_base_document_text_ix'; end;
