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

--changeset ctxasm:pg-0050-scope-ids-not-empty dbms:postgresql splitStatements:false
--comment: a user or agent id is NULL (the row is the tenant's, or the agent's for any user) or names one: an
--comment: empty id would be neither, and a claim for the empty user would have acted tenant-wide
DO $$
DECLARE
    l_table text;
BEGIN
    FOR l_table IN SELECT 'memory_common' UNION ALL SELECT table_name FROM ctxasm.memory_type LOOP
        EXECUTE format('ALTER TABLE ctxasm.%I ADD CONSTRAINT memory_common_user_id_check CHECK (user_id <> '''')',
                       l_table);
        EXECUTE format('ALTER TABLE ctxasm.%I ADD CONSTRAINT memory_common_agent_id_check CHECK (agent_id <> '''')',
                       l_table);
    END LOOP;
END;
$$;
--rollback DO $$ DECLARE l_table text; BEGIN FOR l_table IN SELECT 'memory_common' UNION ALL SELECT table_name FROM ctxasm.memory_type LOOP EXECUTE format('ALTER TABLE ctxasm.%I DROP CONSTRAINT memory_common_user_id_check, DROP CONSTRAINT memory_common_agent_id_check', l_table); END LOOP; END; $$;
