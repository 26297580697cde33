"""The same file names per package on both engines, or a stated reason.

Every file under db/postgresql/ has a twin of the same name in the same folder of db/oracle/ (an Oracle package
is the pair <name>.spec.sql / <name>.body.sql) and the other way round, unless the table "Files per engine" of
docs/oracle.md lists it as engine-only with a reason. A row naming a file that is missing, or one that has its
twin after all, fails too, so the table cannot go stale.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DOC = "docs/oracle.md"
SECTION = "### Files per engine"
ENGINES = {"PostgreSQL": "db/postgresql", "Oracle": "db/oracle"}
_ROW = re.compile(r"^\| `(?P<file>[\w/]+)` \| (?P<engine>\w+) \| (?P<why>.*?) \|$")


def engine_files(repo: Path, folder: str) -> set[str]:
    """The engine's files as '<folder>/<name>', an Oracle spec and body counted once."""
    base = repo / folder
    names = set()
    for path in base.rglob("*.sql"):
        name = path.relative_to(base).as_posix().removesuffix(".sql")
        names.add(name.removesuffix(".spec").removesuffix(".body"))
    return names


def engine_only(repo: Path) -> dict[str, tuple[str, str]]:
    """{file: (engine, why)} of the table in docs/oracle.md."""
    text = (repo / DOC).read_text(encoding="utf-8")
    assert SECTION in text, f"{DOC} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n#", 1)[0]
    rows: dict[str, tuple[str, str]] = {}
    for line in section.splitlines():
        match = _ROW.match(line.strip())
        if match:
            assert match["file"] not in rows, f"{DOC}: {match['file']} is listed twice"
            rows[match["file"]] = (match["engine"], match["why"].strip())
    return rows


def problems(repo: Path) -> list[str]:
    files = {engine: engine_files(repo, folder) for engine, folder in ENGINES.items()}
    listed = engine_only(repo)
    found: list[str] = []
    for engine, other in (("PostgreSQL", "Oracle"), ("Oracle", "PostgreSQL")):
        for name in sorted(files[engine] - files[other]):
            entry = listed.get(name)
            if entry is None:
                found.append(f"{ENGINES[engine]}/{name} has no twin in {ENGINES[other]}/ and no row in {DOC} "
                             f"({SECTION})")
            elif entry[0] != engine:
                found.append(f"{DOC}: {name} is listed as {entry[0]}-only, but exists on {engine} only")
    for name, (engine, why) in sorted(listed.items()):
        if engine not in ENGINES:
            found.append(f"{DOC}: {name}: unknown engine {engine!r}")
        elif not why:
            found.append(f"{DOC}: {name}: no reason given")
        elif name not in files[engine]:
            found.append(f"{DOC}: {name} is listed for {engine}, which has no such file")
        elif all(name in names for names in files.values()):
            found.append(f"{DOC}: {name} is listed as {engine}-only, but both engines have it")
    return found


def test_every_engine_file_has_its_twin_or_a_reason() -> None:
    assert engine_only(REPO), f"{DOC}: the table of engine-only files is empty"
    assert problems(REPO) == []
    # the twins the assembly split made: one file name per package on both sides
    both = engine_files(REPO, ENGINES["PostgreSQL"]) & engine_files(REPO, ENGINES["Oracle"])
    for name in ("internal/ctx_errors", "internal/ctx_rules", "internal/ctx_retrieval", "internal/ctx_sources",
                 "api/ctx_memory", "api/ctx_assembly"):
        assert name in both, name


@pytest.fixture()
def copy(tmp_path: Path) -> Path:
    for folder in ENGINES.values():
        for path in (REPO / folder).rglob("*.sql"):
            target = tmp_path / path.relative_to(REPO)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / DOC).write_text((REPO / DOC).read_text(encoding="utf-8"), encoding="utf-8")
    return tmp_path


def test_a_file_on_one_engine_only_needs_a_row(copy: Path) -> None:
    (copy / "db/postgresql/internal/ctx_extra.sql").write_text("", encoding="utf-8")
    assert problems(copy) == ["db/postgresql/internal/ctx_extra has no twin in db/oracle/ and no row in "
                              f"{DOC} ({SECTION})"]
    # an Oracle package's twin is its spec and body pair
    (copy / "db/oracle/internal/ctx_extra.spec.sql").write_text("", encoding="utf-8")
    (copy / "db/oracle/internal/ctx_extra.body.sql").write_text("", encoding="utf-8")
    assert problems(copy) == []


def test_a_stale_row_fails(copy: Path) -> None:
    (copy / "db/oracle/internal/row_checks.spec.sql").write_text("", encoding="utf-8")
    (copy / "db/postgresql/security/pinned_settings.sql").unlink()
    assert problems(copy) == [f"{DOC}: internal/row_checks is listed as PostgreSQL-only, but both engines have it",
                              f"{DOC}: security/pinned_settings is listed for PostgreSQL, which has no such file"]


def test_a_row_without_a_reason_fails(copy: Path) -> None:
    doc = copy / DOC
    text = doc.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `internal/ctx_json` |"))
    doc.write_text(text.replace(row, "| `internal/ctx_json` | Oracle |  |"), encoding="utf-8")
    assert problems(copy) == [f"{DOC}: internal/ctx_json: no reason given"]
