"""Every SECURITY DEFINER function pins search_path; none is executable by PUBLIC; the ones that read memory pin
every setting that changes their results (finding 3); the application role may execute the contract routines
and nothing else of ours."""

from __future__ import annotations

CONTRACT_SCHEMAS = ("ctx_session", "ctx_memory", "ctx_assembly", "ctx_tools")


def definer_functions(owner) -> list[tuple[str, str, list[str] | None, bool]]:
    """(schema, signature, proconfig, executable by PUBLIC) of every SECURITY DEFINER function of the database
    outside the system schemas."""
    return owner.execute(
        "SELECT n.nspname, p.oid::regprocedure::text, p.proconfig, "
        "       p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) AS a "
        "                                   WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE') "
        "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema')").fetchall()


def test_every_definer_function_pins_search_path(demo_target, owner_conn):
    functions = definer_functions(owner_conn)
    assert functions
    loose = [sig for _, sig, config, _ in functions
             if not any(c.startswith("search_path=pg_catalog") for c in (config or []))]
    assert loose == []


def test_no_definer_function_is_executable_by_public(demo_target, owner_conn):
    assert [sig for _, sig, _, public in definer_functions(owner_conn) if public] == []


def test_definer_routines_that_read_memory_pin_the_settings_that_change_their_results(demo_target, owner_conn):
    planner = [name for (name,) in owner_conn.execute(
        "SELECT name FROM pg_settings WHERE name LIKE 'enable\\_%' AND context = 'user'")]
    wanted = {"hnsw.ef_search", "hnsw.iterative_scan", "hnsw.max_scan_tuples", "work_mem", "random_page_cost",
              "TimeZone", "row_security", *planner}
    missing = {}
    for schema, signature, config, _ in definer_functions(owner_conn):
        if schema in ("ctx_memory", "ctx_assembly", "ctx_tools"):
            pinned = {entry.split("=", 1)[0] for entry in config or []}
            if wanted - pinned:
                missing[signature] = sorted(wanted - pinned)
    assert missing == {}


def test_the_application_role_executes_the_contract_routines_only(demo_target, owner_conn):
    callable_ = owner_conn.execute(
        "SELECT n.nspname, p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname IN ('ctxasm', 'ctx_admin', 'ctx_session', 'ctx_memory', 'ctx_assembly', 'ctx_tools') "
        "AND has_function_privilege('ctxasm_app', p.oid, 'EXECUTE') "
        "AND has_schema_privilege('ctxasm_app', n.oid, 'USAGE')").fetchall()
    assert callable_ and {schema for schema, _ in callable_} <= set(CONTRACT_SCHEMAS)
