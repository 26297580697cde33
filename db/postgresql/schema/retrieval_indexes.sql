--liquibase formatted sql logicalFilePath:db/schema/postgresql/0060_retrieval.sql

--changeset ctxasm:pg-0060-search-text dbms:postgresql
--comment: lexical retrieval: an English tsvector of title and content, kept by the database itself
ALTER TABLE ctxasm.knowledge_base_chunk ADD COLUMN search_text tsvector
    GENERATED ALWAYS AS (to_tsvector('english', coalesce(title, '') || ' ' || content)) STORED;
ALTER TABLE ctxasm.knowledge_base_document ADD COLUMN search_text tsvector
    GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || content)) STORED;
CREATE INDEX knowledge_base_chunk_search ON ctxasm.knowledge_base_chunk USING gin (search_text);
CREATE INDEX knowledge_base_document_search ON ctxasm.knowledge_base_document USING gin (search_text);
--rollback ALTER TABLE ctxasm.knowledge_base_chunk DROP COLUMN search_text; ALTER TABLE ctxasm.knowledge_base_document DROP COLUMN search_text;

--changeset ctxasm:pg-0060-embedding-hnsw dbms:postgresql
--comment: vector retrieval: HNSW over the chunk embeddings (all-MiniLM-L6-v2, normalised, cosine)
CREATE INDEX knowledge_base_chunk_embedding ON ctxasm.knowledge_base_chunk
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
--rollback DROP INDEX ctxasm.knowledge_base_chunk_embedding;
