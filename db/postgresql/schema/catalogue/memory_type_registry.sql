--liquibase formatted sql
-- generated from contract/memory_types.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)

--changeset ctxasm:pg-0096-memory-type-registry dbms:postgresql runOnChange:true
--comment: every memory type of the catalogue with its table and its place in the catalogue's order
INSERT INTO ctxasm.memory_type (memory_type, table_name, ordinal) VALUES
    ('guideline', 'guideline_memory', 1),
    ('persona', 'persona_memory', 2),
    ('toolbox', 'toolbox_memory', 3),
    ('entity', 'entity_memory', 4),
    ('workflow', 'workflow_memory', 5),
    ('kb_document', 'knowledge_base_document', 6),
    ('kb_chunk', 'knowledge_base_chunk', 7),
    ('conversation', 'conversation_memory', 8),
    ('summary', 'summarization_memory', 9),
    ('compression', 'context_compression', 10),
    ('source_ref', 'context_source_ref', 11)
ON CONFLICT (memory_type) DO UPDATE SET table_name = excluded.table_name, ordinal = excluded.ordinal;
--rollback SELECT 1;
