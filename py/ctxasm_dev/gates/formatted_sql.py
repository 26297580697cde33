"""Read Liquibase formatted-SQL files the way the gates need them: changesets, then statements.

Shared by oracle_parse (which parses every statement), liquibase_render (which needs the changeset ids)
and contract_check (which reads package specs). Line numbers are 1-based and refer to the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

HEADER = "--liquibase formatted sql"
# A file moved from where its changesets were first deployed keeps their identity (id, author, file path) with
# `logicalFilePath:<old path>` on its header line; Liquibase records and renders that path instead of the file's.
# A changeset moved into another file names its first file the same way on its own --changeset line.
_LOGICAL_FILE_PATH = re.compile(r"\blogicalFilePath:(\S+)", re.IGNORECASE)
_CHANGESET = re.compile(r"^--\s*changeset\s+(?P<author>\"[^\"]+\"|[^:\s]+):(?P<id>\S+)(?P<attrs>.*)$",
                        re.IGNORECASE)
_ATTRIBUTE = re.compile(r"(\w+):(\"[^\"]*\"|\S+)")
# Liquibase's own lines inside a changeset: they are not SQL and never reach the database as code.
_LIQUIBASE_LINE = re.compile(
    r"^--\s*(rollback\b|comment:|preconditions\b|precondition-|validCheckSum:|ignoreLines:)", re.IGNORECASE)

ORACLE_FOLDERS = ("db/oracle", "db/tests/utplsql")


@dataclass(frozen=True)
class Statement:
    text: str          # the statement without its terminator; Liquibase lines blanked, line count kept
    line: int          # file line of the statement's first line of text


@dataclass
class Changeset:
    path: Path
    author: str
    id: str
    line: int                          # the --changeset line
    attributes: dict[str, str]
    body_lines: list[tuple[int, str]] = field(default_factory=list)   # (file line, text), Liquibase lines blanked
    rollback_lines: list[int] = field(default_factory=list)

    @property
    def end_delimiter(self) -> str | None:
        return self.attributes.get("enddelimiter")

    def flag(self, name: str) -> bool:
        return self.attributes.get(name.lower(), "").lower() == "true"

    @property
    def dbms(self) -> set[str]:
        return {part.strip().lower() for part in self.attributes.get("dbms", "").split(",") if part.strip()}


@dataclass
class ChangelogFile:
    path: Path
    has_header: bool
    changesets: list[Changeset]
    logical_path: str | None = None    # the header's logicalFilePath, if any

    def identity_path(self, repo: Path, changeset: Changeset | None = None) -> str:
        """The file path Liquibase records for a changeset of this file: the changeset's own logicalFilePath,
        else the header's, else the real path."""
        own = changeset.attributes.get("logicalfilepath") if changeset else None
        return own or self.logical_path or self.path.relative_to(repo).as_posix()


def read_changelog(path: Path) -> ChangelogFile:
    lines = path.read_text(encoding="utf-8").split("\n")
    has_header = bool(lines) and lines[0].strip().lower().startswith(HEADER)
    logical = _LOGICAL_FILE_PATH.search(lines[0]) if has_header else None
    changesets: list[Changeset] = []
    current: Changeset | None = None
    for number, line in enumerate(lines, start=1):
        match = _CHANGESET.match(line.strip())
        if match:
            attributes = {key.lower(): value.strip('"') for key, value in _ATTRIBUTE.findall(match["attrs"])}
            current = Changeset(path, match["author"].strip('"'), match["id"], number, attributes)
            changesets.append(current)
            continue
        if current is None:
            continue
        if _LIQUIBASE_LINE.match(line.strip()):
            if line.strip().lower().startswith("--rollback"):
                current.rollback_lines.append(number)
            current.body_lines.append((number, ""))
            continue
        current.body_lines.append((number, line))
    return ChangelogFile(path, has_header, changesets, logical.group(1) if logical else None)


def oracle_files(repo: Path) -> list[Path]:
    """Every .sql file of the Oracle folders, by path (liquibase/changelog-master.yaml gives the deployment order)."""
    files: list[Path] = []
    for folder in ORACLE_FOLDERS:
        base = repo / folder
        if base.is_dir():
            files.extend(sorted(base.rglob("*.sql")))
    return sorted(files, key=lambda p: p.relative_to(repo).as_posix())


def split_on_slash(changeset: Changeset) -> tuple[list[Statement], list[str]]:
    """Statements ended by a line holding only `/` (endDelimiter:/); problems as text."""
    statements: list[Statement] = []
    problems: list[str] = []
    chunk: list[tuple[int, str]] = []
    for number, line in changeset.body_lines:
        if line.strip() == "/":
            _flush(chunk, statements)
            chunk = []
            continue
        chunk.append((number, line))
    if _meaningful(chunk):
        first = next(n for n, text in chunk if text.strip() and not text.strip().startswith("--"))
        problems.append(f"line {first}: text after the last lone '/' line; end every PL/SQL unit with '/'")
    return statements, problems


def split_on_semicolon(changeset: Changeset) -> tuple[list[Statement], list[str]]:
    """Plain SQL: statements end at `;` outside quotes and comments (Liquibase's default splitting)."""
    statements: list[Statement] = []
    chunk: list[tuple[int, str]] = []
    state = _ScanState()
    for number, line in changeset.body_lines:
        piece = ""
        for char, ends in state.scan(line):
            if ends:
                chunk.append((number, piece))
                _flush(chunk, statements)
                chunk, piece = [], ""
            else:
                piece += char
        chunk.append((number, piece))
    _flush(chunk, statements)
    return statements, []


def statements_of(changeset: Changeset) -> tuple[list[Statement], list[str]]:
    if changeset.end_delimiter is not None:
        if changeset.end_delimiter.strip() not in ("/", "\\n/", "\\n/$"):
            return [], [f"endDelimiter:{changeset.end_delimiter} is not supported by the gate; use endDelimiter:/"]
        return split_on_slash(changeset)
    return split_on_semicolon(changeset)


class _ScanState:
    """Tracks quotes and comments across lines so that `;` inside them does not end a statement."""

    def __init__(self) -> None:
        self.in_quote = False
        self.in_identifier = False
        self.in_block_comment = False

    def scan(self, line: str):
        index = 0
        while index < len(line):
            char = line[index]
            pair = line[index:index + 2]
            if self.in_block_comment:
                if pair == "*/":
                    self.in_block_comment = False
                    yield pair, False
                    index += 2
                    continue
                yield char, False
            elif self.in_quote:
                if char == "'":
                    self.in_quote = False
                yield char, False
            elif self.in_identifier:
                if char == '"':
                    self.in_identifier = False
                yield char, False
            elif pair == "--":
                yield line[index:], False
                return
            elif pair == "/*":
                self.in_block_comment = True
                yield pair, False
                index += 2
                continue
            elif char == "'":
                self.in_quote = True
                yield char, False
            elif char == '"':
                self.in_identifier = True
                yield char, False
            elif char == ";":
                yield char, True
            else:
                yield char, False
            index += 1


def _meaningful(chunk: list[tuple[int, str]]) -> bool:
    return any(text.strip() and not text.strip().startswith("--") for _, text in chunk)


def _flush(chunk: list[tuple[int, str]], statements: list[Statement]) -> None:
    if not _meaningful(chunk):
        return
    # Start at the first line with text (comments count: stored source keeps them), keep the rest verbatim.
    start = next(i for i, (_, text) in enumerate(chunk) if text.strip())
    kept = chunk[start:]
    while kept and not kept[-1][1].strip():
        kept.pop()
    statements.append(Statement("\n".join(text for _, text in kept), kept[0][0]))


def strip_sql_comments(text: str) -> str:
    """The text with -- and /* */ comments blanked (newlines and columns kept); quotes respected."""
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        pair = text[index:index + 2]
        if pair == "--":
            end = text.find("\n", index)
            end = length if end < 0 else end
        elif pair == "/*":
            end = text.find("*/", index + 2)
            end = length if end < 0 else end + 2
        elif text[index] in "'\"":
            end = text.find(text[index], index + 1)
            end = length if end < 0 else end + 1
            out.append(text[index:end])
            index = end
            continue
        else:
            out.append(text[index])
            index += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[index:end]))
        index = end
    return "".join(out)
