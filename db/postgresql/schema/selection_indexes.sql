--liquibase formatted sql logicalFilePath:db/schema/postgresql/0085_selection_indexes.sql
-- What bounded, tenant-aware selection reads: every searchable memory type carries an English tsvector and an
-- embedding (written with the row), and the reads of the assembly path have indexes that lead with the
-- tenant. The tables are partitioned by tenant, so each index below exists once per tenant partition.

--changeset ctxasm:pg-0085-search-columns dbms:postgresql splitStatements:false
--comment: lexical and vector retrieval for durable facts and recalled history, as for the knowledge base;
--comment: only conversation messages are searchable (events such as manifests and tool results are not memory)
ALTER TABLE ctxasm.entity_memory ADD COLUMN search_text tsvector
    GENERATED ALWAYS AS (to_tsvector('english', subject || ' ' || predicate || ' ' || content)) STORED;
ALTER TABLE ctxasm.workflow_memory ADD COLUMN search_text tsvector
    GENERATED ALWAYS AS (to_tsvector('english', workflow_key || ' ' || content)) STORED;
ALTER TABLE ctxasm.conversation_memory ADD COLUMN search_text tsvector
    GENERATED ALWAYS AS (CASE WHEN event_type = 'message' THEN to_tsvector('english', content) END) STORED;
ALTER TABLE ctxasm.summarization_memory ADD COLUMN search_text tsvector
    GENERATED ALWAYS AS (to_tsvector('english', content)) STORED;
DO $$
DECLARE
    l_table text;
BEGIN
    FOR l_table IN SELECT unnest(ARRAY['entity_memory', 'workflow_memory', 'conversation_memory',
                                       'summarization_memory']) LOOP
        EXECUTE format('ALTER TABLE ctxasm.%I ADD COLUMN embedding vector(384)', l_table);
        EXECUTE format('ALTER TABLE ctxasm.%I ADD COLUMN embedding vector(384)', l_table || '_history');
    END LOOP;
    -- A vector is read by every distance computation: keep it in the row (the text moves out first).
    FOR l_table IN SELECT unnest(ARRAY['entity_memory', 'workflow_memory', 'knowledge_base_chunk',
                                       'conversation_memory', 'summarization_memory']) LOOP
        EXECUTE format('ALTER TABLE ctxasm.%I ALTER COLUMN embedding SET STORAGE MAIN', l_table);
    END LOOP;
END;
$$;
--rollback ALTER TABLE ctxasm.entity_memory DROP COLUMN search_text, DROP COLUMN embedding; ALTER TABLE ctxasm.workflow_memory DROP COLUMN search_text, DROP COLUMN embedding; ALTER TABLE ctxasm.conversation_memory DROP COLUMN search_text, DROP COLUMN embedding; ALTER TABLE ctxasm.summarization_memory DROP COLUMN search_text, DROP COLUMN embedding;

--changeset ctxasm:pg-0085-text-functions dbms:postgresql splitStatements:false
--comment: the text identity of the dedup step (case and white space do not make a different memory) and the
--comment: pointer tier's one line (the first sentence, cut at a word boundary to at most 60 characters): computed
--comment: once when a row is written (the stored columns below), never per assembly. Changing either means
--comment: recomputing those columns.
CREATE OR REPLACE FUNCTION ctxasm.normalized_text(in_text text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT btrim(regexp_replace(lower(in_text), '\s+', ' ', 'g'))
$$;
CREATE OR REPLACE FUNCTION ctxasm.pointer_line(in_text text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN length(s.line) <= 60 THEN s.line
                ELSE regexp_replace(left(s.line, 60), '\s+\S*$', '') || '...' END
      FROM (SELECT btrim(split_part(regexp_replace(in_text, '\s+', ' ', 'g'), '. ', 1)) AS line) AS s
$$;
--rollback DROP FUNCTION ctxasm.pointer_line(text); DROP FUNCTION ctxasm.normalized_text(text);

--changeset ctxasm:pg-0085-text-columns dbms:postgresql splitStatements:false
--comment: the stored text identity (md5 of the normalized text) and pointer line of every row selection can
--comment: render; the history tables keep them too, so a replay reads them as they were
DO $$
DECLARE
    l_table text;
BEGIN
    FOR l_table IN SELECT unnest(ARRAY['entity_memory', 'workflow_memory', 'knowledge_base_document',
                                       'knowledge_base_chunk', 'conversation_memory', 'summarization_memory']) LOOP
        EXECUTE format('ALTER TABLE ctxasm.%I ADD COLUMN text_key char(32) '
                       'GENERATED ALWAYS AS (md5(ctxasm.normalized_text(content))) STORED', l_table);
        EXECUTE format('ALTER TABLE ctxasm.%I ADD COLUMN pointer_text text '
                       'GENERATED ALWAYS AS (ctxasm.pointer_line(content)) STORED', l_table);
        EXECUTE format('ALTER TABLE ctxasm.%I ADD COLUMN text_key char(32), ADD COLUMN pointer_text text',
                       l_table || '_history');
    END LOOP;
END;
$$;
--rollback DO $$ DECLARE l_table text; BEGIN FOR l_table IN SELECT unnest(ARRAY['entity_memory', 'workflow_memory', 'knowledge_base_document', 'knowledge_base_chunk', 'conversation_memory', 'summarization_memory']) LOOP EXECUTE format('ALTER TABLE ctxasm.%I DROP COLUMN text_key, DROP COLUMN pointer_text', l_table); EXECUTE format('ALTER TABLE ctxasm.%I DROP COLUMN text_key, DROP COLUMN pointer_text', l_table || '_history'); END LOOP; END; $$;

--changeset ctxasm:pg-0085-search-indexes dbms:postgresql
--comment: GIN over the tsvector and HNSW over the embedding, per tenant partition
CREATE INDEX entity_memory_search ON ctxasm.entity_memory USING gin (search_text);
CREATE INDEX workflow_memory_search ON ctxasm.workflow_memory USING gin (search_text);
CREATE INDEX conversation_memory_search ON ctxasm.conversation_memory USING gin (search_text);
CREATE INDEX summarization_memory_search ON ctxasm.summarization_memory USING gin (search_text);
CREATE INDEX entity_memory_embedding ON ctxasm.entity_memory
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX workflow_memory_embedding ON ctxasm.workflow_memory
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX conversation_memory_embedding ON ctxasm.conversation_memory
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX summarization_memory_embedding ON ctxasm.summarization_memory
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
--rollback DROP INDEX ctxasm.entity_memory_search, ctxasm.workflow_memory_search, ctxasm.conversation_memory_search, ctxasm.summarization_memory_search, ctxasm.entity_memory_embedding, ctxasm.workflow_memory_embedding, ctxasm.conversation_memory_embedding, ctxasm.summarization_memory_embedding;

--changeset ctxasm:pg-0085-scope-indexes dbms:postgresql
--comment: the reads of the assembly path and of the tools, each led by the tenant: the thread's latest turns,
--comment: a user's other threads, the facts of a claim, a row's persisted compression, a source's dependants,
--comment: a scope's latest manifest
CREATE INDEX conversation_memory_thread_turns
    ON ctxasm.conversation_memory (tenant_id, thread_id, turn_index DESC NULLS LAST) WHERE event_type = 'message';
CREATE INDEX conversation_memory_user_threads
    ON ctxasm.conversation_memory (tenant_id, user_id, thread_id) WHERE event_type = 'message';
CREATE INDEX conversation_memory_events ON ctxasm.conversation_memory (tenant_id, event_type, thread_id, created_at);
CREATE INDEX entity_memory_claim ON ctxasm.entity_memory (tenant_id, subject, predicate);
CREATE INDEX entity_memory_scope ON ctxasm.entity_memory (tenant_id, user_id, agent_id);
CREATE INDEX workflow_memory_scope ON ctxasm.workflow_memory (tenant_id, user_id, agent_id);
CREATE INDEX context_compression_source
    ON ctxasm.context_compression (tenant_id, source_type, source_id, source_version);
CREATE INDEX context_source_ref_source ON ctxasm.context_source_ref (tenant_id, source_type, source_id, source_version);
CREATE INDEX context_source_ref_derived ON ctxasm.context_source_ref (tenant_id, derived_type, derived_id);
--rollback DROP INDEX ctxasm.conversation_memory_thread_turns, ctxasm.conversation_memory_user_threads, ctxasm.conversation_memory_events, ctxasm.entity_memory_claim, ctxasm.entity_memory_scope, ctxasm.workflow_memory_scope, ctxasm.context_compression_source, ctxasm.context_source_ref_source, ctxasm.context_source_ref_derived;

--changeset ctxasm:pg-0085-summary-scope-index dbms:postgresql
--comment: the summaries in scope, led by the tenant: when the scope holds few summaries the planner ranks them
--comment: exactly, and without this index it read every summary of the tenant's partition to find them
CREATE INDEX summarization_memory_scope ON ctxasm.summarization_memory (tenant_id, user_id, agent_id);
--rollback DROP INDEX ctxasm.summarization_memory_scope;

--changeset ctxasm:pg-0085-chunk-scope-index dbms:postgresql
--comment: the knowledge base chunks in scope, led by the tenant, as for the other retrieved types: when a window's
--comment: scope holds few of the tenant's chunks (another agent's or user's knowledge base beside a large one),
--comment: the planner ranks those exactly through this index; without it, it read every chunk of the tenant's
--comment: partition (a sequential scan) or walked the vector graph through rows the scope cannot see
CREATE INDEX knowledge_base_chunk_scope ON ctxasm.knowledge_base_chunk (tenant_id, user_id, agent_id);
--rollback DROP INDEX ctxasm.knowledge_base_chunk_scope;

--changeset ctxasm:pg-0085-lifecycle-indexes dbms:postgresql
--comment: the rows of a retrieved type still in effect, led by the tenant: the live tables keep every version, so a
--comment: table whose rows were mostly superseded or deleted (facts rewritten often, summaries written again as a
--comment: thread grows, a knowledge base ingested again or removed) holds few rows a window can show; the planner
--comment: then reads those few through this index (not deleted, not erased, valid_until NULL or later than the
--comment: evaluation time: the retrieval predicate implies the index's) and ranks them exactly. Without it, with
--comment: 108 of 100,000 chunks in effect, it scanned the whole partition (51 to 65 ms, against 1.2 to 1.4).
CREATE INDEX entity_memory_lifecycle ON ctxasm.entity_memory (tenant_id, valid_until)
    WHERE deleted_at IS NULL AND status <> 'erased';
CREATE INDEX workflow_memory_lifecycle ON ctxasm.workflow_memory (tenant_id, valid_until)
    WHERE deleted_at IS NULL AND status <> 'erased';
CREATE INDEX knowledge_base_chunk_lifecycle ON ctxasm.knowledge_base_chunk (tenant_id, valid_until)
    WHERE deleted_at IS NULL AND status <> 'erased';
CREATE INDEX summarization_memory_lifecycle ON ctxasm.summarization_memory (tenant_id, valid_until)
    WHERE deleted_at IS NULL AND status <> 'erased';
--rollback DROP INDEX ctxasm.entity_memory_lifecycle, ctxasm.workflow_memory_lifecycle, ctxasm.knowledge_base_chunk_lifecycle, ctxasm.summarization_memory_lifecycle;
