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

--changeset ctxasm:pg-0050-source-refs-index dbms:postgresql splitStatements:false
--comment: erasure follows derivation: it finds the rows whose source_refs cite an erased row or window. A GIN
--comment: index over the source_refs that are not empty (most rows cite nothing, and are not in it), per table
DO $$
DECLARE
    l_table text;
BEGIN
    FOR l_table IN SELECT table_name FROM ctxasm.memory_type ORDER BY ordinal LOOP
        EXECUTE format('CREATE INDEX %I ON ctxasm.%I USING gin (source_refs jsonb_path_ops) '
                       'WHERE source_refs <> ''[]''::jsonb', l_table || '_cites', l_table);
    END LOOP;
END;
$$;
--rollback DO $$ DECLARE l_table text; BEGIN FOR l_table IN SELECT table_name FROM ctxasm.memory_type LOOP EXECUTE format('DROP INDEX ctxasm.%I', l_table || '_cites'); END LOOP; END; $$;
