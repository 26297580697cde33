--liquibase formatted sql
-- generated from contract/memory_types.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)
-- The columns the catalogue adds to tables the base files (0020_memory_tables.sql) create.

--changeset ctxasm:ora-0095-speaker-08 dbms:oracle
alter table conversation_memory add (speaker varchar2(64));
--rollback alter table conversation_memory drop column speaker;
