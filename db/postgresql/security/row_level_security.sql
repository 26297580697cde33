--liquibase formatted sql logicalFilePath:db/security/postgresql/0010_row_level_security.sql

--changeset ctxasm:pg-sec-0010-rls dbms:postgresql splitStatements:false
--comment: tenant isolation by the database: ENABLE + FORCE RLS on every memory table and its history,
--comment: so the owner is filtered too; the predicate reads the signed session tenant once per statement
DO $$
DECLARE
    l_table text;
BEGIN
    FOR l_table IN
        SELECT name FROM ctxasm.memory_type m, LATERAL (VALUES (m.table_name), (m.table_name || '_history')) AS t(name)
    LOOP
        EXECUTE format('ALTER TABLE ctxasm.%I ENABLE ROW LEVEL SECURITY', l_table);
        EXECUTE format('ALTER TABLE ctxasm.%I FORCE ROW LEVEL SECURITY', l_table);
        EXECUTE format('CREATE POLICY %I ON ctxasm.%I FOR ALL '
                       'USING (tenant_id = (SELECT ctx_session.current_tenant())) '
                       'WITH CHECK (tenant_id = (SELECT ctx_session.current_tenant()))',
                       l_table || '_tenant', l_table);
    END LOOP;
END;
$$;
--rollback DO $$ DECLARE l_table text; BEGIN FOR l_table IN SELECT name FROM ctxasm.memory_type m, LATERAL (VALUES (m.table_name), (m.table_name || '_history')) AS t(name) LOOP EXECUTE format('DROP POLICY %I ON ctxasm.%I', l_table || '_tenant', l_table); EXECUTE format('ALTER TABLE ctxasm.%I NO FORCE ROW LEVEL SECURITY', l_table); EXECUTE format('ALTER TABLE ctxasm.%I DISABLE ROW LEVEL SECURITY', l_table); END LOOP; END; $$;

--changeset ctxasm:pg-sec-0011-rls-claim-scope dbms:postgresql runOnChange:true splitStatements:false
--comment: the verified claim decides the tenant, and when it names a user or agent, rows scoped to another user
--comment: or agent are invisible too (rows with no user or agent are the tenant's and stay visible); the user
--comment: and agent are read as set (ctxasm.claim_setting): the tenant test beside them verifies the claim
DO $$
DECLARE
    l_table text;
BEGIN
    FOR l_table IN
        SELECT name FROM ctxasm.memory_type m, LATERAL (VALUES (m.table_name), (m.table_name || '_history')) AS t(name)
    LOOP
        EXECUTE format(
            'ALTER POLICY %I ON ctxasm.%I USING (%s) WITH CHECK (%s)', l_table || '_tenant', l_table,
            'tenant_id = (SELECT ctxasm.session_tenant())'
            || ' AND (user_id IS NULL OR (SELECT ctxasm.claim_setting(''user'')) IS NULL'
            || ' OR user_id = (SELECT ctxasm.claim_setting(''user'')))'
            || ' AND (agent_id IS NULL OR (SELECT ctxasm.claim_setting(''agent'')) IS NULL'
            || ' OR agent_id = (SELECT ctxasm.claim_setting(''agent'')))',
            'tenant_id = (SELECT ctxasm.session_tenant())'
            || ' AND (user_id IS NULL OR (SELECT ctxasm.claim_setting(''user'')) IS NULL'
            || ' OR user_id = (SELECT ctxasm.claim_setting(''user'')))'
            || ' AND (agent_id IS NULL OR (SELECT ctxasm.claim_setting(''agent'')) IS NULL'
            || ' OR agent_id = (SELECT ctxasm.claim_setting(''agent'')))');
    END LOOP;
END;
$$;
--rollback DO $$ DECLARE l_table text; BEGIN FOR l_table IN SELECT name FROM ctxasm.memory_type m, LATERAL (VALUES (m.table_name), (m.table_name || '_history')) AS t(name) LOOP EXECUTE format('ALTER POLICY %I ON ctxasm.%I USING (tenant_id = (SELECT ctx_session.current_tenant())) WITH CHECK (tenant_id = (SELECT ctx_session.current_tenant()))', l_table || '_tenant', l_table); END LOOP; END; $$;
