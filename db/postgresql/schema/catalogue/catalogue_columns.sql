--liquibase formatted sql
-- generated from contract/memory_types.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)
-- The columns the catalogue adds to tables the base files (0020_memory_tables.sql) create: each table
-- and its history table (ctxasm.keep_row_version copies by column name).

--changeset ctxasm:pg-0095-speaker-08 dbms:postgresql
ALTER TABLE ctxasm.conversation_memory ADD COLUMN speaker varchar(64);
ALTER TABLE ctxasm.conversation_memory_history ADD COLUMN speaker varchar(64);
--rollback ALTER TABLE ctxasm.conversation_memory_history DROP COLUMN speaker;
--rollback ALTER TABLE ctxasm.conversation_memory DROP COLUMN speaker;
