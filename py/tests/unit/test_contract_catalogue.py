"""The contract catalogue (contract/*.toml) and what Python reads of it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxasm import contract_constants, error_bases, error_classes, errors, memory_types
from ctxasm.core import budget, render
from ctxasm_dev.contract import catalogue, generate, versions
from ctxasm_dev.contract.targets import CATALOGUE_DIR, TARGETS
from ctxasm_dev.gates import contract_check, contract_generated, oracle_api, oracle_names, oracle_parse, selection_steps

REPO = Path(__file__).resolve().parents[3]
ERRORS = catalogue.load(REPO).errors


@pytest.mark.parametrize("entry", ERRORS, ids=[e.name for e in ERRORS])
def test_every_catalogue_error_has_its_class_mapped_both_ways(entry: catalogue.ContractError) -> None:
    cls = getattr(errors, entry.python_class)
    assert cls.__module__ == "ctxasm.error_classes"
    assert (cls.code, cls.number, cls.summary) == (entry.name, entry.number, entry.message)
    assert cls.__bases__ == (getattr(error_bases, entry.python_base or
                                     ("DatabaseError" if entry.engines else "NumberedError")),)
    assert str(cls()) == f"{entry.name}: {entry.message}"
    if entry.engines:
        assert cls.sqlstate == entry.sqlstate
        assert type(errors.from_sqlstate(entry.sqlstate, f"{entry.name}: x")) is cls
        assert type(errors.from_oracle_message(f"ORA{entry.oracle_code}: {entry.name}: x")) is cls
        assert str(errors.from_oracle_message(f"ORA{entry.oracle_code}: {entry.name}: x")) == f"{entry.name}: x"
    else:
        assert errors.from_sqlstate(entry.sqlstate, "x") is None
        assert errors.from_oracle_message(f"ORA{entry.oracle_code}: {entry.name}: x") is None
    assert error_classes.CONTRACT_ERRORS == tuple(getattr(errors, e.python_class) for e in ERRORS)


def test_hand_written_behaviour_comes_from_the_base_the_catalogue_names() -> None:
    refused = errors.InvalidBudget.at("shares.fact_check", "must be a JSON object")
    assert isinstance(refused, errors.FieldProblemError) and isinstance(refused, errors.DatabaseError)
    assert (str(refused), refused.field, refused.problem) == \
        ("invalid_budget: shares.fact_check: must be a JSON object", "shares.fact_check", "must be a JSON object")
    from_database = errors.from_sqlstate("CX112", "invalid_budget: two budgets are in effect")
    assert isinstance(from_database, errors.InvalidBudget) and from_database.field is None


def test_python_reads_the_catalogue_constants() -> None:
    assert budget.MAX_CANDIDATE_LIMIT == contract_constants.MAX_CANDIDATE_LIMIT
    assert memory_types.TABLE_OF["kb_chunk"] == "knowledge_base_chunk"
    assert render.RENDERER_VERSION.startswith("renderer-")


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


@pytest.fixture()
def repo_copy(tmp_path: Path) -> Path:
    """What the generator and the static gates read: the catalogue, db/, liquibase/, docs/ and the package."""
    for folder in (CATALOGUE_DIR, "db", "liquibase", "docs", "py/ctxasm"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_a_new_error_is_one_catalogue_edit(repo_copy: Path, capsys) -> None:
    copy = repo_copy
    _append(copy / "contract/errors.toml", '\n[[error]]\nname = "window_too_large"\nnumber = 121\n'
                                           'python_class = "WindowTooLarge"\npython_base = "FieldProblemError"\n'
                                           'message = "the window is too large"\nwhen = "a test"\n')
    generate.write(copy)
    spec = (copy / "db/oracle/internal/ctx_errors.spec.sql").read_text()
    assert "co_window_too_large constant pls_integer := -20121;" in re.sub(" +", " ", spec)
    assert "pragma exception_init(e_window_too_large, -20121);" in spec
    body = (copy / "db/oracle/internal/ctx_errors.body.sql").read_text()
    assert "when co_window_too_large then 'the window is too large'" in body
    assert "THEN 'CX121'" in (copy / TARGETS["pg_errors"]).read_text()
    docs = (copy / "docs/contract.md").read_text()
    assert "| `window_too_large` | -20121 | CX121 | `WindowTooLarge` | a test |" in docs
    # the copy's package, imported afresh: the generated class derives from the base the entry names, and a
    # raised CX121 / ORA-20121 maps to it
    probe = ("from ctxasm import errors, error_bases\n"
             "cls = errors.WindowTooLarge\n"
             "assert cls.__module__ == 'ctxasm.error_classes', cls.__module__\n"
             "assert cls.__bases__ == (error_bases.FieldProblemError,), cls.__bases__\n"
             "assert type(errors.from_sqlstate('CX121', 'window_too_large: x')) is cls\n"
             "assert type(errors.from_oracle_message('ORA-20121: window_too_large: x')) is cls\n"
             "print(cls.at('max_tokens', 'too many'), '|', cls())\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False, cwd=copy,
                         env={**os.environ, "PYTHONPATH": str(copy / "py")})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "window_too_large: max_tokens: too many | window_too_large: the window is too large"
    # the gates pass on the copy (oracle_parse on the files the edit changed: the others are as in the repository)
    changed = [TARGETS["ora_errors_spec"], TARGETS["ora_errors_body"]]
    for gate, argv in ((contract_generated, []), (contract_check, []), (oracle_api, []), (oracle_names, []),
                       (oracle_parse, [str(copy / path) for path in changed])):
        assert gate.main(["--repo", str(copy), *argv]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("python_class, base, need", [
    ("InvalidClaim", "NoSuchBase", "DatabaseError"),
    ("InvalidClaim", "NumberedError", "DatabaseError"),
    ("ToolRefused", "FieldProblemError", "NumberedError and not from DatabaseError"),
])
def test_a_python_base_must_derive_from_the_plain_base(catalogue_copy: Path, python_class: str, base: str,
                                                       need: str) -> None:
    path = catalogue_copy / "contract/errors.toml"
    path.write_text(path.read_text().replace(f'python_class = "{python_class}"\n',
                                             f'python_class = "{python_class}"\npython_base = "{base}"\n'))
    with pytest.raises(catalogue.CatalogueError, match=f"python_base '{base}' is not a class of ctxasm.error_bases "
                                                       f"deriving from {need}"):
        generate.generate(catalogue_copy)


def test_a_column_for_every_memory_type_is_one_catalogue_edit(catalogue_copy: Path) -> None:
    _append(catalogue_copy / "contract/memory_types.toml", "")
    text = (catalogue_copy / "contract/memory_types.toml").read_text()
    text = text.replace("\n[[type]]", '\n[[shared_column]]\nname = "region"\npg = "varchar(64)"\n'
                                      'oracle = "varchar2(64)"\nnullable = true\nddl = "catalogue"\n'
                                      'note = "where the row came from"\n\n[[type]]', 1)
    (catalogue_copy / "contract/memory_types.toml").write_text(text)
    generate.write(catalogue_copy)
    pg = (catalogue_copy / "db/postgresql/schema/catalogue/catalogue_columns.sql").read_text()
    oracle = (catalogue_copy / "db/oracle/schema/catalogue/catalogue_columns.sql").read_text()
    tables = [t.table for t in catalogue.load(catalogue_copy).types]
    for table in tables:
        assert f"ALTER TABLE ctxasm.{table} ADD COLUMN region varchar(64);" in pg
        assert f"ALTER TABLE ctxasm.{table}_history ADD COLUMN region varchar(64);" in pg
        assert f"alter table {table} add (region varchar2(64));" in oracle
    docs = (catalogue_copy / "docs/contract.md").read_text()
    assert "| region | varchar(64) | varchar2(64) | where the row came from |" in docs


def test_a_catalogue_error_names_file_entry_and_field(catalogue_copy: Path) -> None:
    path = catalogue_copy / "contract/memory_types.toml"
    path.write_text(path.read_text().replace('name = "guideline"\ntable = "guideline_memory"',
                                             'name = "guideline"\ntable = "Guideline Memory"'))
    with pytest.raises(catalogue.CatalogueError, match="memory_types.toml: type guideline: table 'Guideline Memory'"):
        catalogue.load(catalogue_copy)


def test_the_version_ignores_comments_and_the_version_literal_itself() -> None:
    rule = catalogue.VersionRule("t", "selection", ("a",), "a")
    code = "SELECT 'selection-000000000000';\nSELECT 1;\n"
    same = "-- a comment\nSELECT 'selection-0123456789ab';   \n\n/* a\nblock */SELECT 1;\n"
    other = "SELECT 'selection-000000000000';\nSELECT 2;\n"
    assert versions.digest(rule, {"x.sql": code}) == versions.digest(rule, {"x.sql": same})
    assert versions.digest(rule, {"x.sql": code}) != versions.digest(rule, {"x.sql": other})


@pytest.mark.parametrize("engine", ["postgresql", "oracle"])
def test_select_window_runs_the_catalogue_steps_in_order(engine: str) -> None:
    steps = selection_steps.postgres_steps(REPO) if engine == "postgresql" else selection_steps.oracle_steps(REPO)
    assert steps is not None
    assert tuple(s for s in steps if s not in selection_steps.OPTIONAL_STEPS) == contract_constants.SELECTION_STEPS


def test_oracle_select_window_calls_the_catalogue_steps_in_order() -> None:
    """CTX_SELECTION defines one <rule>_step per rule in rule order, and select_window calls them in that order
    (required_step, Oracle's own, sits between conflict and score)."""
    import re

    selection = (REPO / "db/oracle/internal/ctx_selection.body.sql").read_text(encoding="utf-8")
    defined = [m.group(1) for m in re.finditer(r"^\s*function (\w+)_step\s*\(", selection, re.MULTILINE)]
    assembly = (REPO / "db/oracle/api/ctx_assembly.body.sql").read_text(encoding="utf-8")
    window = assembly[assembly.index("   function select_window("):assembly.index("   end select_window;")]
    called = [m.group(1) for m in re.finditer(r"ctx_selection\.(\w+)_step\(", window)]
    assert defined == called
    assert tuple(s for s in defined if s != "required") == contract_constants.SELECTION_STEPS


# --- the Oracle per-type unions (py/ctxasm_dev/contract/unions_oracle.py) ------------------------------------

NOTE_TYPE = """
[[type]]
name = "note"
table = "note_memory"
slice = "durable_facts"
authority = 9
searchable = true
embedded = true
enumerated = "facts"
candidate_status = "current"
columns = [
  { name = "note_key", pg = "varchar(128)", oracle = "varchar2(128)", nullable = false, row = "key_name" },
  { name = "noted_at", pg = "timestamptz", oracle = "timestamp with time zone", nullable = true },
  { name = "weight", pg = "integer", oracle = "number(10)", nullable = true },
  { name = "embedding", pg = "vector(384)", oracle = "vector(384, float32)", nullable = true, row = "embedding" },
]
"""

REGION_COLUMN = ('[[shared_column]]\nname = "region"\npg = "varchar(64)"\noracle = "varchar2(64)"\nnullable = true\n'
                 'ddl = "catalogue"\nnote = "where the row was written"\n\n')

#: the table a new type needs on Oracle: its base DDL is hand-written (the catalogue adds columns, not tables)
NOTE_TABLE = """--liquibase formatted sql

--changeset ctxasm:ora-0021-01-note-memory dbms:oracle
--comment: notes (a memory type the catalogue test adds)
create table note_memory (
   tenant_id     varchar2(64) not null,
   id            varchar2(128) not null,
   version       number(10) default 1 not null,
   user_id       varchar2(64),
   agent_id      varchar2(64),
   thread_id     varchar2(64),
   status        varchar2(16) default 'active' not null,
   valid_from    timestamp with time zone default systimestamp not null,
   valid_until   timestamp with time zone,
   deleted_at    timestamp with time zone,
   content       clob not null,
   content_json  json,
   source_refs   json default json('[]') not null,
   created_at    timestamp with time zone default systimestamp not null,
   content_tokens number(10),
   note_key      varchar2(128) not null,
   noted_at      timestamp with time zone,
   weight        number(10),
   embedding     vector(384, float32),
   text_key      varchar2(32),
   pointer_text  varchar2(64),
   constraint note_memory_pk primary key (tenant_id, id, version)
);
--rollback drop table note_memory purge;
"""

ORACLE_GENERATED = ("db/oracle/internal/ctx_sources.body.sql", "db/oracle/internal/ctx_selection.body.sql",
                    "db/oracle/schema/ctx_selection_candidate.sql", "db/oracle/api/ctx_tools.body.sql",
                    "db/oracle/api/ctx_admin.body.sql", "db/oracle/api/ctx_memory.body.sql",
                    "db/oracle/security/vpd_policies.sql")


def _region(text: str, name: str) -> str:
    start = text.index(f"-- generated: {name} ")
    return text[start:text.index(f"-- end generated: {name}\n", start)]


def _add_note_type_and_region_column(repo: Path) -> None:
    path = repo / "contract/memory_types.toml"
    text = path.read_text(encoding="utf-8").replace("\n[[row_slot]]", "\n" + REGION_COLUMN + "[[row_slot]]", 1)
    path.write_text(text + NOTE_TYPE, encoding="utf-8")
    (repo / "db/oracle/schema/note_memory.sql").write_text(NOTE_TABLE, encoding="utf-8")
    master = repo / "liquibase/changelog-master.yaml"
    anchor = "      file: db/oracle/schema/memory_tables.sql\n"
    master.write_text(master.read_text(encoding="utf-8").replace(
        anchor, anchor + "  - include:\n      file: db/oracle/schema/note_memory.sql\n", 1), encoding="utf-8")


@pytest.mark.slow  # every Oracle gate over a copy of the tree, sqlfluff and Liquibase among them
def test_a_new_type_and_a_shared_column_reach_every_oracle_union(repo_copy: Path, capsys) -> None:
    from ctxasm_dev.gates import contract_check, liquibase_render, oracle_api, oracle_names, oracle_parse

    deployed_vpd = (repo_copy / "db/oracle/security/vpd_policies.sql").read_text(encoding="utf-8")
    before = {path: (repo_copy / path).read_text(encoding="utf-8") for path in ORACLE_GENERATED}
    _add_note_type_and_region_column(repo_copy)
    generate.write(repo_copy)
    assert generate.stale(repo_copy) == []
    after = {path: (repo_copy / path).read_text(encoding="utf-8") for path in ORACLE_GENERATED}
    assert all(after[path] != before[path] for path in ORACLE_GENERATED)
    types = catalogue.load(repo_copy).types
    sources = after["db/oracle/internal/ctx_sources.body.sql"]
    selection = after["db/oracle/internal/ctx_selection.body.sql"]

    live, as_of = _region(sources, "live memory rows"), _region(sources, "memory rows as of")
    branches = live.split("union all") + as_of.split("union all")
    assert len(branches) == 2 * sum(1 for t in types if t.slice)
    assert all(b.rstrip().endswith("'") for b in branches)  # where f.memory_type = '<type>'
    # the added shared column is the last column of every branch, named in the first
    assert all("t.region\n" in b for b in branches) and "t.content_tokens," in branches[0]
    note = [b for b in branches if "join note_memory" in b]
    assert len(note) == 2 and "join note_memory as of scn l_read_scn t" in note[1]
    for branch in (" ".join(b.split()) for b in note):
        assert "t.note_key, null, null, null, null, null, null," in branch  # key_name, then the other slots
        assert ("json_object('noted_at' value ctx_json.iso_utc(in_timestamp => t.noted_at), "
                "'weight' value t.weight null on null returning clob)") in branch
        assert "vector_distance(t.embedding, to_vector(l_query_vector, 384, float32), cosine)" in branch
        assert "coalesce(t.text_key, ctx_memory.text_key(in_text => t.content))" in branch
    assert "join note_memory e" in _region(sources, "erased now")
    assert "when 'note' then 'durable_facts'" in _region(selection, "slice for type")
    # the added column reaches the candidate rows: an attribute, and an argument of each constructor
    candidate = after["db/oracle/schema/ctx_selection_candidate.sql"]
    assert "region " in _region(candidate, "candidate row attributes")
    assert "r.region," in _region(sources, "live row tail") and "r.region," in _region(sources, "row tail as of")
    assert _region(sources, "source row tail").count("null,") == 2
    expand = _region(after["db/oracle/api/ctx_tools.body.sql"], "expand rows")
    assert "t.content, t.note_key\n                     from note_memory t" in expand
    assert "region" not in expand  # expand returns the same document on both engines
    assert "delete from note_memory m where m.tenant_id = l_tenant_id;" in after["db/oracle/api/ctx_admin.body.sql"]
    memory = after["db/oracle/api/ctx_memory.body.sql"]
    assert "'source_ref', 'note');" in " ".join(_region(memory, "inventory types").split())
    assert "when 'note' then 'NOTE_MEMORY'" in _region(memory, "table for type")
    # the deployed policy changesets stay byte for byte; the new table gets a changeset of its own
    vpd = after["db/oracle/security/vpd_policies.sql"]
    assert vpd.startswith(deployed_vpd)
    assert "--changeset ctxasm:ora-sec-0020-12-note-memory-tenant dbms:oracle" in vpd[len(deployed_vpd):]
    assert "policy_name     => 'NOTE_MEMORY_TENANT'," in vpd

    # the static gates pass on the copy
    repo = str(repo_copy)
    assert oracle_names.main(["--repo", repo]) == 0
    assert oracle_api.main(["--repo", repo]) == 0
    assert contract_check.main(["--repo", repo]) == 0
    # sqlfluff takes a while over CTX_SOURCES' body and CTX_MEMORY's (test_gates parses both in the repository):
    # the other files whole, the regions of memory_rows, erased_now and the slice CASE as one query
    parsed = ("db/oracle/api/ctx_tools.body.sql", "db/oracle/api/ctx_admin.body.sql",
              "db/oracle/security/vpd_policies.sql", "db/oracle/schema/note_memory.sql",
              "db/oracle/schema/ctx_selection_candidate.sql")
    assert oracle_parse.main(["--repo", repo, *(str(repo_copy / p) for p in parsed)]) == 0
    # (of memory_rows, the header branch and the new type's: the others differ from the header only in values)
    rows = "union all".join([branches[0], *note])
    query = (f"with sources as (select memory_type, id, version from dual),\nmemory_rows as (\n{rows}\n),\n"
             f"erased_now as (\n{_region(sources, 'erased now')}\n)\n"
             f"select case r.memory_type\n{_region(selection, 'slice for type')}\n end as slice\n"
             "from memory_rows r where not exists (select 1 from erased_now x where x.id = r.id)")
    assert oracle_parse.parse_errors(query) == []
    try:
        liquibase_render.liquibase_executable()
    except Exception as error:  # no CLI or no Java on this machine: say so, never pretend
        pytest.skip(f"Liquibase CLI not runnable here: {error}")
    assert liquibase_render.main(["--repo", repo]) == 0, capsys.readouterr().out


def test_a_new_type_reaches_every_per_type_branch_of_a_window_on_both_engines(repo_copy: Path) -> None:
    """Enumeration, the facts count, the citing types, citations, cited claims and the candidate status are
    generated regions (PostgreSQL reads the citations from the candidate rows: its region is the citing types):
    a type the catalogue adds (durable facts that cite, here) is in each; a branch left hand-written would miss
    it."""
    from ctxasm_dev.contract import per_type

    _add_note_type_and_region_column(repo_copy)
    path = repo_copy / "contract/memory_types.toml"
    path.write_text(path.read_text(encoding="utf-8").replace('candidate_status = "current"\ncolumns = [\n'
                                                             '  { name = "note_key"',
                                                             'candidate_status = "current"\ncites = true\n'
                                                             'columns = [\n  { name = "note_key"'), encoding="utf-8")
    generate.write(repo_copy)
    assert generate.stale(repo_copy) == []
    pg_sources = (repo_copy / "db/postgresql/internal/ctx_sources.sql").read_text(encoding="utf-8")
    pg_selection = (repo_copy / "db/postgresql/internal/ctx_selection.sql").read_text(encoding="utf-8")
    ora_sources = (repo_copy / "db/oracle/internal/ctx_sources.body.sql").read_text(encoding="utf-8")
    ora_selection = (repo_copy / "db/oracle/internal/ctx_selection.body.sql").read_text(encoding="utf-8")

    assert "'note', 'note_memory', 'durable_facts'" in _region(pg_sources, "enumerated facts")
    assert "note" not in _region(pg_sources, "enumerated by scope")
    assert "'note', 'note_memory', 'durable_facts'" in _region(pg_sources, "facts counted")
    assert "IN ('conversation', 'summary', 'note')" in _region(pg_sources, "history types")
    # PostgreSQL reads the citations from the candidate rows already read: the history types are its only region.
    assert "WHEN 'note' THEN 'current'" in _region(pg_selection, "candidate status")

    assert "select 'note', n.id, n.version, 'scope', co_facts\n                  from note_memory n\n" \
           "                 where in_with_facts = 1" in _region(ora_sources, "enumerated facts")
    assert "from note_memory n" in _region(ora_sources, "facts counted")
    assert "in ('conversation', 'summary', 'note')" in _region(ora_sources, "history types")
    assert "join note_memory n" in _region(ora_sources, "citing rows")
    cited = _region(ora_sources, "cited rows")
    assert "json_value(t.content_json, '$.claim.subject') as subject" in cited.split("union all")[0]
    assert "join note_memory t on t.tenant_id = in_tenant_id" in cited.split("union all")[-1]
    assert "when 'note' then 'current'" in _region(ora_selection, "candidate status")
    ora_retrieval = (repo_copy / "db/oracle/internal/ctx_retrieval.body.sql").read_text(encoding="utf-8")
    lexical = _region(ora_retrieval, "lexical durable facts")
    assert "from note_memory r\n" in lexical and "contains(r.content, in_probe, 7) > 0" in lexical
    assert "note" not in _region(ora_retrieval, "lexical evidence")
    nearest = _region(ora_retrieval, "nearest durable facts")
    assert "select 'note', n.id, n.version, n.distance" in nearest and "from note_memory r\n" in nearest
    # the Oracle slice constant comes from CTX_RULES' declarations; a slice without one is named
    assert per_type.oracle_slice_constants((repo_copy / "db/oracle/internal/ctx_rules.spec.sql").read_text())[
        "durable_facts"] == "co_facts"


def test_a_type_field_outside_its_values_is_a_catalogue_error(catalogue_copy: Path) -> None:
    path = catalogue_copy / "contract/memory_types.toml"
    path.write_text(path.read_text(encoding="utf-8").replace('enumerated = "facts"\n',
                                                             'enumerated = "always"\n', 1), encoding="utf-8")
    with pytest.raises(catalogue.CatalogueError, match="type entity: enumerated must be one of"):
        catalogue.load(catalogue_copy)


@pytest.mark.parametrize("name, says", [("extra", "memory_rows (CTX_SOURCES) already has a column extra"),
                                        ("slice", "ctx_selection_candidate (db/oracle/schema/ctx_selection_candidate.sql) "
                                                  "already has an attribute slice"),
                                        ("created_at", "ddl 'catalogue' for a column the base tables already have")])
def test_a_shared_column_oracle_could_not_carry_is_a_catalogue_error(catalogue_copy: Path, name: str,
                                                                     says: str) -> None:
    path = catalogue_copy / "contract/memory_types.toml"
    text = path.read_text(encoding="utf-8")
    if name == "created_at":
        text = text.replace('name = "created_at"\n', 'name = "created_at"\nddl = "catalogue"\n', 1)
    else:
        text = text.replace("\n[[row_slot]]", "\n" + REGION_COLUMN.replace('"region"', f'"{name}"') + "[[row_slot]]", 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(catalogue.CatalogueError, match=re.escape(f"shared_column {name}: ") + ".*" + re.escape(says)):
        generate.generate(catalogue_copy)


def test_an_embedded_type_must_fill_the_embedding_slot(catalogue_copy: Path) -> None:
    path = catalogue_copy / "contract/memory_types.toml"
    path.write_text(path.read_text(encoding="utf-8") + NOTE_TYPE.replace(', row = "embedding"', ""), encoding="utf-8")
    with pytest.raises(catalogue.CatalogueError,
                       match='type note: embedded = true, yet no column has row = "embedding"'):
        generate.generate(catalogue_copy)


def test_the_deployed_vpd_changesets_never_change(catalogue_copy: Path) -> None:
    path = catalogue_copy / "contract/memory_types.toml"
    text = path.read_text(encoding="utf-8")
    persona = text.index('[[type]]\nname = "persona"')
    toolbox = text.index('[[type]]\nname = "toolbox"')
    path.write_text(text[:persona] + text[toolbox:] + "\n" + text[persona:toolbox], encoding="utf-8")
    with pytest.raises(catalogue.CatalogueError, match="the deployed VPD changeset ctxasm:ora-sec-0020-02-"):
        generate.generate(catalogue_copy)
