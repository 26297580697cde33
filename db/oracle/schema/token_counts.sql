--liquibase formatted sql logicalFilePath:db/schema/oracle/0040_token_counts.sql

-- content_tokens: the o200k_base token count of a row version's content, computed by the writer (Python) so
-- assembly need not count stored text again; NULL = not known (the fitter counts the text itself). The
-- PostgreSQL twin is db/postgresql/schema/token_counts.sql. Flashback Query needs no history copy.

--changeset ctxasm:ora-0040-01-guideline-memory-content-tokens dbms:oracle
--comment: the stored token count of guideline_memory.content
alter table guideline_memory add (
   content_tokens number(10) constraint guideline_memory_content_tokens_ck check (content_tokens >= 0)
);
--rollback alter table guideline_memory drop column content_tokens;

--changeset ctxasm:ora-0040-02-persona-memory-content-tokens dbms:oracle
--comment: the stored token count of persona_memory.content
alter table persona_memory add (
   content_tokens number(10) constraint persona_memory_content_tokens_ck check (content_tokens >= 0)
);
--rollback alter table persona_memory drop column content_tokens;

--changeset ctxasm:ora-0040-03-toolbox-memory-content-tokens dbms:oracle
--comment: the stored token count of toolbox_memory.content
alter table toolbox_memory add (
   content_tokens number(10) constraint toolbox_memory_content_tokens_ck check (content_tokens >= 0)
);
--rollback alter table toolbox_memory drop column content_tokens;

--changeset ctxasm:ora-0040-04-entity-memory-content-tokens dbms:oracle
--comment: the stored token count of entity_memory.content
alter table entity_memory add (
   content_tokens number(10) constraint entity_memory_content_tokens_ck check (content_tokens >= 0)
);
--rollback alter table entity_memory drop column content_tokens;

--changeset ctxasm:ora-0040-05-workflow-memory-content-tokens dbms:oracle
--comment: the stored token count of workflow_memory.content
alter table workflow_memory add (
   content_tokens number(10) constraint workflow_memory_content_tokens_ck check (content_tokens >= 0)
);
--rollback alter table workflow_memory drop column content_tokens;

--changeset ctxasm:ora-0040-06-knowledge-base-document-content-tokens dbms:oracle
--comment: the stored token count of knowledge_base_document.content
alter table knowledge_base_document add (
   content_tokens number(10) constraint knowledge_base_document_content_tokens_ck check (content_tokens >= 0)
);
--rollback alter table knowledge_base_document drop column content_tokens;

--changeset ctxasm:ora-0040-07-knowledge-base-chunk-content-tokens dbms:oracle
--comment: the stored token count of knowledge_base_chunk.content
alter table knowledge_base_chunk add (
   content_tokens number(10) constraint knowledge_base_chunk_content_tokens_ck check (content_tokens >= 0)
);
--rollback alter table knowledge_base_chunk drop column content_tokens;

--changeset ctxasm:ora-0040-08-conversation-memory-content-tokens dbms:oracle
--comment: the stored token count of conversation_memory.content
alter table conversation_memory add (
   content_tokens number(10) constraint conversation_memory_content_tokens_ck check (content_tokens >= 0)
);
--rollback alter table conversation_memory drop column content_tokens;

--changeset ctxasm:ora-0040-09-summarization-memory-content-tokens dbms:oracle
--comment: the stored token count of summarization_memory.content
alter table summarization_memory add (
   content_tokens number(10) constraint summarization_memory_content_tokens_ck check (content_tokens >= 0)
);
--rollback alter table summarization_memory drop column content_tokens;

--changeset ctxasm:ora-0040-10-context-compression-content-tokens dbms:oracle
--comment: the stored token count of context_compression.content
alter table context_compression add (
   content_tokens number(10) constraint context_compression_content_tokens_ck check (content_tokens >= 0)
);
--rollback alter table context_compression drop column content_tokens;

--changeset ctxasm:ora-0040-11-context-source-ref-content-tokens dbms:oracle
--comment: the stored token count of context_source_ref.content
alter table context_source_ref add (
   content_tokens number(10) constraint context_source_ref_content_tokens_ck check (content_tokens >= 0)
);
--rollback alter table context_source_ref drop column content_tokens;
