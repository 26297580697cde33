"""The Oracle delivery kit, checked without an Oracle database: the utPLSQL suites, their changelog,
scripts/oracle-dev (against a stand-in for the container's SQL*Plus), the SQL the scripts run, the GitHub Actions
workflow and the loader's one-commit-per-tenant on Oracle (docs/oracle.md). What needs a real Oracle runs in
that workflow."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ctxasm_dev.gates import formatted_sql, liquibase_render, oracle_parse, plsql_resolver

REPO = Path(__file__).resolve().parents[2]
UTPLSQL = REPO / "db" / "tests" / "utplsql"
WORKFLOW = REPO / ".github" / "workflows" / "oracle.yml"
ORACLE_DEV = REPO / "scripts" / "oracle-dev"
LOAD_MODELS = REPO / "scripts" / "oracle-load-models"
_PACKAGE = re.compile(r"create\s+or\s+replace\s+package\s+(?P<body>body\s+)?(?P<name>\w+)", re.IGNORECASE)
_PROCEDURE_ANNOTATIONS = ("--%test", "--%throws", "--%beforeall", "--%afterall", "--%beforeeach", "--%aftereach",
                          "--%disabled", "--%tags", "--%displayname")


def _packages() -> dict[str, dict[str, str]]:
    """{package name: {"spec": text, "body": text}} of every utPLSQL file."""
    packages: dict[str, dict[str, str]] = {}
    for path in sorted(UTPLSQL.glob("*.sql")):
        for changeset in formatted_sql.read_changelog(path).changesets:
            statements, problems = formatted_sql.statements_of(changeset)
            assert not problems, f"{path.name} [{changeset.id}]: {problems}"
            for statement in statements:
                match = _PACKAGE.search(statement.text)
                if match:
                    kind = "body" if match["body"] else "spec"
                    packages.setdefault(match["name"].lower(), {})[kind] = statement.text
    return packages


# --- the utPLSQL suites ---------------------------------------------------------------------------------------


@pytest.mark.slow  # sqlfluff over the utPLSQL suites
def test_the_utplsql_files_pass_the_parse_gate() -> None:
    files = sorted(UTPLSQL.glob("*.sql"))
    assert len(files) >= 2, "expected the CTX_MEMORY and CTX_ASSEMBLY suites under db/tests/utplsql"
    report = oracle_parse.run(REPO, files)
    assert report.files == len(files)
    assert report.problems == [], "\n".join(problem.render(REPO) for problem in report.problems)
    assert report.statements == 2 * len(files), "each file holds one spec and one body"


def test_both_packages_have_suites_with_tests() -> None:
    packages = _packages()
    for name in ("test_ctx_memory", "test_ctx_assembly"):
        assert name in packages, f"no utPLSQL package {name}"
        spec, body = packages[name].get("spec", ""), packages[name].get("body", "")
        assert body, f"{name} has no package body"
        assert re.search(r"^\s*--%suite\(.+\)", spec, re.MULTILINE), f"{name}: no --%suite annotation"
        tests = re.findall(r"^\s*--%test\(.+\)\s*\n\s*procedure\s+(\w+)", spec, re.MULTILINE)
        assert len(tests) >= 5, f"{name}: only {len(tests)} --%test procedures"
        for procedure in tests:
            assert re.search(rf"procedure\s+{procedure}\s+is\b", body), f"{name}.{procedure} has no body"


def test_suites_that_commit_or_read_flashback_roll_back_by_hand() -> None:
    """A commit (needed before AS OF SCN reads see a row) breaks utPLSQL's automatic savepoint rollback."""
    for name, parts in _packages().items():
        body = formatted_sql.strip_sql_comments(parts["body"]).lower()
        if re.search(r"\bcommit\s*;", body) or "capture_snapshot" in body or "in_snapshot" in body:
            assert re.search(r"^\s*--%rollback\(manual\)", parts["spec"], re.MULTILINE), \
                f"{name} commits or reads as of an SCN but is not --%rollback(manual)"


def test_procedure_annotations_sit_directly_above_their_procedure() -> None:
    """utPLSQL reads a procedure annotation only when no blank line or comment separates it from the procedure."""
    for name, parts in _packages().items():
        lines = parts["spec"].split("\n")
        for number, line in enumerate(lines):
            if not line.strip().lower().startswith(_PROCEDURE_ANNOTATIONS):
                continue
            following = number + 1
            while following < len(lines) and lines[following].strip().startswith("--%"):
                following += 1
            assert following < len(lines) and re.match(r"^\s*procedure\s+\w+", lines[following]), \
                f"{name} spec line {number + 1}: {line.strip()!r} is not directly above a procedure"


def test_expectations_respect_the_matcher_rules() -> None:
    """to_contain works on cursors and collections only; every test body makes at least one expectation or
    declares the error it expects (--%throws)."""
    for name, parts in _packages().items():
        body = parts["body"]
        assert ".to_contain(" not in body, f"{name}: to_contain is not for strings (use to_be_like)"
        throws = set(re.findall(r"--%throws\(.+\)\s*\n\s*procedure\s+(\w+)", parts["spec"]))
        for procedure in re.findall(r"--%test\(.+\)\s*\n(?:\s*--%.*\n)*\s*procedure\s+(\w+)", parts["spec"]):
            code = re.search(rf"procedure\s+{procedure}\s+is\b(.*?)\bend\s+{procedure};", body, re.DOTALL)
            assert code, f"{name}.{procedure}: body not found"
            assert procedure in throws or re.search(r"l_expect\.to_\w+|ut\.fail\(", code[1]), \
                f"{name}.{procedure} neither expects anything nor declares --%throws"


def test_throws_names_an_exception_of_ctx_errors() -> None:
    """A --%throws names the error by the exception CTX_ERRORS declares for it (utPLSQL 3.1.2+ resolves package
    exceptions), never by a number that would go on passing if the error's code moved."""
    spec = (REPO / "db" / "oracle" / "internal" / "ctx_errors.spec.sql").read_text(encoding="utf-8").lower()
    declared = set(re.findall(r"pragma\s+exception_init\s*\(\s*(\w+)\s*,", spec))
    assert declared, "CTX_ERRORS declares no exception"
    seen = 0
    for name, parts in _packages().items():
        for argument in re.findall(r"--%throws\((.*)\)", parts["spec"]):
            seen += 1
            for item in argument.split(","):
                owner, _, exception = item.strip().lower().partition(".")
                assert owner == "ctx_errors" and exception in declared, \
                    f"{name}: --%throws({argument}) names no exception of CTX_ERRORS"
    assert seen >= 15


# --- the changelogs -------------------------------------------------------------------------------------------


def test_the_master_changelog_never_deploys_the_tests() -> None:
    master = liquibase_render.included_paths(REPO, liquibase_render.MASTER_CHANGELOG)
    assert master, "the master changelog includes nothing?"
    for path in sorted(UTPLSQL.glob("*.sql")):
        relative = path.relative_to(REPO).as_posix()
        assert not liquibase_render._is_included(relative, master), f"the master changelog would deploy {relative}"
        assert liquibase_render._is_included(
            relative, liquibase_render.included_paths(REPO, liquibase_render.UTPLSQL_CHANGELOG))
    assert not any(path.startswith("db/tests") for path in master)


def test_every_oracle_file_is_in_one_of_the_changelogs(tmp_path: Path) -> None:
    changelogs = [liquibase_render.MASTER_CHANGELOG, liquibase_render.UTPLSQL_CHANGELOG]
    assert liquibase_render.not_included(REPO, changelogs) == []
    # without the utPLSQL changelog the suites would be deployed by nothing: the render gate says so
    shutil.copytree(REPO / "db", tmp_path / "db")
    (tmp_path / "liquibase").mkdir()
    shutil.copy(REPO / liquibase_render.MASTER_CHANGELOG, tmp_path / liquibase_render.MASTER_CHANGELOG)
    missing = liquibase_render.not_included(tmp_path, changelogs)
    assert missing and all(line.startswith("db/tests/utplsql/") for line in missing), missing


def test_liquibase_renders_the_utplsql_changelog_with_its_annotations() -> None:
    """The suites reach Oracle through their own changelog, and the annotations (comments, which the render
    gate does not compare) survive: utPLSQL reads them from the stored source."""
    try:
        liquibase_render.liquibase_executable()
    except Exception as error:  # no CLI or no Java here: say so, never pretend
        pytest.skip(f"Liquibase CLI not runnable here: {error}")
    result = liquibase_render.render(REPO, liquibase_render.UTPLSQL_CHANGELOG)
    assert result.returncode == 0, liquibase_render.liquibase_error(result)
    rendered = {path for path, _ in liquibase_render.rendered_blocks(result.stdout)}
    assert rendered == {path.relative_to(REPO).as_posix() for path in UTPLSQL.glob("*.sql")}
    for annotation in ("--%suite(", "--%test(", "--%rollback(manual)", "--%throws(", "--%beforeall"):
        in_files = sum(line.count(annotation) for path in UTPLSQL.glob("*.sql")
                       for changeset in formatted_sql.read_changelog(path).changesets
                       for _, line in changeset.body_lines)
        assert in_files and result.stdout.count(annotation) == in_files, annotation


# --- scripts/oracle-dev ----------------------------------------------------------------------------------------


def _path_without(tmp_path: Path, *names: str, extra: dict[str, str] | None = None) -> str:
    """A PATH of symlinks to everything on the current PATH except `names`, plus `extra` scripts."""
    farm = tmp_path / "bin"
    farm.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not Path(folder).is_dir():
            continue
        for entry in Path(folder).iterdir():
            if entry.name in names or (farm / entry.name).exists() or (farm / entry.name).is_symlink():
                continue
            (farm / entry.name).symlink_to(entry)
    for name, text in (extra or {}).items():
        (farm / name).write_text(text)
        (farm / name).chmod(0o755)
    return str(farm)


def _oracle_dev(path: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CTXASM_CONTAINER")}
    env["PATH"] = path
    return subprocess.run([str(ORACLE_DEV), *args], env=env, capture_output=True, text=True, timeout=60)


def test_oracle_dev_is_executable() -> None:
    assert os.access(ORACLE_DEV, os.X_OK), "scripts/oracle-dev needs its run bit"


def test_oracle_dev_up_without_a_container_engine_says_what_is_missing(tmp_path: Path) -> None:
    result = _oracle_dev(_path_without(tmp_path, "docker", "podman"), "up")
    assert result.returncode == 3, result.stderr
    assert "docker: not on PATH" in result.stderr and "podman: not on PATH" in result.stderr
    assert "CTXASM_ORACLE_DSN" in result.stderr, "the message should name the way around it"


def test_oracle_dev_up_with_an_engine_that_does_not_answer(tmp_path: Path) -> None:
    silent = "#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n"
    result = _oracle_dev(_path_without(tmp_path, "docker", "podman", extra={"docker": silent}), "up")
    assert result.returncode == 3, result.stderr
    assert "docker: installed, but 'docker info' fails" in result.stderr


def test_oracle_dev_rejects_an_unknown_command() -> None:
    result = _oracle_dev(os.environ.get("PATH", ""), "upp")
    assert result.returncode == 2
    assert "expected up, setup, deploy, seed, compiled, utplsql, conformance, env, status or down, got upp" \
        in result.stderr


# A stand-in for the container engine: it answers what scripts/oracle-dev asks the database in the
# container (SQL*Plus on stdin) from files in $STUB_DIR, and logs the owner's SQL. Nothing else is faked:
# the script, its checks and its messages are the real ones.
_STUB_DOCKER = r'''#!/bin/sh
case "$1" in
    info) exit 0 ;;
    inspect) echo running; exit 0 ;;
    exec) ;;
    *) exit 0 ;;
esac
shift
[ "$1" = "-i" ] && shift
shift
case "$*" in
    healthcheck.sh*) exit 0 ;;
    *"as sysdba"*)
        input="$(cat)"
        case "$input" in
            *vector_memory_size*) echo 268435456 ;;
            *'v$option'*) echo vpd=TRUE; echo text=VALID ;;
            *"object_name = 'UT'"*) echo 1 ;;
        esac ;;
    *"/nolog"*)
        input="$(cat)"
        printf '%s\n' "$input" >> "$STUB_DIR/owner_sql.log"
        case "$input" in
            *user_errors*) cat "$STUB_DIR/user_errors" ;;
            *ctx_user_pending*) cat "$STUB_DIR/text_index" ;;
        esac ;;
esac
exit 0
'''
# ... and for Liquibase: it logs the changelog it was asked to apply and succeeds, as Liquibase does when the
# JDBC driver reports a body that did not compile as a success; with $STUB_DIR/liquibase_failure present it
# prints that file, as Liquibase prints a failed changeset, and exits 1.
_STUB_LIQUIBASE = ("#!/bin/sh\nfor arg; do case \"$arg\" in --changelog-file=*) "
                   "echo \"${arg#*=}\" >> \"$STUB_DIR/liquibase.log\" ;; esac; done\n"
                   "if [ -f \"$STUB_DIR/liquibase_failure\" ]; then cat \"$STUB_DIR/liquibase_failure\"; exit 1; fi\n")


def _stubbed_oracle_dev(tmp_path: Path, *args: str, user_errors: str = "", text_index: str = "",
                        liquibase_failure: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "user_errors").write_text(user_errors)
    if liquibase_failure:
        (stubs / "liquibase_failure").write_text(liquibase_failure)
    (stubs / "text_index").write_text(text_index)
    (stubs / "ojdbc11.jar").write_text("not a jar: the stub Liquibase never opens it")
    liquibase = stubs / "liquibase"
    liquibase.write_text(_STUB_LIQUIBASE)
    liquibase.chmod(0o755)
    path = _path_without(tmp_path, "docker", "podman", extra={"docker": _STUB_DOCKER})
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("CTXASM_CONTAINER", "CTXASM_ORACLE", "GITHUB_"))}
    environment.update(PATH=path, STUB_DIR=str(stubs), CTXASM_HOME=str(tmp_path / "home"),
                       CTXASM_LIQUIBASE=str(liquibase), CTXASM_OJDBC_JAR=str(stubs / "ojdbc11.jar"),
                       CTXASM_ORACLE_OWNER_PASSWORD="CtxOwnerTest1", CTXASM_ORACLE_APP_PASSWORD="CtxAppTest12",
                       CTXASM_ORACLE_PASSWORD="CtxSysTest123", CTXASM_CONTAINER_ENGINE="docker", **env)
    return subprocess.run([str(ORACLE_DEV), *args], env=environment, capture_output=True, text=True, timeout=300)


def _stub_log(tmp_path: Path, name: str) -> list[str]:
    log = tmp_path / "stubs" / name
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.slow  # scripts/oracle-dev against a stand-in sqlplus
def test_oracle_dev_deploy_stops_with_the_compile_errors_of_an_invalid_body(tmp_path: Path) -> None:
    # what USER_ERRORS held when the JSON calls used PL/JSON's parameter names: the changeset "ran"
    user_errors = ("ERROR|PACKAGE BODY|CTX_MEMORY|801|31|PLS-00306: wrong number or types of arguments in call to "
                   "'PARSE'\n"
                   "ERROR|PACKAGE BODY|CTX_MEMORY|807|7|PLS-00306: wrong number or types of arguments in call to "
                   "'APPEND'\n"
                   "INVALID|PACKAGE BODY|CTX_MEMORY\n")
    result = _stubbed_oracle_dev(tmp_path, "deploy", user_errors=user_errors, GITHUB_ACTIONS="true")
    assert result.returncode == 1, result.stderr
    body = "db/oracle/api/ctx_memory.body.sql"
    create_line = (REPO / body).read_text().split("\n").index(
        "create or replace package body ctx_memory is") + 1
    assert "compile errors after liquibase/changelog-master.yaml (USER_ERRORS of ctxasm_owner)" in result.stderr
    assert ("PACKAGE BODY CTX_MEMORY line 801, column 31: PLS-00306: wrong number or types of arguments in call to "
            f"'PARSE'  [{body}:{create_line + 800}]") in result.stderr
    assert "PACKAGE BODY CTX_MEMORY line 807, column 7: PLS-00306" in result.stderr
    assert "INVALID: PACKAGE BODY CTX_MEMORY" in result.stderr
    assert "1 object(s) are INVALID" in result.stderr
    # annotated on the file in GitHub Actions
    assert f"::error file={body},line={create_line + 800},title=PACKAGE BODY CTX_MEMORY does not compile::" \
           "PLS-00306" in result.stdout
    # it stopped: the utPLSQL changelog was never applied on top of an invalid body
    assert _stub_log(tmp_path, "liquibase.log") == ["liquibase/changelog-master.yaml"]
    owner_sql = "\n".join(_stub_log(tmp_path, "owner_sql.log"))
    assert "dbms_utility.compile_schema(schema => user, compile_all => false)" in owner_sql
    assert "from user_errors e" in owner_sql and "where o.status = 'INVALID'" in owner_sql
    assert "CtxOwnerTest1" in owner_sql, "the owner's password goes to SQL*Plus on stdin"
    # and explained: the changeset of the body, the readiness row of the error and the gate that covers it
    assert "scripts/oracle-dev: the first failure, explained" in result.stderr
    assert "PACKAGE BODY CTX_MEMORY line 801, column 31: PLS-00306" in result.stderr
    assert f"[{body}, changeset ora-pkg-0050-ctx-memory-body]" in result.stderr
    assert 'PLS-00306: docs/oracle.md, "Oracle readiness": A call into Oracle-supplied code' in result.stderr
    assert "gate: `oracle_api`" in result.stderr


# What Liquibase 4.29 prints when a changeset fails: the first deployment, before tenant_id was in bytes
_TEXT_INDEX_FAILURE = """Running Changeset: db/schema/oracle/0030_retrieval_indexes.sql::ora-0030-04-knowledge-base-chunk-text-by-tenant::ctxasm
ERROR: Exception Primary Class:  SQLException
ERROR: Exception Primary Reason:  ORA-29855: Error while processing the ODCIINDEXCREATE routine for index "CTXASM_OWNER"."KNOWLEDGE_BASE_CHUNK_TEXT_IX".
ORA-20000: Oracle Text error:
DRG-11309: invalid filter by column: TENANT_ID of datatype VARCHAR2 and size 256
ORA-06512: at "CTXSYS.DRUE", line 192
Unexpected error running Liquibase: Migration failed for changeset db/schema/oracle/0030_retrieval_indexes.sql::ora-0030-04-knowledge-base-chunk-text-by-tenant::ctxasm:
     Reason: liquibase.exception.DatabaseException: ORA-29855: Error while processing the ODCIINDEXCREATE routine for index "CTXASM_OWNER"."KNOWLEDGE_BASE_CHUNK_TEXT_IX".
ORA-20000: Oracle Text error:
DRG-11309: invalid filter by column: TENANT_ID of datatype VARCHAR2 and size 256
ORA-06512: at "CTXSYS.DRUE", line 192
 [Failed SQL: (29855) declare
   l_ddl varchar2(400) := 'create index knowledge_base_chunk_text_ix on knowledge_base_chunk (content)'
begin
   execute immediate l_ddl;
end;]
"""


def test_oracle_dev_deploy_explains_the_first_failed_changeset(tmp_path: Path) -> None:
    result = _stubbed_oracle_dev(tmp_path, "deploy", liquibase_failure=_TEXT_INDEX_FAILURE)
    assert result.returncode == 1, result.stderr
    assert "liquibase update of liquibase/changelog-master.yaml failed" in result.stderr
    line = next(number for number, text in enumerate(
        (REPO / "db/oracle/schema/retrieval_indexes.sql").read_text().split("\n"), start=1)
        if text.startswith("--changeset ctxasm:ora-0030-04-"))
    explained = result.stderr[result.stderr.index("scripts/oracle-dev: the first failure, explained"):]
    assert ("changeset: ora-0030-04-knowledge-base-chunk-text-by-tenant  [db/oracle/schema/retrieval_indexes.sql:"
            f"{line}, recorded as db/schema/oracle/0030_retrieval_indexes.sql]") in explained
    assert "object:    index knowledge_base_chunk_text_ix on knowledge_base_chunk" in explained
    assert "Oracle:    DRG-11309: invalid filter by column: TENANT_ID of datatype VARCHAR2 and size 256" in explained
    assert "USER_ERRORS: empty" in explained
    assert 'ORA-29855, DRG-11309: docs/oracle.md, "Oracle readiness": Oracle Text structured columns' in explained
    assert "gate: `oracle_semantics` rule `text-filter`" in explained
    assert 'Oracle documentation: Oracle Text Reference, "CREATE INDEX"' in explained
    # the wrappers (ORA-20000, the ORA-06512 stack line) are shown, not explained
    assert "ORA-20000: docs/oracle.md" not in explained and "ORA-06512: no row" not in explained
    # it stopped at the master changelog: the compile check and the utPLSQL changelog never ran
    assert _stub_log(tmp_path, "liquibase.log") == ["liquibase/changelog-master.yaml"]


def test_the_docs_count_the_utplsql_tests() -> None:
    """docs/oracle.md says how many utPLSQL tests a real database must pass, suite by suite."""
    counts = {name: len(re.findall(r"^\s*--%test\(", parts["spec"], re.MULTILINE))
              for name, parts in _packages().items() if "spec" in parts}
    text = (REPO / "docs" / "oracle.md").read_text()
    said = re.search(r"That the (\d+) utPLSQL tests pass\*\* \((\d+) for CTX_MEMORY, (\d+) for CTX_ASSEMBLY, "
                     r"(\d+) for CTX_SELECTION, (\d+) for\s+CTX_SESSION, (\d+) for the\s+schema", text)
    assert said, "docs/oracle.md no longer says how many utPLSQL tests there are"
    total, memory, assembly, selection, session, schema = map(int, said.groups())
    assert (memory, assembly, selection, session, schema) == (
        counts["test_ctx_memory"], counts["test_ctx_assembly"], counts["test_ctx_selection"],
        counts["test_ctx_session"], counts["test_schema"])
    assert total == sum(counts.values())


def test_oracle_dev_deploy_checks_after_each_changelog_and_goes_on_when_all_compiles(tmp_path: Path) -> None:
    result = _stubbed_oracle_dev(tmp_path, "deploy")
    assert result.returncode == 0, result.stderr
    assert _stub_log(tmp_path, "liquibase.log") == ["liquibase/changelog-master.yaml",
                                                    "liquibase/changelog-utplsql.yaml"]
    for changelog in ("changelog-master.yaml", "changelog-utplsql.yaml"):
        assert f"compile check after liquibase/{changelog}: no INVALID object, USER_ERRORS is empty" in result.stderr
    assert "deployed: both changelogs applied, every object compiled" in result.stderr
    # the claim key of the launch configuration goes to the database (on SQL*Plus's stdin, never an argument)
    key = (tmp_path / "home" / "claim_key").read_text().strip()
    assert f"ctx_admin.set_claim_key(in_key => '{key}')" in "\n".join(_stub_log(tmp_path, "owner_sql.log"))


def test_oracle_dev_seed_stops_when_oracle_text_left_rows_unindexed(tmp_path: Path) -> None:
    result = _stubbed_oracle_dev(tmp_path, "seed", text_index="PENDING|KNOWLEDGE_BASE_CHUNK_TEXT_IX|3\n",
                                 CTXASM_ORACLE_SEED="0")
    assert result.returncode == 1, result.stderr
    assert "PENDING|KNOWLEDGE_BASE_CHUNK_TEXT_IX|3" in result.stderr
    assert "CTX_USER_PENDING or CTX_USER_INDEX_ERRORS is not empty after loading" in result.stderr
    again = tmp_path / "again"
    again.mkdir()
    result = _stubbed_oracle_dev(again, "seed", CTXASM_ORACLE_SEED="0")
    assert result.returncode == 0, result.stderr
    assert "Oracle Text: CTX_USER_PENDING and CTX_USER_INDEX_ERRORS are empty" in result.stderr


def _heredoc(function: str) -> str:
    """The SQL of the first <<'SQL' here-document in one shell function of scripts/oracle-dev."""
    match = re.search(r"<<'SQL'\n(.*?)^SQL$", _function(function), re.MULTILINE | re.DOTALL)
    assert match, f"{function} has no <<'SQL' here-document"
    return match[1]


def _statements(sql: str) -> list[formatted_sql.Statement]:
    """The PL/SQL blocks (ended by a lone '/') and SQL statements (ended by ';') of a SQL*Plus script."""
    statements: list[formatted_sql.Statement] = []
    lines = sql.split("\n")
    block: list[str] | None = None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip().lower()
        if block is not None:
            if stripped == "/":
                statements.append(formatted_sql.Statement("\n".join(block), number - len(block)))
                block = None
            else:
                block.append(line)
        elif stripped.startswith(("begin", "declare")):
            block = [line]
        elif stripped.startswith("select"):
            end = next(i for i in range(number - 1, len(lines)) if lines[i].rstrip().endswith(";"))
            statements.append(formatted_sql.Statement("\n".join(lines[number - 1:end + 1]).rstrip().rstrip(";"),
                                                      number))
    return statements


def test_the_sql_the_scripts_run_passes_the_oracle_gates(tmp_path: Path) -> None:
    resolver = plsql_resolver.Resolver(REPO)
    resolver.load()
    assert resolver.analyse() == []
    scripts = {"compile_report": _heredoc("compile_report"), "check_text_index": _heredoc("check_text_index")}
    (tmp_path / "embedding.onnx").write_bytes(b"onnx")
    (tmp_path / "reranker.onnx").write_bytes(b"onnx")
    printed = subprocess.run([str(LOAD_MODELS), "--embedding", str(tmp_path / "embedding.onnx"), "--reranker",
                              str(tmp_path / "reranker.onnx"), "--replace", "--print"],
                             capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    scripts["oracle-load-models"] = printed.stdout
    for name, sql in scripts.items():
        statements = _statements(sql)
        assert statements, f"no SQL found in {name}"
        findings = resolver.analyse_text(Path(name), statements)
        assert findings == [], "\n".join(f.render(REPO) for f in findings)
    # and a wrong parameter there is caught: DROP_ONNX_MODEL's is force, not forced
    wrong = _statements(printed.stdout.replace("force => true", "forced => true"))
    findings = resolver.analyse_text(Path("oracle-load-models"), wrong)
    # one finding for each of the two models' DROP_ONNX_MODEL calls
    assert [f.gate for f in findings] == ["api", "api"]
    assert all("no parameter forced" in f.message for f in findings)


def test_oracle_load_models_maps_the_reranker_pipeline_as_oracle_documents_it(tmp_path: Path) -> None:
    (tmp_path / "reranker.onnx").write_bytes(b"onnx")
    printed = subprocess.run([str(LOAD_MODELS), "--reranker", str(tmp_path / "reranker.onnx"), "--print"],
                             capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    metadata = json.loads(re.search(r"metadata   => json\('(.*?)'\)", printed.stdout)[1])
    assert metadata == {"function": "regression", "regressionOutput": "output",
                        "input": {"first_input": ["FIRST_INPUT"], "second_input": ["SECOND_INPUT"]}}
    assert "prediction(BGE_RERANKER using 'what is memory eviction?' as first_input" in printed.stdout


def test_oracle_dev_deploys_both_changelogs_in_order_with_ojdbc_on_the_classpath() -> None:
    text = ORACLE_DEV.read_text()
    assert re.search(r"for changelog in liquibase/changelog-master\.yaml liquibase/changelog-utplsql\.yaml", text)
    assert "--classpath=" in text and "ojdbc11" in text
    assert re.search(r'IMAGE="\$\{CTXASM_ORACLE_IMAGE:-gvenzl/oracle-free:23\}"', text)


# --- the workflow ----------------------------------------------------------------------------------------------


def _workflow() -> dict:
    document = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(document, dict)
    # YAML 1.1 reads the key `on` as True
    assert "on" in document or True in document, "the workflow has no trigger"
    return document


def _steps() -> list[dict]:
    jobs = _workflow()["jobs"]
    assert list(jobs) == ["oracle"]
    return jobs["oracle"]["steps"]


def _run_of(*words: str) -> dict:
    for step in _steps():
        if all(word in step.get("run", "") for word in words):
            return step
    raise AssertionError(f"no workflow step runs {' ... '.join(words)}")


def test_the_workflow_runs_oracle_free_with_oracle_text_as_a_service() -> None:
    job = _workflow()["jobs"]["oracle"]
    service = job["services"]["oracle"]
    assert service["image"].startswith("gvenzl/oracle-free:23")
    assert "slim" not in service["image"], "the slim images have no Oracle Text"
    assert "--health-cmd healthcheck.sh" in service["options"]
    assert service["env"]["ORACLE_PASSWORD"]
    for command in ("scripts/oracle-dev deploy", "scripts/oracle-dev seed"):
        assert _run_of(command)["env"]["CTXASM_ORACLE_CONTAINER"] == "${{ job.services.oracle.id }}"
    assert "CTXASM_ORACLE_CONTAINER" not in job["env"], "the job context is not available in a job's env"


def test_the_workflow_sets_up_and_deploys_through_oracle_dev() -> None:
    deploy = _run_of("scripts/oracle-dev deploy")
    assert deploy["id"] == "deploy"
    # it deploys even when a static gate failed (what Oracle says is worth having then), and the demo data
    # are loaded only on a database where everything compiled
    assert deploy["if"] == "${{ !cancelled() }}"
    assert _run_of("scripts/oracle-dev seed")["if"] == "${{ steps.deploy.outcome == 'success' }}"
    for gate in ("oracle_parse", "liquibase_render", "contract_check", "oracle_api", "oracle_names",
                 "oracle_semantics"):
        _run_of(f"ctxasm_dev.gates.{gate}")
    # the check after each changelog is part of deploy (tested above with a stub of the database)
    assert "check_compiled \"$changelog\"" in _function("liquibase_update")
    uses = [step.get("uses", "") for step in _steps()]
    assert any(use.startswith("actions/checkout@") for use in uses)
    assert any(use.startswith("actions/setup-python@") for use in uses)
    assert any(use.startswith("actions/setup-java@") for use in uses)


def _function(name: str) -> str:
    """The text of one shell function of scripts/oracle-dev."""
    match = re.search(rf"^{name}\(\) \{{\n(.*?)^\}}", ORACLE_DEV.read_text(), re.MULTILINE | re.DOTALL)
    assert match, f"scripts/oracle-dev has no function {name}"
    return match[1]


def test_the_workflow_runs_utplsql_with_junit_and_coverage_reporters() -> None:
    step = _run_of("scripts/oracle-dev utplsql")
    assert step["run"].strip() == "scripts/oracle-dev utplsql"
    # whenever the deployment compiled, even when the demo data (a later step) failed to load
    assert step["if"] == "${{ !cancelled() && steps.deploy.outcome == 'success' }}"
    run = _function("run_utplsql")
    assert re.search(r'"\$cli" run "\$OWNER/\$OWNER_PASSWORD@//localhost:\$PORT/\$SERVICE"', run)
    assert re.search(r'-f=ut_junit_reporter -o="\$REPORTS/junit\.xml"', run)
    assert re.search(r'-f=ut_coverage_cobertura_reporter -o="\$REPORTS/coverage\.xml"', run)
    assert "-f=ut_documentation_reporter" in run and '-p="$OWNER"' in run
    assert "-source_path=db/oracle" in run
    assert re.search(r"^\s+utplsql\)\n\s+run_utplsql", ORACLE_DEV.read_text(), re.MULTILINE)


def test_the_workflow_runs_the_conformance_suite_on_oracle() -> None:
    job = _workflow()["jobs"]["oracle"]
    step = _run_of("scripts/oracle-dev conformance")
    # never on a half-deployed database
    assert step["if"] == "${{ !cancelled() && steps.deploy.outcome == 'success' }}"
    env = {**job.get("env", {}), **step.get("env", {})}
    assert env.get("CTXASM_ORACLE_DSN") and env.get("CTXASM_ORACLE_OWNER_DSN")
    run = _function("run_conformance")
    assert 'CTXASM_ORACLE_DSN="$APP_DSN" CTXASM_ORACLE_OWNER_DSN="$OWNER_DSN"' in run
    assert "-m pytest -q tests/conformance -k oracle" in run
    # the DSNs the job sets are the ones oracle-dev derives from the passwords it is given
    assert env["CTXASM_ORACLE_DSN"] == f"ctxasm_app/{env['CTXASM_ORACLE_APP_PASSWORD']}@localhost:1521/FREEPDB1"
    assert env["CTXASM_ORACLE_OWNER_DSN"] == \
        f"ctxasm_owner/{env['CTXASM_ORACLE_OWNER_PASSWORD']}@localhost:1521/FREEPDB1"


def test_the_workflow_keeps_the_reports_even_when_tests_fail() -> None:
    upload = next(step for step in _steps() if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "${{ always() }}"
    assert "reports" in upload["with"]["path"]


# --- the loader on Oracle: one commit per tenant ------------------------------------------------------------


def _two_tenant_document(second_confidence: float) -> dict:
    def tenant(tenant_id: str, confidence: float) -> dict:
        return {"tenant_id": tenant_id, "display_name": tenant_id,
                "memories": [{"type": "entity", "id": f"{tenant_id}_fact", "subject": "model:x", "predicate": "p",
                              "confidence": confidence, "content": "A fact."}]}
    return {"tenants": [tenant("kit-one", 0.5), tenant("kit-two", second_confidence)]}


def _entity_rows(target) -> dict[str, int]:
    import psycopg

    with psycopg.connect(target.conninfo(target.admin)) as admin:
        return dict(admin.execute("SELECT tenant_id, count(*) FROM ctxasm.entity_memory GROUP BY tenant_id").fetchall())


def test_an_oracle_load_commits_each_tenant_while_it_is_set(clean_db) -> None:
    """Oracle Text indexes at commit under the committing session's VPD tenant, so a store that
    commits_each_tenant (OracleStore) gets one transaction per tenant. Shown on the real PostgreSQL store with
    the same flag: a failure in the second tenant keeps the first, where one transaction keeps nothing."""
    from ctxasm.services import load
    from ctxasm.local import pgconn
    from ctxasm.errors import ScenarioError
    from ctxasm.engines.oracle import OracleStore
    from ctxasm.engines.postgres import PostgresStore

    class PerTenantPostgresStore(PostgresStore):
        commits_each_tenant = True

    assert OracleStore.commits_each_tenant and not PostgresStore.commits_each_tenant
    with pgconn.connect(clean_db, pgconn.owner_login()) as connection:
        with pytest.raises(ScenarioError, match=r"tenants\[1\].memories\[0\]"):
            load.load_document(PostgresStore(connection), _two_tenant_document(7.0), "two.json")
    assert _entity_rows(clean_db) == {}
    with pgconn.connect(clean_db, pgconn.owner_login()) as connection:
        with pytest.raises(ScenarioError, match=r"tenants\[1\].memories\[0\]"):
            load.load_document(PerTenantPostgresStore(connection), _two_tenant_document(7.0), "two.json")
    assert _entity_rows(clean_db) == {"kit-one": 1}
    with pgconn.connect(clean_db, pgconn.owner_login()) as connection:
        store = PerTenantPostgresStore(connection)
        store.purge_tenant("kit-one")
        store.commit()
        report = load.load_document(store, _two_tenant_document(0.9), "two.json")
    assert sum(report.rows.values()) == 2
    assert _entity_rows(clean_db) == {"kit-one": 1, "kit-two": 1}
