--liquibase formatted sql logicalFilePath:db/schema/postgresql/0030_row_history.sql

--changeset ctxasm:pg-0030-memory-types dbms:postgresql
--comment: memory type -> table; the one list every generic routine and loop reads
CREATE TABLE ctxasm.memory_type (
    memory_type varchar(32) PRIMARY KEY,
    table_name  varchar(63) NOT NULL UNIQUE,
    ordinal     integer     NOT NULL UNIQUE
);
INSERT INTO ctxasm.memory_type (memory_type, table_name, ordinal) VALUES
    ('guideline',   'guideline_memory',        1),
    ('persona',     'persona_memory',          2),
    ('toolbox',     'toolbox_memory',          3),
    ('entity',      'entity_memory',           4),
    ('workflow',    'workflow_memory',         5),
    ('kb_document', 'knowledge_base_document', 6),
    ('kb_chunk',    'knowledge_base_chunk',    7),
    ('conversation','conversation_memory',     8),
    ('summary',     'summarization_memory',    9),
    ('compression', 'context_compression',    10),
    ('source_ref',  'context_source_ref',     11);
--rollback DROP TABLE ctxasm.memory_type;

--changeset ctxasm:pg-0030-stamp-row-version dbms:postgresql runOnChange:true splitStatements:false
--comment: an updated row is a new row version: it carries the xid of the transaction that wrote it
CREATE OR REPLACE FUNCTION ctxasm.stamp_row_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.created_xid := pg_current_xact_id();
    RETURN NEW;
END;
$$;
--rollback DROP FUNCTION ctxasm.stamp_row_version();

--changeset ctxasm:pg-0030-keep-row-version dbms:postgresql runOnChange:true splitStatements:false
--comment: the replaced or deleted row version goes to <table>_history with the xid that retired it
CREATE OR REPLACE FUNCTION ctxasm.keep_row_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- By column name, not position: a column added to the table later is added to its history too.
    -- The table is named by the trigger's argument: on a partitioned table TG_TABLE_NAME is the partition.
    EXECUTE format('INSERT INTO ctxasm.%1$I SELECT (jsonb_populate_record(NULL::ctxasm.%1$I, $1)).*',
                   TG_ARGV[0] || '_history')
        USING to_jsonb(OLD) || jsonb_build_object('retired_xid', pg_current_xact_id());
    RETURN NULL;
END;
$$;
--rollback DROP FUNCTION ctxasm.keep_row_version();

--changeset ctxasm:pg-0030-history-tables dbms:postgresql splitStatements:false
--comment: PostgreSQL's stand-in for Flashback Query: every retired row version, kept with its two xids
DO $$
DECLARE
    l_table text;
BEGIN
    FOR l_table IN SELECT table_name FROM ctxasm.memory_type ORDER BY ordinal LOOP
        EXECUTE format('CREATE TABLE ctxasm.%I (LIKE ctxasm.%I, retired_xid xid8 NOT NULL)',
                       l_table || '_history', l_table);
        EXECUTE format('CREATE INDEX %I ON ctxasm.%I (tenant_id, id, version)',
                       l_table || '_history_row', l_table || '_history');
        EXECUTE format('CREATE TRIGGER stamp_row_version BEFORE UPDATE ON ctxasm.%I '
                       'FOR EACH ROW EXECUTE FUNCTION ctxasm.stamp_row_version()', l_table);
        EXECUTE format('CREATE TRIGGER keep_row_version AFTER UPDATE OR DELETE ON ctxasm.%I '
                       'FOR EACH ROW EXECUTE FUNCTION ctxasm.keep_row_version(%L)', l_table, l_table);
    END LOOP;
END;
$$;
--rollback DO $$ DECLARE l_table text; BEGIN FOR l_table IN SELECT table_name FROM ctxasm.memory_type LOOP EXECUTE format('DROP TABLE ctxasm.%I', l_table || '_history'); EXECUTE format('DROP TRIGGER stamp_row_version ON ctxasm.%I', l_table); EXECUTE format('DROP TRIGGER keep_row_version ON ctxasm.%I', l_table); END LOOP; END; $$;
