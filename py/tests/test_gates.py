"""The static Oracle gates: each passes on the repository and fails on a deliberately broken copy of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctxasm_dev.contract.targets import TARGETS
from ctxasm_dev.gates import (contract_check, formatted_sql, liquibase_render, oracle_api, oracle_catalog, oracle_names,
                              oracle_parse, plsql_resolver)

REPO = Path(__file__).resolve().parents[2]
MEMORY_BODY = "db/oracle/api/ctx_memory.body.sql"
BINDER_SPEC = "db/oracle/internal/ctx_row_binder.spec.sql"
BINDER_BODY = "db/oracle/internal/ctx_row_binder.body.sql"
JSON_BODY = "db/oracle/internal/ctx_json.body.sql"
ASSEMBLY_BODY = "db/oracle/api/ctx_assembly.body.sql"
SELECTION_BODY = "db/oracle/internal/ctx_selection.body.sql"
RULES_BODY = "db/oracle/internal/ctx_rules.body.sql"
RETRIEVAL_BODY = "db/oracle/internal/ctx_retrieval.body.sql"
PG_MEMORY = "db/postgresql/api/ctx_memory.sql"


@pytest.fixture()
def repo_copy(tmp_path: Path) -> Path:
    """A copy of the parts of the repository the gates read, to break on purpose."""
    for folder in ("db", "liquibase", "contract"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "docs" / "contract.md", tmp_path / "docs" / "contract.md")
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"fixture text not found in {path}: {old!r}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _java_or_skip() -> None:
    try:
        liquibase_render.liquibase_executable()
    except Exception as error:  # no CLI or no Java on this machine: say so, never pretend
        pytest.skip(f"Liquibase CLI not runnable here: {error}")


# --- the splitter every gate relies on ------------------------------------------------------------------


def test_splitter_reads_changesets_and_statements(tmp_path: Path) -> None:
    path = tmp_path / "x.sql"
    path.write_text(
        "--liquibase formatted sql\n\n"
        "--changeset ctxasm:a-1 dbms:oracle\n--comment: two tables\n"
        "create table a (x varchar2(1) default ';');\ncreate table b (y number);\n--rollback drop table a;\n\n"
        "--changeset ctxasm:a-2 dbms:oracle endDelimiter:/ stripComments:false\n"
        "begin\n   null; -- a ; in a comment\nend;\n/\n",
        encoding="utf-8")
    changelog = formatted_sql.read_changelog(path)
    assert changelog.has_header
    assert [c.id for c in changelog.changesets] == ["a-1", "a-2"]
    plain, _ = formatted_sql.statements_of(changelog.changesets[0])
    assert [s.text for s in plain] == ["create table a (x varchar2(1) default ';')", "create table b (y number)"]
    assert changelog.changesets[0].rollback_lines == [7]
    plsql, problems = formatted_sql.statements_of(changelog.changesets[1])
    assert problems == []
    assert len(plsql) == 1 and plsql[0].text.startswith("begin") and plsql[0].line == 10


def test_a_changeset_keeps_the_path_its_own_line_or_its_file_header_names(tmp_path: Path) -> None:
    path = tmp_path / "db" / "x.sql"
    path.parent.mkdir()
    path.write_text(
        "--liquibase formatted sql logicalFilePath:db/old/x.sql\n\n"
        "--changeset ctxasm:a-1 dbms:postgresql\nSELECT 1;\n\n"
        "--changeset ctxasm:a-2 dbms:postgresql logicalFilePath:db/old/folded.sql\nSELECT 2;\n",
        encoding="utf-8")
    changelog = formatted_sql.read_changelog(path)
    assert [changelog.identity_path(tmp_path, c) for c in changelog.changesets] == ["db/old/x.sql",
                                                                                     "db/old/folded.sql"]
    path.write_text("--liquibase formatted sql\n\n--changeset ctxasm:a-1 dbms:postgresql\nSELECT 1;\n",
                    encoding="utf-8")
    changelog = formatted_sql.read_changelog(path)
    assert changelog.identity_path(tmp_path, changelog.changesets[0]) == "db/x.sql"


# --- oracle_parse ---------------------------------------------------------------------------------------


@pytest.mark.repo_gate("oracle_parse")
@pytest.mark.slow  # sqlfluff over every Oracle file
def test_oracle_parse_passes_on_the_repository(capsys) -> None:
    assert oracle_parse.main(["--repo", str(REPO)]) == 0
    out = capsys.readouterr().out
    assert "oracle_parse: OK" in out


@pytest.mark.slow  # sqlfluff over CTX_MEMORY's body
def test_oracle_parse_fails_on_a_broken_package_body(repo_copy: Path, capsys) -> None:
    body = repo_copy / MEMORY_BODY
    # an IF without its END IF inside delete_memory
    _edit(body, "         not_found_error(in_memory_type => in_memory_type, in_id => in_id);\n      end if;\n"
                "   end delete_memory;",
          "         not_found_error(in_memory_type => in_memory_type, in_id => in_id);\n   end delete_memory;")
    assert oracle_parse.main(["--repo", str(repo_copy), str(body)]) == 1
    out = capsys.readouterr().out
    assert "db/oracle/api/ctx_memory.body.sql" in out
    assert "[changeset ora-pkg-0050-ctx-memory-body]" in out
    assert "routine delete_memory" in out


def test_oracle_parse_rejects_a_malformed_create_context(repo_copy: Path, capsys) -> None:
    _edit(repo_copy / "db/oracle/security/ctxasm_ctx.sql",
          "create or replace context ctxasm_ctx using ctx_session;",
          "create or replace context ctxasm_ctx usin ctx_session;")
    assert oracle_parse.main(["--repo", str(repo_copy), str(repo_copy / "db/oracle/security/ctxasm_ctx.sql")]) == 1
    out = capsys.readouterr().out
    assert "ctxasm_ctx.sql:5:" in out and "rule create-context" in out


def test_oracle_parse_rejects_a_broken_index_expression(repo_copy: Path, capsys) -> None:
    _edit(repo_copy / "db/oracle/schema/memory_tables.sql",
          "   case when status = 'active' then tenant_id end,",
          "   case when status = 'active' then tenant_id,")
    assert oracle_parse.main(["--repo", str(repo_copy), str(repo_copy / "db/oracle/schema/memory_tables.sql")]) == 1
    out = capsys.readouterr().out
    assert "ora-0020-01b-guideline-memory-one-active" in out and "key expression 1 does not parse" in out


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (" runOnChange:true endDelimiter:/ stripComments:false", " runOnChange:true stripComments:false",
         "needs endDelimiter:/"),
        ("dbms:oracle runOnChange:true", "dbms:postgresql runOnChange:true", "needs dbms:oracle"),
        ("      return to_char(sys.dbms_flashback.get_system_change_number);",
         "      return to_char(sys.dbms_flashback.get_system_change_number /\n      1);", "line ends with '/'"),
        ("end ctx_memory;\n/\n", "end ctx_memory;\n", "text after the last lone '/' line"),
    ],
)
@pytest.mark.slow  # sqlfluff over CTX_MEMORY's body
def test_oracle_parse_enforces_the_changeset_layout(repo_copy: Path, capsys, old: str, new: str,
                                                     message: str) -> None:
    _edit(repo_copy / MEMORY_BODY, old, new)
    assert oracle_parse.main(["--repo", str(repo_copy), str(repo_copy / MEMORY_BODY)]) == 1
    assert message in capsys.readouterr().out


def test_oracle_parse_requires_a_rollback_for_table_changes(repo_copy: Path, capsys) -> None:
    _edit(repo_copy / "db/oracle/schema/ctx_tenant.sql", "--rollback drop table ctx_tenant purge;\n", "")
    assert oracle_parse.main(["--repo", str(repo_copy), str(repo_copy / "db/oracle/schema/ctx_tenant.sql")]) == 1
    assert "without a --rollback" in capsys.readouterr().out


def test_known_gap_rules_are_needed_and_narrow() -> None:
    # If sqlfluff learns these forms, the rules become dead weight: this test says so.
    context = "create or replace context ctxasm_ctx using ctx_session"
    index = "create unique index i on t (case when s = 'a' then x end)"
    assert oracle_parse.parse_errors(context) and oracle_parse.parse_errors(index)
    assert oracle_parse._create_context(context)[0]
    assert oracle_parse._function_based_index(index)[0]
    assert not oracle_parse._create_context("create or replace context x using a b c")[0]
    assert not oracle_parse._function_based_index("create unique index i on t (x) garbage here")[0]
    assert oracle_parse._create_context("create table t (x number)") == (False, "")
    approximate = "select x from t order by vector_distance(e, :q, cosine) fetch approx first 5 rows only"
    assert oracle_parse.parse_errors(approximate)
    assert oracle_parse._approximate_fetch(approximate)[0]
    assert oracle_parse._approximate_fetch(approximate.replace("only", "only with target accuracy 90"))[0]
    assert not oracle_parse._approximate_fetch(approximate + " garbage here")[0]
    assert oracle_parse._approximate_fetch("select 1 from dual") == (False, "")


# --- liquibase_render -----------------------------------------------------------------------------------


MASTER = "liquibase/changelog-master.yaml"


@pytest.mark.repo_gate("liquibase_render")
@pytest.mark.slow  # Liquibase (Java)
def test_liquibase_render_passes_on_the_repository(capsys) -> None:
    _java_or_skip()
    assert liquibase_render.main(["--repo", str(REPO)]) == 0
    assert "liquibase_render: OK" in capsys.readouterr().out


@pytest.mark.slow  # Liquibase (Java)
def test_liquibase_render_fails_on_a_duplicate_changeset_id(repo_copy: Path, capsys) -> None:
    _java_or_skip()
    _edit(repo_copy / "db/oracle/schema/memory_tables.sql",
          "--changeset ctxasm:ora-0020-02a-persona-memory ", "--changeset ctxasm:ora-0020-01a-guideline-memory ")
    assert liquibase_render.main(["--repo", str(repo_copy), "--changelog", MASTER]) == 1
    out = capsys.readouterr().out
    assert "liquibase update-sql exited with" in out and "ora-0020-01a-guideline-memory" in out


@pytest.mark.slow  # Liquibase (Java)
def test_liquibase_render_fails_when_a_changeset_is_not_rendered_for_oracle(repo_copy: Path, capsys) -> None:
    _java_or_skip()
    _edit(repo_copy / "db/oracle/security/grants.sql",
          "--changeset ctxasm:ora-sec-0030-02-app-execute dbms:oracle",
          "--changeset ctxasm:ora-sec-0030-02-app-execute dbms:postgresql")
    assert liquibase_render.main(["--repo", str(repo_copy), "--changelog", MASTER]) == 1
    assert "ora-sec-0030-02-app-execute is missing from the rendered Oracle SQL" in capsys.readouterr().out


def test_liquibase_render_fails_without_a_master_changelog(repo_copy: Path, capsys) -> None:
    assert liquibase_render.main(["--repo", str(repo_copy), "--changelog", "liquibase/none.yaml"]) == 1
    assert "the master changelog does not exist" in capsys.readouterr().out


# --- contract_check -------------------------------------------------------------------------------------


@pytest.mark.repo_gate("contract_check")
def test_contract_check_passes_on_the_repository(capsys) -> None:
    assert contract_check.main(["--repo", str(REPO)]) == 0
    out = capsys.readouterr().out
    assert "compared packages: ctx_admin, ctx_assembly, ctx_memory, ctx_session" in out


def test_contract_check_fails_on_a_renamed_postgres_parameter(repo_copy: Path, capsys) -> None:
    _edit(repo_copy / PG_MEMORY,
          "CREATE OR REPLACE FUNCTION ctx_memory.put_memory(in_memory_type varchar, in_record jsonb)",
          "CREATE OR REPLACE FUNCTION ctx_memory.put_memory(in_memory_type varchar, in_row jsonb)")
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    out = capsys.readouterr().out
    assert "ctx_memory.put_memory differs" in out
    assert "function ctx_memory.put_memory(in_memory_type, in_record)" in out
    assert "function ctx_memory.put_memory(in_memory_type, in_row)" in out


def test_contract_check_fails_on_reordered_oracle_parameters(repo_copy: Path, capsys) -> None:
    _edit(repo_copy / "db/oracle/api/ctx_memory.spec.sql",
          "function supersede(in_memory_type in varchar2, in_id in varchar2, in_record in clob)",
          "function supersede(in_id in varchar2, in_memory_type in varchar2, in_record in clob)")
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    assert "ctx_memory.supersede differs" in capsys.readouterr().out


def test_contract_check_fails_on_a_procedure_that_is_a_function_elsewhere(repo_copy: Path, capsys) -> None:
    _edit(repo_copy / "db/oracle/api/ctx_session.spec.sql",
          "   procedure clear_tenant;", "   function clear_tenant return number;")
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    assert "ctx_session.clear_tenant differs" in capsys.readouterr().out


def test_contract_check_fails_on_a_package_on_one_side_only(repo_copy: Path, capsys) -> None:
    (repo_copy / "db/postgresql/api/ctx_extra.sql").write_text(
        "--liquibase formatted sql\n--changeset ctxasm:pg-extra dbms:postgresql splitStatements:false\n"
        "CREATE OR REPLACE FUNCTION ctx_extra.hello(in_name varchar) RETURNS varchar LANGUAGE sql AS $$ "
        "SELECT in_name $$;\n", encoding="utf-8")
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    assert "package ctx_extra exists on postgresql only" in capsys.readouterr().out


def test_contract_check_fails_on_a_missing_error_code(repo_copy: Path, capsys) -> None:
    for path in (repo_copy / "db/oracle").rglob("*.sql"):
        path.write_text(path.read_text(encoding="utf-8").replace("-20107", "-20199"), encoding="utf-8")
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    out = capsys.readouterr().out
    assert "error invalid_snapshot: -20107 does not occur in db/oracle" in out


def test_contract_check_fails_on_a_postgres_message_with_the_wrong_name(repo_copy: Path, capsys) -> None:
    _edit(repo_copy / "db/postgresql/api/ctx_admin.sql",
          "MESSAGE = 'invalid_argument: in_display_name must not be empty'",
          "MESSAGE = 'invalid_claim: in_display_name must not be empty'")
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    assert "CX108 raised with message 'invalid_claim: ...'" in capsys.readouterr().out


def test_contract_check_fails_on_a_postgres_raise_naming_no_contract_error(repo_copy: Path, capsys) -> None:
    _edit(repo_copy / "db/postgresql/api/ctx_admin.sql",
          "ERRCODE = ctxasm.error_code('invalid_argument'),\n            MESSAGE = 'invalid_argument: in_display_name",
          "ERRCODE = ctxasm.error_code('invalid_argumnet'),\n            MESSAGE = 'invalid_argument: in_display_name")
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    assert "ctxasm.error_code('invalid_argumnet') names no error of the contract" in capsys.readouterr().out


def test_contract_check_fails_when_a_pending_package_has_landed(repo_copy: Path, capsys, monkeypatch) -> None:
    """A package listed as pending on one engine must leave the list once both engines have it."""
    monkeypatch.setattr(contract_check, "PENDING", {"oracle": {"ctx_assembly": "pretend it is not written"},
                                                    "postgresql": {}})
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    assert "package ctx_assembly now exists on oracle: remove it from PENDING" in capsys.readouterr().out


def test_contract_check_fails_when_select_window_differs(repo_copy: Path, capsys) -> None:
    spec = repo_copy / "db/oracle/api/ctx_assembly.spec.sql"
    text = spec.read_text(encoding="utf-8")
    assert "in_sources" in text
    spec.write_text(text.replace("in_sources", "in_sources_items"), encoding="utf-8")
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    assert "ctx_assembly.select_window differs" in capsys.readouterr().out


def test_contract_check_fails_when_a_selection_step_is_renamed_on_one_side(repo_copy: Path, capsys) -> None:
    assert contract_check.main(["--repo", str(repo_copy)]) == 0
    assert "selection steps, the same on both engines: scope, lifecycle, dedup, conflict, " in \
        capsys.readouterr().out
    pg = repo_copy / "db/postgresql/api/ctx_assembly.sql"
    text = pg.read_text(encoding="utf-8")
    assert text.count("ctxasm.dedup_step(") == 1
    pg.write_text(text.replace("ctxasm.dedup_step(", "ctxasm.duplicates_step("), encoding="utf-8")
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    out = capsys.readouterr().out
    assert "selection steps differ from step 3 on" in out
    assert "postgresql: scope, lifecycle, duplicates, conflict" in out


def test_contract_check_fails_when_one_engine_writes_a_candidate_key_the_other_does_not(repo_copy: Path,
                                                                                      capsys) -> None:
    assert contract_check.main(["--repo", str(repo_copy)]) == 0
    assert "the candidate's 39 keys are written alike on both engines" in capsys.readouterr().out
    oracle = repo_copy / "db/oracle/internal/ctx_selection.body.sql"
    _edit(oracle, "                   'speaker' value\n", "                   'spoken_by' value\n")
    pg = repo_copy / "db/postgresql/internal/ctx_selection.sql"
    _edit(pg, "'recency', o.recency, ", "'recency', o.recency, 'freshness', o.recency, ")
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    out = capsys.readouterr().out
    assert ("the candidate (oracle candidate_items) writes keys the schema does not declare: spoken_by" in out
            and "the candidate (oracle candidate_items) does not write keys the schema declares: speaker" in out)
    assert "the candidate (postgresql candidate_items) writes keys the schema does not declare: freshness" in out


def test_contract_check_fails_when_the_schema_declares_a_key_no_engine_writes(repo_copy: Path, capsys) -> None:
    schema = repo_copy / "contract/schemas/selection.schema.json"
    _edit(schema, '"rule": {"const": "candidate_limit"},', '"rule": {"const": "candidate_limit"}, "kept": {"type": "integer"},')
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    out = capsys.readouterr().out
    assert "the candidate cut (postgresql candidate_cuts) does not write keys the schema declares: kept" in out
    assert "the candidate cut (oracle candidate_cuts) does not write keys the schema declares: kept" in out


def test_contract_check_fails_when_the_selection_steps_change_order(repo_copy: Path, capsys) -> None:
    # select_window calls tie_break_step before priority_step on PostgreSQL only: the same set, another order
    pg = repo_copy / "db/postgresql/api/ctx_assembly.sql"
    text = pg.read_text(encoding="utf-8")
    text = text.replace("ctxasm.priority_step(", "ctxasm.swap_step(").replace("ctxasm.tie_break_step(",
                                                                           "ctxasm.priority_step(")
    pg.write_text(text.replace("ctxasm.swap_step(", "ctxasm.tie_break_step("), encoding="utf-8")
    assert contract_check.main(["--repo", str(repo_copy)]) == 1
    assert "postgresql: scope, lifecycle, dedup, conflict, required, score, tie_break, priority, limit" in \
        capsys.readouterr().out


# --- oracle_api and oracle_names ---------------------------------------------------------------------------


def _line_of(path: Path, text: str) -> int:
    return path.read_text(encoding="utf-8").split(text)[0].count("\n") + 1


@pytest.mark.repo_gate("oracle_api")
def test_oracle_api_passes_on_the_repository(capsys) -> None:
    assert oracle_api.main(["--repo", str(REPO)]) == 0
    assert "oracle_api: OK" in capsys.readouterr().out


@pytest.mark.repo_gate("oracle_names")
def test_oracle_names_passes_on_the_repository(capsys) -> None:
    assert oracle_names.main(["--repo", str(REPO)]) == 0
    out = capsys.readouterr().out
    assert "oracle_names: OK" in out


def test_oracle_names_reads_every_unit_of_the_repository() -> None:
    # every package spec and body, the anonymous blocks and the suites were read, not skipped
    resolver = plsql_resolver.Resolver(REPO)
    resolver.load()
    kinds = {(unit.kind, unit.package) for unit in resolver.units}
    for package in ("ctx_errors", "ctx_row_binder", "ctx_json", "ctx_rules", "ctx_retrieval", "ctx_sources",
                    "ctx_session", "ctx_admin", "ctx_memory", "ctx_assembly", "ctx_tools",
                    "test_ctx_memory", "test_ctx_assembly"):
        assert ("spec", package) in kinds and ("body", package) in kinds, package
    assert sum(1 for unit in resolver.units if unit.kind == "block") >= 14


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # the reviewed mistakes, put back: PL/JSON's parameter names on Oracle's JSON types
        ("json_object_t.parse(jsn => r_version.manifest_json)", "json_object_t.parse(jtext => r_version.manifest_json)",
         "call to json_object_t.parse(jsn) with (0 positional, jtext =>) matches no overload (no parameter jtext)"),
        ("l_marks.append(val => l_mark);", "l_marks.append(elem => l_mark);",
         "call to json_array_t.append(val) with (0 positional, elem =>) matches no overload (no parameter elem)"),
        # DBMS_LOB: the duration parameter of CREATETEMPORARY is dur
        ("cache => true, dur => sys.dbms_lob.call", "cache => true, duration => sys.dbms_lob.call",
         "dbms_lob.createtemporary(lob_loc, cache, dur?) with (0 positional, lob_loc =>, cache =>, duration =>)"),
        # a member Oracle does not have, and a required parameter left out
        ("sys.dbms_crypto.hash_sh256, in_empty => co_empty_sha256)",
         "sys.dbms_crypto.hash_sha256, in_empty => co_empty_sha256)",
         "dbms_crypto.hash_sha256 is not a member of dbms_crypto"),
        ("sys.dbms_crypto.hash(src => l_bytes, typ => in_algorithm)",
         "sys.dbms_crypto.hash(src => l_bytes)", "required typ not given"),
        # CTX_QUERY (owned by CTXSYS): COUNT_HITS's estimate flag is exact
        ("text_query => r_term.word,\n                                                    exact => false)",
         "text_query => r_term.word,\n                                                    estimate => false)",
         "matches no overload (no parameter estimate)"),
    ],
)
def test_oracle_api_fails_on_a_call_oracle_would_reject(repo_copy: Path, capsys, old: str, new: str,
                                                        expected: str) -> None:
    path = next(repo_copy / name for name in (MEMORY_BODY, BINDER_BODY, JSON_BODY, ASSEMBLY_BODY, RETRIEVAL_BODY)
                if old in (repo_copy / name).read_text(encoding="utf-8"))
    _edit(path, old, new)
    line = _line_of(path, new)
    assert oracle_api.main(["--repo", str(repo_copy)]) == 1
    out = capsys.readouterr().out
    assert expected in out, out
    relative = path.relative_to(repo_copy).as_posix()
    assert f"{relative}:{line}:" in out or f"{relative}:{line + 1}:" in out, out


def test_oracle_api_reads_the_rollback_blocks(repo_copy: Path, capsys) -> None:
    path = repo_copy / "db/oracle/security/vpd_policies.sql"
    _edit(path, "--rollback begin sys.dbms_rls.drop_policy(object_schema =>",
          "--rollback begin sys.dbms_rls.drop_policy(schema_name =>")
    assert oracle_api.main(["--repo", str(repo_copy)]) == 1
    assert "vpd_policies.sql:23: call to dbms_rls.drop_policy" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("path", "old", "new", "expected"),
    [
        # a misspelled local variable
        (MEMORY_BODY, "l_rows := scrub_row(in_table => l_table, in_tenant_id => l_tenant_id, in_id => l_id);",
         "l_rows := scrub_row(in_table => l_table, in_tenant_id => l_tenant_idd, in_id => l_id);",
         "l_tenant_idd is not declared in scope"),
        # a misspelled column of a table, and of a WITH query
        (MEMORY_BODY, "          where c.tenant_id = in_tenant_id\n            and c.source_type = in_memory_type",
         "          where c.tenant_id = in_tenant_id\n            and c.source_typ = in_memory_type",
         "table context_compression has no column source_typ"),
        (SELECTION_BODY, "        join dedup_ranked k\n          on k.text_key = d.text_key",
         "        join dedup_ranked k\n          on k.text_keyy = d.text_key", "WITH query dedup_ranked has no column text_keyy"),
        # a misspelled attribute of the schema's object type: a column of TABLE(collection), a field of a variable
        (SELECTION_BODY, "order by f.scope_level desc, f.valid_from desc, f.id",
         "order by f.scope_levl desc, f.valid_from desc, f.id",
         "TABLE() of ctx_selection_candidates has no column scope_levl"),
        (SELECTION_BODY, "r_row.key_rank := l_ranks(i);", "r_row.key_rnk := l_ranks(i);",
         "the record has no field key_rnk"),
        # a record field, a package member, a named parameter of a repository routine
        (BINDER_BODY, "if r_column.column_name = co_col_tenant_id then",
         "if r_column.column_nam = co_col_tenant_id then", "the record has no field column_nam"),
        (MEMORY_BODY, "in_code   => ctx_errors.co_memory_not_found,\n         in_detail => 'no active '",
         "in_code   => ctx_errors.co_memory_notfound,\n         in_detail => 'no active '",
         "package ctx_errors declares no co_memory_notfound in its spec"),
        (MEMORY_BODY, "mark_manifest(\n            in_tenant_id   => l_tenant_id,",
         "mark_manifest(\n            in_tenant      => l_tenant_id,",
         "mark_manifest has no parameter in_tenant"),
        # an anchored type and a table that do not exist
        (BINDER_SPEC, "      column_name    user_tab_columns.column_name%type,",
         "      column_name    user_tab_columns.columns_name%type,",
         "user_tab_columns.columns_name%TYPE: table user_tab_columns has no column columns_name"),
    ],
)
def test_oracle_names_fails_on_a_name_that_resolves_to_nothing(repo_copy: Path, capsys, path: str, old: str,
                                                               new: str, expected: str) -> None:
    file = repo_copy / path
    _edit(file, old, new)
    assert oracle_names.main(["--repo", str(repo_copy)]) == 1
    out = capsys.readouterr().out
    assert expected in out, out
    assert f"{path}:" in out


def test_oracle_names_fails_when_a_spec_and_its_body_disagree(repo_copy: Path, capsys) -> None:
    _edit(repo_copy / "db/oracle/security/ctx_policy.spec.sql",
          "function tenant_predicate(in_schema in varchar2, in_object in varchar2) return varchar2;",
          "function tenant_predicate(in_owner in varchar2, in_object in varchar2) return varchar2;")
    assert oracle_names.main(["--repo", str(repo_copy)]) == 1
    assert "ctx_policy.tenant_predicate(in_owner, in_object) is declared in the spec but not defined in the body " \
           "with these parameters; the body defines (in_schema, in_object)" in capsys.readouterr().out


def test_oracle_names_only_reports_the_files_asked_for(repo_copy: Path, capsys) -> None:
    _edit(repo_copy / MEMORY_BODY, "l_rows := scrub_row(in_table => l_table, in_tenant_id => l_tenant_id,",
          "l_rows := scrub_row(in_table => l_table, in_tenant_id => l_tenant_idd,")
    other = repo_copy / ASSEMBLY_BODY
    assert oracle_names.main(["--repo", str(repo_copy), str(other)]) == 0
    assert oracle_names.main(["--repo", str(repo_copy), str(repo_copy / MEMORY_BODY)]) == 1
    assert "l_tenant_idd" in capsys.readouterr().out


def test_the_signature_table_cites_the_documentation_of_every_entry(tmp_path: Path) -> None:
    signatures = oracle_catalog.load_signatures()
    assert oracle_catalog.check_signature_table(signatures) == []
    # the JSON types carry Oracle's parameter names, not PL/JSON's
    assert [p.name for p in signatures.types["json_object_t"].static["parse"].overloads[0]] == ["jsn"]
    assert [p.name for p in signatures.type_member("json_array_t", "append").overloads[0]] == ["val"]
    assert signatures.type_member("json_object_t", "is_object") is not None   # inherited from JSON_ELEMENT_T
    broken = json.loads(oracle_catalog.SIGNATURES.read_text(encoding="utf-8"))
    del broken["packages"]["dbms_lob"]["members"]["getlength"]["doc"]
    copy = tmp_path / "signatures.json"
    copy.write_text(json.dumps(broken), encoding="utf-8")
    assert oracle_catalog.check_signature_table(signatures, copy) == \
        ["signatures.json: dbms_lob.getlength cites no documentation section"]


# --- tenant_indexes -------------------------------------------------------------------------------------


def test_tenant_indexes_reads_every_memory_table_and_its_history() -> None:
    from ctxasm_dev.gates import tenant_indexes

    tables = tenant_indexes.memory_tables(REPO)
    assert {"entity_memory", "entity_memory_history", "context_source_ref_history"} <= tables
    assert len(tables) == 22


@pytest.mark.parametrize("path, old, new, reported", [
    ("db/postgresql/schema/selection_indexes.sql",
     "CREATE INDEX entity_memory_claim ON ctxasm.entity_memory (tenant_id, subject, predicate);",
     "CREATE INDEX entity_memory_claim ON ctxasm.entity_memory (subject, predicate, tenant_id);",
     "index on entity_memory (subject, predicate, tenant_id): does not lead with tenant_id"),
    ("db/postgresql/schema/memory_tables.sql",
     "CONSTRAINT entity_memory_pk PRIMARY KEY (tenant_id, id, version)",
     "CONSTRAINT entity_memory_pk PRIMARY KEY (id, tenant_id, version)",
     "PRIMARY KEY of entity_memory leads with id, not tenant_id"),
    ("db/postgresql/schema/row_history.sql",
     "'CREATE INDEX %I ON ctxasm.%I (tenant_id, id, version)'",
     "'CREATE INDEX %I ON ctxasm.%I (id, version)'",
     "index on every memory table (id, version): does not lead with tenant_id"),
    ("db/postgresql/schema/memory_tables.sql",
     "CONSTRAINT summarization_memory_pk PRIMARY KEY (tenant_id, id, version)\n) PARTITION BY LIST (tenant_id);",
     "CONSTRAINT summarization_memory_pk PRIMARY KEY (tenant_id, id, version)\n);",
     "index on summarization_memory (search_text): a gin index on a table not partitioned by tenant_id"),
])
def test_tenant_indexes_fails_on_an_index_that_does_not_lead_with_the_tenant(repo_copy: Path, capsys, path: str,
                                                                            old: str, new: str,
                                                                            reported: str) -> None:
    from ctxasm_dev.gates import tenant_indexes

    _edit(repo_copy / path, old, new)
    assert tenant_indexes.main(["--repo", str(repo_copy)]) == 1
    assert reported in capsys.readouterr().out


# --- contract_generated ----------------------------------------------------------------------------------


@pytest.mark.repo_gate("contract_generated")
def test_contract_generated_passes_on_the_repository(capsys) -> None:
    from ctxasm_dev.gates import contract_generated

    assert contract_generated.main(["--repo", str(REPO)]) == 0
    assert "contract_generated: OK" in capsys.readouterr().out


@pytest.mark.parametrize("path, old, new, stale", [
    # a catalogue edit without regeneration: every file that carries the error is named
    ("contract/errors.toml", 'message = "the tenant claim was refused"', 'message = "the claim was refused"',
     [TARGETS["ora_errors_body"], TARGETS["pg_errors"], TARGETS["py_error_classes"]]),
    # a hand edit of a generated file
    ("db/oracle/internal/ctx_errors.body.sql", "when co_invalid_claim then 'invalid_claim'",
     "when co_invalid_claim then 'invalid_claims'", ["db/oracle/internal/ctx_errors.body.sql"]),
    # a constant changed in one engine only
    ("db/oracle/api/ctx_tools.body.sql", "co_retrieval_depth constant pls_integer := 50;",
     "co_retrieval_depth constant pls_integer := 60;", ["db/oracle/api/ctx_tools.body.sql"]),
    # selection code changed and the version kept: replay would rebuild old windows with new rules
    ("db/postgresql/internal/ctx_rules.sql", "(coalesce(in_similarity, 0) - 0.35)",
     "(coalesce(in_similarity, 0) - 0.36)", ["db/postgresql/api/ctx_assembly.sql"]),
    # the Oracle selection version digests the internal packages select_window calls
    (RETRIEVAL_BODY, "co_rrf_k            constant pls_integer := 60;",
     "co_rrf_k            constant pls_integer := 61;", [ASSEMBLY_BODY]),
    # a generated region of a hand-written package edited by hand (the version follows it)
    (RULES_BODY, "when 'workflow' then 2", "when 'workflow' then 1", [RULES_BODY]),
    # the renderer changed and its version kept
    ("py/ctxasm/core/render.py", "from xml.sax.saxutils import escape, quoteattr",
     "from xml.sax.saxutils import quoteattr, escape", ["py/ctxasm/core/render.py"]),
    # a generated table of the docs edited by hand
    ("docs/contract.md", "| `invalid_question` | -20113 | CX113 |", "| `invalid_question` | -20113 | CX112 |",
     ["docs/contract.md"]),
])
def test_contract_generated_fails_naming_each_stale_file(catalogue_copy: Path, capsys, path: str, old: str, new: str,
                                                         stale: list[str]) -> None:
    from ctxasm_dev.contract import generate
    from ctxasm_dev.gates import contract_generated

    _edit(catalogue_copy / path, old, new)
    assert contract_generated.main(["--repo", str(catalogue_copy)]) == 1
    out = capsys.readouterr().out
    for stale_path in stale:
        assert f"{stale_path}: stale" in out
    assert "contract_generated: FAIL" in out
    # regeneration is the fix (for a hand edit of a generated file it restores the catalogue's text)
    generate.write(catalogue_copy)
    assert contract_generated.main(["--repo", str(catalogue_copy)]) == 0


def test_contract_generated_names_a_bad_catalogue_entry(catalogue_copy: Path, capsys) -> None:
    from ctxasm_dev.gates import contract_generated

    _edit(catalogue_copy / "contract/errors.toml", "number = 113", "number = 112")
    assert contract_generated.main(["--repo", str(catalogue_copy)]) == 1
    assert "contract/errors.toml: error number 112 appears twice" in capsys.readouterr().out


def test_comment_edits_keep_the_selection_version(catalogue_copy: Path, capsys) -> None:
    from ctxasm_dev.gates import contract_generated

    _edit(catalogue_copy / "db/postgresql/internal/ctx_rules.sql",
          "--comment: which copy of a duplicate is kept", "--comment: the copy of a duplicate that is kept")
    assert contract_generated.main(["--repo", str(catalogue_copy)]) == 0
