--liquibase formatted sql logicalFilePath:db/schema/postgresql/0050_erasure.sql

--changeset ctxasm:pg-0050-status-erased dbms:postgresql splitStatements:false
--comment: a fourth status: erased (content removed for good; the row stays so references can say what went)
DO $$
DECLARE
    l_table text;
BEGIN
    FOR l_table IN SELECT 'memory_common' UNION ALL SELECT table_name FROM ctxasm.memory_type LOOP
        EXECUTE format('ALTER TABLE ctxasm.%I DROP CONSTRAINT memory_common_status_check', l_table);
        EXECUTE format('ALTER TABLE ctxasm.%I ADD CONSTRAINT memory_common_status_check '
                       'CHECK (status IN (''active'', ''superseded'', ''deleted'', ''erased''))', l_table);
    END LOOP;
END;
$$;
--rollback DO $$ DECLARE l_table text; BEGIN FOR l_table IN SELECT 'memory_common' UNION ALL SELECT table_name FROM ctxasm.memory_type LOOP EXECUTE format('ALTER TABLE ctxasm.%I DROP CONSTRAINT memory_common_status_check', l_table); EXECUTE format('ALTER TABLE ctxasm.%I ADD CONSTRAINT memory_common_status_check CHECK (status IN (''active'', ''superseded'', ''deleted''))', l_table); END LOOP; END; $$;
