--liquibase formatted sql logicalFilePath:db/security/postgresql/0030_pinned_settings.sql

--changeset ctxasm:pg-sec-0030-pin-definer-settings dbms:postgresql runAlways:true splitStatements:false
--comment: A SECURITY DEFINER function runs with the caller's settings unless it sets its own. The caller could
--comment: then change what a contract routine returns: a tiny hnsw.ef_search or enable_indexscan = off changes
--comment: which vector hits come back (and turns the shared HNSW index into a probe of other tenants' rows).
--comment: So every definer routine that reads memory pins every planner setting (the "Query Tuning" group:
--comment: enable_*, costs, GEQO, join limits, JIT) and work_mem to the deployment's values, pgvector's scan
--comment: settings to ours, and row_security, TimeZone and the text search configuration; ctx_session's two
--comment: definer functions read only the key table and pin only search_path. Run on every deployment, after
--comment: the packages: CREATE OR REPLACE of a routine drops the settings ALTER FUNCTION added; a setting the
--comment: routine's own definition makes is kept.
DO $$
DECLARE
    l_function regprocedure;
    l_actions  text;
BEGIN
    -- Load pgvector in this session, so its hnsw.* settings are known (and user-settable), not placeholders.
    PERFORM '[0]'::public.vector;
    FOR l_function, l_actions IN
        SELECT p.oid::regprocedure, string_agg(a.action, ' ' ORDER BY a.action)
          FROM pg_catalog.pg_proc AS p
          JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
          CROSS JOIN (
              SELECT s.name, format('SET %s FROM CURRENT', s.name) AS action
                FROM pg_catalog.pg_settings AS s
               WHERE (s.category LIKE 'Query Tuning%' OR s.name IN ('work_mem', 'hash_mem_multiplier'))
                 AND s.context = 'user'
              UNION ALL
              SELECT v.name, v.action
                FROM (VALUES
                    ('hnsw.ef_search', 'SET hnsw.ef_search = 100'),
                    ('hnsw.iterative_scan', 'SET hnsw.iterative_scan = relaxed_order'),
                    ('hnsw.max_scan_tuples', 'SET hnsw.max_scan_tuples = 20000'),
                    ('hnsw.scan_mem_multiplier', 'SET hnsw.scan_mem_multiplier = 1'),
                    ('row_security', 'SET row_security = on'),
                    ('TimeZone', 'SET "TimeZone" = ''UTC'''),
                    ('default_text_search_config', 'SET default_text_search_config = ''pg_catalog.english''')
                ) AS v (name, action)
          ) AS a
         WHERE p.prosecdef AND n.nspname IN ('ctx_memory', 'ctx_assembly', 'ctx_tools')
           -- A value the routine sets in its own definition (select_window's jit = off) stays the routine's.
           AND NOT EXISTS (SELECT 1 FROM unnest(coalesce(p.proconfig, '{}')) AS c (setting)
                            WHERE lower(split_part(c.setting, '=', 1)) = lower(a.name))
         GROUP BY p.oid
    LOOP
        EXECUTE format('ALTER FUNCTION %s %s', l_function, l_actions);
    END LOOP;
END;
$$;
--rollback SELECT 1;

--changeset ctxasm:pg-sec-0031-pin-definer-diagnostics dbms:postgresql runAlways:true splitStatements:false
--comment: A session may turn on debug_print_plan (and _parse, _rewritten) and lower client_min_messages: the
--comment: plans of every statement a routine runs, with the claim and the tenant as constants, would then go to
--comment: the server log and back to the caller, and their row estimates, read from planner statistics, would
--comment: answer questions about other tenants' rows. Every definer routine (ctx_session's included) pins them
--comment: off for its own execution, and trace_sort with them. Run on every deployment, after the packages.
DO $$
DECLARE
    l_function regprocedure;
BEGIN
    FOR l_function IN
        SELECT p.oid::regprocedure
          FROM pg_catalog.pg_proc AS p
          JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
         WHERE p.prosecdef AND n.nspname IN ('ctx_session', 'ctx_memory', 'ctx_assembly', 'ctx_tools', 'ctxasm')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET debug_print_plan = off SET debug_print_parse = off '
                       'SET debug_print_rewritten = off SET client_min_messages = notice SET trace_sort = off',
                       l_function);
    END LOOP;
END;
$$;
--rollback SELECT 1;
