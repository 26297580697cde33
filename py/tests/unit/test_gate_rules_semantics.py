"""The semantics gate (oracle_semantics): it passes on the repository, and each of its rules fails on a copy of
the repository broken the way Oracle would refuse, naming the file, the line and the rule (docs/oracle-gates.md,
"8. oracle_semantics"). Every mutant is an edit of real code; the two blockers of the first deployment are
among them (a JSON_OBJECT_T method inside SQL, a FILTER BY column wider than 249 bytes)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ctxasm_dev.gates import oracle_semantics
from ctxasm_dev.gates.oracle_deployment import DEPLOYMENT, Deployment, for_repository, length_semantics_of

REPO = Path(__file__).resolve().parents[3]
SESSION = "db/oracle/api/ctx_session.body.sql"
# read_manifest, whose query the mutants edit, is CTX_MANIFEST_STORE's (CTX_ASSEMBLY.read_manifest calls it)
MANIFEST_STORE = "db/oracle/internal/ctx_manifest_store.body.sql"
MEMORY = "db/oracle/api/ctx_memory.body.sql"
RETRIEVAL = "db/oracle/internal/ctx_retrieval.body.sql"
TOOLS = "db/oracle/api/ctx_tools.body.sql"
TABLES = "db/oracle/schema/memory_tables.sql"
INDEXES = "db/oracle/schema/selection_indexes.sql"

# anchors in the code the mutants edit
TENANT_LOOKUP = "       where t.tenant_id = l_tenant_id;"
PAYLOAD_LOCALS = "      l_tenant_id varchar2(4096);\n   begin"
MANIFEST_FILTER = "and m.event_type = co_manifest_event"
MANIFEST_SELECT = "select json_serialize(m.content_json returning clob)\n        into l_manifest"
MANIFEST_END = "         and m.status = 'active';\n      return l_manifest;"
CHUNK_SCORE = "select r.id, r.version, score(4) as text_score"
CHUNK_CONTAINS = "where contains(r.content, in_probe, 4) > 0"
CONVERSATION_FILTER = ("' indextype is ctxsys.context filter by tenant_id'\n"
                       "                          || ' parameters (''sync (on commit)'')';\nbegin\n"
                       "   execute immediate l_ddl;\nend;\n/\n"
                       "--rollback begin execute immediate 'drop index conversation_memory_text_ix'")


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of what the gate reads; each test edits it and puts the files back."""
    root = tmp_path_factory.mktemp("semantics")
    for folder in ("db", "liquibase"):
        shutil.copytree(REPO / folder, root / folder)
    (root / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "oracle-dev", root / "scripts" / "oracle-dev")
    return root


def _findings(repo: Path, edits: list[tuple[str, str, str]], **deployment: object) -> list[str]:
    """The gate's findings on the copy with the edits (path, old, new) made; the files are restored after."""
    originals: dict[Path, str] = {}
    try:
        for path, old, new in edits:
            target = repo / path
            text = target.read_text(encoding="utf-8")
            originals.setdefault(target, text)
            assert old in text, f"mutant anchor not found in {path}: {old!r}"
            target.write_text(text.replace(old, new, 1), encoding="utf-8")
        return [f.render(repo) for f in oracle_semantics.analyse(repo, for_repository(repo, **deployment))]
    finally:
        for target, text in originals.items():
            target.write_text(text, encoding="utf-8")


def _mutated_line(repo: Path, edit: tuple[str, str, str]) -> int:
    """The line of the copy, once the edit is made, on which the edit's new text ends: where the gate must point
    (worked out from the file, so an unrelated edit above it moves the expectation with it)."""
    path, old, new = edit
    text = (repo / path).read_text(encoding="utf-8")
    end = text.index(old) + len(new.rstrip("\n"))
    return text.replace(old, new, 1)[:end].count("\n") + 1


def test_oracle_semantics_passes_on_the_repository(capsys) -> None:
    assert oracle_semantics.main(["--repo", str(REPO)]) == 0
    assert "oracle_semantics: OK: release 23, MAX_STRING_SIZE=STANDARD, NLS_LENGTH_SEMANTICS=CHAR; 0 problems" \
        in capsys.readouterr().out


def test_the_copy_is_clean_before_any_mutant(repo_copy: Path) -> None:
    assert _findings(repo_copy, []) == []


MUTANTS = {
    # --- a PL/SQL-only construct inside a SQL statement -------------------------------------------------------
    "the first blocker: a JSON_OBJECT_T method in a query's WHERE": (
        [(SESSION, TENANT_LOOKUP, "       where t.tenant_id = l_payload.get_string('tenant');")],
        "ctx_session.body.sql:{line}: [plsql-only-in-sql] JSON_OBJECT_T.get_string in a SQL statement"),
    "a JSON type's static parse in SQL": (
        [(SESSION, TENANT_LOOKUP, "       where t.tenant_id = json_object_t.parse('{}').get_string('x');")],
        "[plsql-only-in-sql] JSON_OBJECT_T.parse in a SQL statement"),
    "a JSON_OBJECT_T value bound into SQL": (
        [(SESSION, TENANT_LOOKUP, "       where t.tenant_id = l_payload;")],
        "[plsql-only-in-sql] a JSON_OBJECT_T value in a SQL statement"),
    "a JSON method in an UPDATE's SET": (
        [(SESSION, TENANT_LOOKUP, TENANT_LOOKUP + "\n      update ctx_tenant x set x.display_name = "
                                                  "l_header.get_string('n') where x.tenant_id = l_tenant_id;")],
        "ctx_session.body.sql:{line}: [plsql-only-in-sql] JSON_OBJECT_T.get_string"),
    "a JSON method in an INSERT's VALUES": (
        [(SESSION, TENANT_LOOKUP, TENANT_LOOKUP + "\n      insert into ctx_tenant (tenant_id, display_name) "
                                                  "values (l_tenant_id, l_payload.get_string('n'));")],
        "ctx_session.body.sql:{line}: [plsql-only-in-sql] JSON_OBJECT_T.get_string"),
    "TREAT to a JSON type in SQL": (
        [(SESSION, TENANT_LOOKUP, "       where t.tenant_id = treat(null as json_object_t).get_string('x');")],
        "[plsql-only-in-sql] JSON_OBJECT_T in SQL"),
    "SQLCODE in a SQL statement": (
        [(SESSION, TENANT_LOOKUP, "       where t.tenant_id = to_char(sqlcode);")],
        "[plsql-only-in-sql] SQLCODE in a SQL statement"),
    "a package-body-private function called from SQL": (
        [(SESSION, TENANT_LOOKUP, "       where t.tenant_id = base64url_encode(in_bytes => null);")],
        "[plsql-only-in-sql] base64url_encode is private to the package body"),
    "a procedure called from SQL": (
        [(SESSION, TENANT_LOOKUP, "       where t.tenant_id = clear_tenant;")],
        "[plsql-only-in-sql] clear_tenant is a procedure"),
    "a collection of a locally declared type in TABLE()": (
        [(SESSION, PAYLOAD_LOCALS, "      l_tenant_id varchar2(4096);\n      type t_ids is table of varchar2(64);\n"
                                   "      l_ids t_ids := t_ids();\n   begin"),
         (SESSION, TENANT_LOOKUP, "       where t.tenant_id in (select column_value from table(l_ids));")],
        "[plsql-only-in-sql] l_ids is a collection of a type declared in a routine or block"),
    # --- the other way: SQL-only functions in PL/SQL, and BOOLEAN conversions --------------------------------
    "DECODE in a PL/SQL assignment": (
        [(SESSION, "      l_tenant_id := l_payload.get_string('tenant');",
          "      l_tenant_id := decode(l_count, 1, 'a', 'b');")],
        "[sql-only-in-plsql] DECODE in a PL/SQL expression"),
    "a BOOLEAN compared with a VARCHAR2 (implicit conversion)": (
        [(SESSION, PAYLOAD_LOCALS, "      l_tenant_id varchar2(4096);\n      l_flag boolean := true;\n   begin"),
         (SESSION, TENANT_LOOKUP, "       where t.tenant_id = l_flag;")],
        "[boolean-conversion] a BOOLEAN compared with = to a VARCHAR2"),
    # --- Oracle Text ---------------------------------------------------------------------------------------------
    "SCORE with a label no CONTAINS of its block has": (
        [(RETRIEVAL, CHUNK_SCORE, "select r.id, r.version, score(7) as text_score")],
        "ctx_retrieval.body.sql:{line}: [text-score] SCORE(7) without a CONTAINS(..., 7)"),
    "SCORE in the outer block, its CONTAINS in a subquery": (
        [(RETRIEVAL, CHUNK_SCORE + "\n                                         from knowledge_base_chunk r\n"
                     "                                        " + CHUNK_CONTAINS,
          CHUNK_SCORE + "\n                                         from (select * from knowledge_base_chunk q "
                        "where contains(q.content, in_probe, 4) > 0) r\n                                        "
                        "where 1 = 1")],
        "[text-score] SCORE(4) without a CONTAINS(..., 4) in the same query block"),
    "two CONTAINS of one block with the same label": (
        [(RETRIEVAL, CHUNK_CONTAINS, CHUNK_CONTAINS + " and contains(r.content, 'x', 4) > 0")],
        "[text-score] two CONTAINS of one query block use label 4"),
    "CONTAINS on a column no CONTEXT index covers": (
        [(RETRIEVAL, CHUNK_CONTAINS, "where contains(r.title, in_probe, 4) > 0")],
        "[text-index] CONTAINS on knowledge_base_chunk.title, which no CONTEXT index covers (DRG-10599"),
    "CONTAINS on a subquery's column": (
        [(MANIFEST_STORE, MANIFEST_SELECT + "\n        from conversation_memory m",
          "select max(c.id)\n        into l_manifest\n"
          "        from (select q.id, q.content from conversation_memory q) c, conversation_memory m"),
         (MANIFEST_STORE, MANIFEST_FILTER, MANIFEST_FILTER + " and contains(c.content, 'x') > 0")],
        "[text-index] CONTAINS on the subquery.content"),
    "the second blocker: tenant_id back in characters under a FILTER BY": (
        [(TABLES, "alter table entity_memory modify (tenant_id varchar2(64 byte));",
          "alter table entity_memory modify (tenant_id varchar2(64 char));")],
        "selection_indexes.sql:70: [text-filter] entity_memory_text_ix: FILTER BY / ORDER BY column "
        "entity_memory.tenant_id is varchar2(64 char), up to 256 bytes"),
    "a FILTER BY column of 64 characters (user_id)": (
        [(INDEXES, CONVERSATION_FILTER,
          CONVERSATION_FILTER.replace("filter by tenant_id", "filter by tenant_id, user_id"))],
        "[text-filter] conversation_memory_text_ix: FILTER BY / ORDER BY column conversation_memory.user_id"),
    "a FILTER BY column of a JSON type": (
        [(INDEXES, CONVERSATION_FILTER,
          CONVERSATION_FILTER.replace("filter by tenant_id", "filter by tenant_id, content_json"))],
        "[text-filter] conversation_memory_text_ix: FILTER BY / ORDER BY column conversation_memory.content_json "
        "is json"),
    "a CONTEXT index on a column the table does not have": (
        [(INDEXES, "on conversation_memory (content)'", "on conversation_memory (contents)'")],
        "[text-index] conversation_memory_text_ix indexes conversation_memory.contents, which does not exist"),
    # --- LOBs where Oracle refuses them --------------------------------------------------------------------------
    "a CLOB compared with =": (
        [(MANIFEST_STORE, MANIFEST_FILTER, "and m.content = co_manifest_event")],
        "ctx_manifest_store.body.sql:{line}: [lob] a CLOB compared with ="),
    "a CLOB variable compared in SQL": (
        [(MANIFEST_STORE, MANIFEST_FILTER, "and m.event_type = l_manifest")], "[lob] a CLOB compared with ="),
    "a concatenation with a CLOB compared": (
        [(MANIFEST_STORE, MANIFEST_FILTER, "and m.content || 'x' = co_manifest_event")], "[lob] a CLOB compared with ="),
    "JSON_VALUE RETURNING CLOB compared": (
        [(MANIFEST_STORE, MANIFEST_FILTER, "and json_value(m.content_json, '$.a' returning clob) = co_manifest_event")],
        "[lob] a CLOB compared with ="),
    "a CLOB in an IN list": (
        [(MANIFEST_STORE, MANIFEST_FILTER, "and m.content in ('a', 'b')")], "[lob] a CLOB compared with IN"),
    "a CLOB in BETWEEN": (
        [(MANIFEST_STORE, MANIFEST_FILTER, "and m.content between 'a' and 'b'")], "[lob] a CLOB compared with BETWEEN"),
    "a join on CLOB columns": (
        [(MANIFEST_STORE, MANIFEST_SELECT + "\n        from conversation_memory m",
          MANIFEST_SELECT + "\n        from conversation_memory m join entity_memory e on e.content = m.content")],
        "[lob] a CLOB compared with ="),
    "a JSON-type column compared": (
        [(MANIFEST_STORE, MANIFEST_FILTER, "and m.content_json = co_manifest_event")],
        "[lob] a JSON-type value compared with = (ORA-40796)"),
    "a CLOB in ORDER BY (by position)": (
        [(MANIFEST_STORE, MANIFEST_END, "         and m.status = 'active'\n       order by 1;\n      return l_manifest;")],
        "[lob] a CLOB in ORDER BY"),
    "a CLOB in ORDER BY (a column)": (
        [(RETRIEVAL, "order by score(1) desc, r.id, r.version", "order by r.content, r.id, r.version")],
        "ctx_retrieval.body.sql:{line}: [lob] a CLOB in ORDER BY"),
    "a CLOB in a JSON aggregate's ORDER BY, its RETURNING clause after it": (
        [(TOOLS, "                order by t.tool_name", "                order by t.usage_notes")],
        "ctx_tools.body.sql:{line}: [lob] a CLOB in ORDER BY"),
    "a CLOB in a JSON aggregate's ORDER BY, NULL ON NULL after it": (
        [(MANIFEST_STORE, MANIFEST_SELECT, "select json_arrayagg(m.id order by m.content desc null on null)\n"
                                     "        into l_manifest")],
        "[lob] a CLOB in ORDER BY"),
    "a CLOB in GROUP BY": (
        [(MANIFEST_STORE, MANIFEST_SELECT, "select count(*)\n        into l_manifest"),
         (MANIFEST_STORE, MANIFEST_END,
          "         and m.status = 'active'\n       group by m.content;\n      return l_manifest;")],
        "[lob] a CLOB in GROUP BY"),
    "a CLOB in PARTITION BY": (
        [(MANIFEST_STORE, MANIFEST_SELECT, "select row_number() over (partition by m.content order by m.id)\n"
                                     "        into l_manifest")],
        "[lob] a CLOB in PARTITION BY"),
    "a CLOB in SELECT DISTINCT": (
        [(MEMORY, "select distinct r.derived_id", "select distinct r.content")], "[lob] a CLOB in SELECT DISTINCT"),
    "a CLOB in COUNT(DISTINCT ...)": (
        [(MANIFEST_STORE, MANIFEST_SELECT, "select count(distinct m.content)\n        into l_manifest")],
        "[lob] a CLOB in an aggregate's DISTINCT"),
    "a CLOB in MAX()": (
        [(MANIFEST_STORE, MANIFEST_SELECT, "select max(m.content)\n        into l_manifest")], "[lob] a CLOB in MAX()"),
    "a CLOB as a simple CASE's selector": (
        [(MANIFEST_STORE, MANIFEST_SELECT, "select case m.content when 'a' then 'b' end\n        into l_manifest")],
        "[lob] a CLOB in a simple CASE's selector"),
    "a CLOB column in a UNION": (
        [(MANIFEST_STORE, MANIFEST_SELECT + "\n        from conversation_memory m",
          "select x.c into l_manifest from (select q.content as c from conversation_memory q union "
          "select to_clob('x') from dual) x, conversation_memory m")],
        "[lob] column c is a LOB in UNION"),
    # --- identifier, literal and size limits ---------------------------------------------------------------------
    "an identifier over 128 bytes": (
        [(SESSION, PAYLOAD_LOCALS,
          "      l_tenant_id varchar2(4096);\n      l_" + "x" * 130 + " number;\n   begin")],
        "[limits] identifier l_xxxx"),
    "a text literal over 4000 bytes in SQL": (
        [(SESSION, TENANT_LOOKUP, "       where t.tenant_id = '" + "y" * 4100 + "';")],
        "[limits] a 4100-byte text literal in SQL: at most 4000 bytes (MAX_STRING_SIZE=STANDARD; ORA-01704)"),
    "a text literal over 32767 bytes in PL/SQL": (
        [(SESSION, "      l_tenant_id := l_payload.get_string('tenant');",
          "      l_tenant_id := '" + "z" * 33000 + "';")],
        "[limits] a 33000-byte text literal in PL/SQL"),
    "VARCHAR2(5000) in a CAST inside SQL": (
        [(SESSION, TENANT_LOOKUP, "       where t.tenant_id = cast(l_tenant_id as varchar2(5000));")],
        "[limits] VARCHAR2(5000) in SQL (MAX_STRING_SIZE=STANDARD): 1 to 4000 (ORA-00910)"),
    "VARCHAR2(4001) in a table": (
        [(TABLES, "   guideline_key  varchar2(128) not null,", "   guideline_key  varchar2(4001) not null,")],
        "memory_tables.sql:{line}: [limits] VARCHAR2(4001) in SQL"),
    "RAW(2001) in a table": (
        [(TABLES, "   guideline_key  varchar2(128) not null,", "   guideline_key  raw(2001) not null,")],
        "[limits] RAW(2001) in SQL (MAX_STRING_SIZE=STANDARD): 1 to 2000"),
    "VARCHAR2(40000) in PL/SQL": (
        [(SESSION, "      l_tenant_id varchar2(4096);", "      l_tenant_id varchar2(40000);")],
        "[limits] VARCHAR2(40000) in PL/SQL: 1 to 32767 (PLS-00215)"),
    "NUMBER(39)": (
        [(SESSION, "      l_tenant_id varchar2(4096);", "      l_tenant_id number(39);")],
        "[limits] NUMBER precision 39: 1 to 38 (ORA-01727)"),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_rule_fails_on_a_mutant(repo_copy: Path, name: str) -> None:
    edits, expected = MUTANTS[name]
    expected = expected.replace("{line}", str(_mutated_line(repo_copy, edits[0])))
    findings = _findings(repo_copy, edits)
    assert any(expected in finding for finding in findings), "\n".join(findings) or "the gate found nothing"


def test_boolean_in_sql_fails_before_release_23_only(repo_copy: Path) -> None:
    edits = [(SESSION, PAYLOAD_LOCALS, "      l_tenant_id varchar2(4096);\n      l_flag boolean := true;\n   begin"),
             (SESSION, TENANT_LOOKUP, "       where t.tenant_id = l_tenant_id and l_flag and true;")]
    assert _findings(repo_copy, edits) == []
    before = _findings(repo_copy, edits, release=19)
    assert any("[plsql-only-in-sql] the BOOLEAN l_flag in SQL: release 19" in f for f in before), before
    assert any("[plsql-only-in-sql] the BOOLEAN literal TRUE in SQL" in f for f in before), before


def test_string_limits_follow_max_string_size(repo_copy: Path) -> None:
    edits = [(SESSION, TENANT_LOOKUP, "       where t.tenant_id = cast(l_tenant_id as varchar2(5000));")]
    assert _findings(repo_copy, edits) != []
    assert _findings(repo_copy, edits, max_string_size="EXTENDED") == []


def test_filter_widths_follow_the_deployments_length_semantics(repo_copy: Path) -> None:
    edits = [(INDEXES, CONVERSATION_FILTER,
              CONVERSATION_FILTER.replace("filter by tenant_id", "filter by tenant_id, user_id"))]
    assert _findings(repo_copy, edits)
    # under BYTE semantics varchar2(64) is 64 bytes; the gate then says the deployment sets CHAR
    assert _findings(repo_copy, edits, length_semantics="BYTE") == [
        "scripts/oracle-dev:1: [text-filter] the gate checks NLS_LENGTH_SEMANTICS=BYTE, the deployment sets CHAR"]


def test_the_gate_reads_the_length_semantics_the_deployment_sets(repo_copy: Path) -> None:
    assert length_semantics_of(REPO) == "CHAR"
    assert for_repository(REPO).length_semantics == "CHAR"
    script = repo_copy / "scripts" / "oracle-dev"
    text = script.read_text(encoding="utf-8")
    try:
        script.write_text(text.replace("nls_length_semantics = char", "nls_length_semantics = byte"), encoding="utf-8")
        assert for_repository(repo_copy).length_semantics == "BYTE"
    finally:
        script.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("declared, semantics, expected", [
    ("varchar2(64)", "CHAR", 256), ("varchar2(64)", "BYTE", 64), ("varchar2(64 byte)", "CHAR", 64),
    ("varchar2(64 char)", "BYTE", 256), ("varchar2(4000)", "CHAR", 4000), ("raw(16)", "CHAR", 16),
    ("nvarchar2(10)", "CHAR", 20), ("number(10)", "CHAR", None), ("clob", "CHAR", None),
])
def test_column_widths_in_bytes(declared: str, semantics: str, expected: int | None) -> None:
    deployment = Deployment(length_semantics=semantics)
    assert deployment.column_bytes(declared) == expected
    assert DEPLOYMENT.release == 23 and DEPLOYMENT.max_string_size == "STANDARD"


def test_every_rule_has_a_row_in_the_oracle_readiness_table() -> None:
    """docs/oracle.md's "Oracle readiness" names the gate rule of each class; scripts/oracle-dev prints the row."""
    from ctxasm_dev.oracle_failure import readiness_rows

    rows = readiness_rows(REPO)
    assert rows and all(len(row) == 5 for row in rows)
    covered = " ".join(row[2] for row in rows)
    rules = {line.split()[0] for line in oracle_semantics.__doc__.split("\n")
             if line.startswith("  ") and line.split() and not line.startswith("   ")}
    assert rules == {"plsql-only-in-sql", "sql-only-in-plsql", "boolean-conversion", "text-score", "text-index",
                     "text-filter", "lob", "limits"}
    for rule in rules:
        assert f"`{rule}`" in covered, f"no row of the readiness table names the rule {rule}"
