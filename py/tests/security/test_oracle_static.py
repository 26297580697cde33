"""The Oracle side of the findings, checked statically (no Oracle database runs here; with one, the utPLSQL suite
db/tests/utplsql/0030_test_ctx_session.sql runs the same checks inside it, and the conformance suite runs every
scenario through claims).

Finding 1 and 7 on Oracle: CTX_SESSION.set_tenant took a bare tenant id, and its context lived for the whole
session, so a pooled connection could inherit it. Finding 2: SELECT on the tables exposed
ALL_TAB_COL_STATISTICS and histograms."""

from __future__ import annotations

import re

from ctxasm_dev.gates.formatted_sql import strip_sql_comments

from ..conftest import REPO

ORACLE = REPO / "db" / "oracle"
TABLES = ("guideline_memory", "persona_memory", "toolbox_memory", "entity_memory", "workflow_memory",
          "knowledge_base_document", "knowledge_base_chunk", "conversation_memory", "summarization_memory",
          "context_compression", "context_source_ref")


def public_routines() -> set[str]:
    names: set[str] = set()
    for path in sorted(ORACLE.rglob("*.spec.sql")):
        names |= set(re.findall(r"\b(?:function|procedure)\s+(\w+)", code(path)))
    return names


def code(path) -> str:
    return strip_sql_comments(path.read_text(encoding="utf-8")).lower()


def routine(text: str, name: str) -> str:
    found = re.search(rf"\b(procedure|function)\s+{name}\b.*?\bend\s+{name}\s*;", text, re.DOTALL)
    assert found, f"{name} not found"
    return found.group(0)


def test_set_tenant_takes_a_claim_and_verifies_it_with_an_hmac():
    spec = code(ORACLE / "api" / "ctx_session.spec.sql")
    assert re.search(r"procedure\s+set_tenant\s*\(\s*in_claim\s+in\s+varchar2\s*\)", spec)
    body = code(ORACLE / "api" / "ctx_session.body.sql")
    set_tenant = routine(body, "set_tenant")
    assert "sys.dbms_crypto.mac(" in set_tenant and "sys.dbms_crypto.hmac_sh256" in set_tenant
    assert "from ctx_hmac_key" in set_tenant
    # one refusal, whatever was wrong, and nothing set before the claim holds
    assert set_tenant.count("ctx_errors.raise_error(") == 1 and "co_invalid_claim" in set_tenant
    assert set_tenant.index("clear_tenant()") < set_tenant.index("bind_to_transaction(")
    assert "unknown_tenant" not in body


def test_the_tenant_context_is_bound_to_the_transaction_that_set_it():
    body = code(ORACLE / "api" / "ctx_session.body.sql")
    bind = routine(body, "bind_to_transaction")
    assert "local_transaction_id(create_transaction => true)" in bind
    current = routine(body, "current_tenant")
    assert "local_transaction_id(create_transaction => false)" in current and "l_bound <> l_current" in current
    # Every package routine that touches a table checks the transaction first (the application holds no table
    # privilege); the VPD predicate itself reads the context, which Oracle Text's post-commit sync needs.
    public = public_routines()
    checked = 0
    for path in sorted(ORACLE.rglob("*.body.sql")):
        body_code = code(path)
        # granted, or (CTX_MANIFEST_STORE) called only through a granted package's wrappers
        if path.name not in ("ctx_memory.body.sql", "ctx_assembly.body.sql", "ctx_tools.body.sql",
                             "ctx_manifest_store.body.sql"):
            continue
        for name, text in re.findall(r"\n   (?:function|procedure)\s+(\w+)\b(.*?)\n   end \1;", body_code, re.DOTALL):
            touches = re.search(r"\b(from|into|update)\s+(" + "|".join(TABLES) + r")\b", text)
            if touches and name in public:
                assert re.search(r"ctx_session\.require_(tenant|scope)\(", text), f"{path.name}: {name}"
                checked += 1
    assert checked >= 6, "the check must see the routines that read the tables, or it proves nothing"
    policy = code(ORACLE / "security" / "ctx_policy.body.sql")
    assert "sys_context(''ctxasm_ctx'', ''tenant_id'')" in policy


def test_enter_tenant_is_for_ctx_admin_only():
    spec = code(ORACLE / "api" / "ctx_session.spec.sql")
    assert re.search(r"procedure\s+enter_tenant\s*\([^)]*\)\s*accessible\s+by\s*\(\s*package\s+ctx_admin\s*\)", spec)


def test_the_application_user_ends_with_no_table_privilege():
    grants = code(ORACLE / "security" / "grants.sql")
    held: set[str] = set()
    for verb, table in re.findall(r"\b(grant|revoke)\s+select\s+on\s+(\w+)\s+(?:to|from)\s+ctxasm_app", grants):
        (held.add if verb == "grant" else held.discard)(table)
    assert held == set()
    assert set(TABLES) <= set(re.findall(r"revoke\s+select\s+on\s+(\w+)\s+from\s+ctxasm_app", grants))


def test_the_application_user_may_execute_the_contract_packages_only():
    """The internal packages (CTX_RULES, CTX_RETRIEVAL, CTX_SOURCES, CTX_JSON, ...) read every tenant's rows with
    the owner's rights and trust the tenant they are given: granted to nobody, called only by the owner's packages."""
    granted = set(re.findall(r"\bgrant\s+execute\s+on\s+(\w+)\s+to\s+ctxasm_app", code(ORACLE / "security" / "grants.sql")))
    assert granted == {"ctx_session", "ctx_memory", "ctx_assembly", "ctx_tools"}
    internal = sorted(ORACLE.glob("internal/*.spec.sql"))
    assert {"ctx_rules.spec.sql", "ctx_retrieval.spec.sql", "ctx_sources.spec.sql", "ctx_json.spec.sql"} <= \
        {path.name for path in internal}
    for path in internal:
        assert re.search(r"create or replace package \w+ authid definer is", code(path)), path.name
        assert path.name.removesuffix(".spec.sql") not in granted


def test_routines_with_a_scope_check_it_against_the_claim():
    tools = code(ORACLE / "api" / "ctx_tools.body.sql")
    for name in ("active_tools", "search_memory", "lookup_entity"):
        assert "ctx_session.require_scope(in_user_id => in_user_id, in_agent_id => in_agent_id)" in routine(tools, name)
    assembly = code(ORACLE / "api" / "ctx_assembly.body.sql")
    assert "ctx_session.require_scope(" in routine(assembly, "select_window")
    assert "co_max_question" in routine(assembly, "select_window")
    # the manifest routines are CTX_MANIFEST_STORE's, which CTX_ASSEMBLY's wrappers call
    store = code(ORACLE / "internal" / "ctx_manifest_store.body.sql")
    for name in ("latest_manifest_id", "record_manifest"):
        assert "ctx_session.require_scope(" in routine(store, name), name
        assert f"return ctx_manifest_store.{name}(" in routine(assembly, name), name
    assert "ctx_session.require_tenant(" in routine(store, "read_manifest")
    assert "return ctx_manifest_store.read_manifest(" in routine(assembly, "read_manifest")


def test_the_oracle_store_sends_claims():
    store = (REPO / "py" / "ctxasm" / "engines" / "oracle.py").read_text(encoding="utf-8")
    oracle = store[store.index("class OracleStore"):]
    assert 'self._call("ctx_session.set_tenant", in_claim=self._claim(tenant_id))' in oracle
    assert oracle.count("set_tenant(in_claim => :claim)") >= 3 and "in_tenant_id => :tenant" not in oracle
    assert "ctxasm_owner." not in oracle, "the application user reads no table"


def test_erasure_follows_copies_and_reads_as_of_leave_erased_versions_out():
    """Finding 4 on Oracle: rows_as_of and select_window(in_snapshot) returned erased text AS OF an older SCN."""
    memory = code(ORACLE / "api" / "ctx_memory.body.sql")
    report = routine(memory, "erase_report")
    assert "copies_of(" in report and "mark_manifest(" in report and "ctx_session.require_row_scope(" in report
    copies = routine(memory, "copies_of")
    assert "json_table(t.source_refs" in copies and "'manifest'" in copies and "$.manifest_id" in copies
    # derivation by the stored provenance: every table's source_refs, context_source_ref, a user's turn excepted
    assert "co_memory_types" in copies and "from context_source_ref r" in copies and "t.role <> ''user''" in copies
    scrub = routine(memory, "scrub_row")
    assert "'source_hash'" not in scrub, "source_hash is cleared with the text, not kept"
    rows_as_of = routine(memory, "rows_as_of")
    assert "n.status = :b_erased" in rows_as_of
    # a replay reads the rows through CTX_SOURCES.rows_as_of, which leaves the versions erased now out
    replay_rows = routine(code(ORACLE / "internal" / "ctx_sources.body.sql"), "rows_as_of")
    assert "erased_now as (" in replay_rows and "from erased_now x" in replay_rows
    assembly = code(ORACLE / "api" / "ctx_assembly.body.sql")
    assert "ctx_sources.rows_as_of(" in routine(assembly, "select_window")
    selection = code(ORACLE / "internal" / "ctx_selection.body.sql")
    assert "n.status = 'erased'" in routine(selection, "candidate_items")  # compressions too
    assert "n.status = 'erased'" in routine(code(ORACLE / "internal" / "ctx_budget.body.sql"), "budget_in_effect")
    schema = code(ORACLE / "schema" / "keys_and_erasure.sql")
    assert "modify (source_hash null)" in schema


def test_oracle_refuses_empty_scope_ids_and_bounds_stored_fields_and_replay_inputs():
    """The Oracle side of findings 10 and 12: an empty user or agent in a claim or a row, a 49 MB fact, and
    unbounded replay inputs (PostgreSQL: test_empty_scope_ids.py, test_robust_windows.py)."""
    session = routine(code(ORACLE / "api" / "ctx_session.body.sql"), "checked_payload")
    for part in ("user", "agent"):
        assert f"l_payload.get_string('{part}') is null" in session, part
    binder = code(ORACLE / "internal" / "ctx_row_binder.body.sql")
    for limit in ("co_max_text_chars", "co_max_document_chars", "co_max_json_chars", "co_max_source_refs"):
        assert binder.count(limit) >= 2, limit  # declared and checked
    assert "in (co_col_user_id, co_col_agent_id)" in binder
    assembly = code(ORACLE / "api" / "ctx_assembly.body.sql")
    assert routine(assembly, "score_rows").count("co_max_replay_items") == 2
    assert routine(assembly, "source_items").count("co_max_replay_items") == 2
    # a manifest: its text and its dependency references (PostgreSQL: test_manifest_write.py)
    record = routine(code(ORACLE / "internal" / "ctx_manifest_store.body.sql"), "record_manifest")
    assert "sys.dbms_lob.getlength(lob_loc => in_manifest)" in record and "co_max_json_chars" in record
    assert "check_reference_count(" in record


def test_set_tenant_refuses_as_a_bad_claim_only_what_a_claims_contents_can_raise():
    """The second blocker of the first Oracle deployment: set_tenant's `when others` turned any error (a JSON
    method inside SQL, ORA-40573; a missing privilege; an invalid object) into invalid_claim for every valid
    claim. Only what reading a signed claim's contents can raise (JSON that does not parse, a value that does
    not fit, a number out of range) may become the refusal; anything else must propagate as itself. Found in
    whichever file of db/oracle holds CTX_SESSION's body."""
    bodies = [code(path) for path in sorted(ORACLE.rglob("*.sql"))]
    body = next(text for text in bodies if re.search(r"package\s+body\s+ctx_session\b", text))
    parse_errors = {-40441, -40834, -1426}  # JSON syntax, JSON input, numeric overflow
    bound = {name: int(number) for name, number in
             re.findall(r"pragma\s+exception_init\s*\(\s*(\w+)\s*,\s*(-?\d+)\s*\)", body)}
    handlers = []
    for name in ("set_tenant", "checked_payload"):
        text = routine(body, name)
        assert not re.search(r"\bwhen\s+others\b", text), f"{name} turns every error into its answer"
        for section in re.split(r"\bexception\b", text)[1:]:
            handlers += [re.split(r"\s+or\s+", names.strip())
                         for names in re.findall(r"\n\s*when\s+(\w+(?:\s+or\s+\w+)*)\s+then\b", section)]
    assert handlers, "set_tenant reads a signed claim's contents under a handler of their parse errors"
    for handled in handlers:
        assert all(n == "value_error" or bound.get(n) in parse_errors for n in handled), handled


def test_the_utplsql_test_of_the_tenants_end_is_not_vacuous():
    """Finding 3 of the first Oracle review: tenant_ends_with_the_transaction passed vacuously. The utPLSQL test
    now first shows the tenant's committed row through the claim (so a leak would have something to show), then,
    after the rollback, expects current_tenant to be null and a routine to refuse with tenant_not_set (not with
    any error)."""
    suite = code(REPO / "db" / "tests" / "utplsql" / "0030_test_ctx_session.sql")
    test = re.search(r"procedure\s+tenant_ends_with_the_transaction\s+is\b.*?\bend\s+tenant_ends_with_the_transaction;",
                     suite, re.DOTALL).group(0)
    seen = test.index("to_equal(1)")
    ended = test.index("rollback;", seen)
    assert "commit;" in test[:seen] and "ctx_memory.put_memory(" in test[:seen]
    assert test.index("ctx_session.current_tenant()", ended) < test.index("to_be_null()", ended)
    refusal = test[ended:]
    assert re.search(r"sqlcode\s*<>\s*ctx_errors\.co_tenant_not_set\s+then\s+raise;", refusal)
    assert re.search(r"ut\.expect\(l_refused\)", refusal) and "to_be_true()" in refusal
