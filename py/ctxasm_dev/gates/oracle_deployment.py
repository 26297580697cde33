"""The database the Oracle code is deployed into, as far as the rules of oracle_semantics depend on it.

Every limit below is Oracle's, from the documentation section named next to it; the settings are the
deployment's (scripts/oracle-dev and docs/oracle.md, "Requirements"). The gate reads the length semantics the
deployment sets from scripts/oracle-dev's logon trigger, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

ORACLE_DEV = "scripts/oracle-dev"
_LOGON_SEMANTICS = re.compile(r"alter session set nls_length_semantics\s*=\s*(char|byte)", re.IGNORECASE)
_SIZED = re.compile(r"^(?P<base>n?varchar2|varchar|n?char|raw)\s*\(\s*(?P<size>\d+)\s*(?P<unit>byte|char)?\s*\)$")


@dataclass(frozen=True)
class Deployment:
    # 23ai/26ai: SQL has a BOOLEAN type ("SQL BOOLEAN Data Type", PL/SQL Language Reference, "Changes in This
    # Release"); before 23 a BOOLEAN may reach SQL only as a variable passed to a PL/SQL function
    release: int = 23
    # NLS_LENGTH_SEMANTICS of the owner's sessions: scripts/oracle-dev's logon trigger sets CHAR
    length_semantics: str = "CHAR"
    # AL32UTF8, the character set of the gvenzl images and Oracle's default: up to 4 bytes per character
    bytes_per_char: int = 4
    # MAX_STRING_SIZE (Database Reference): STANDARD, the default, cannot be changed back once EXTENDED
    max_string_size: str = "STANDARD"
    # "Database Object Names and Qualifiers" (SQL Language Reference): 1 to 128 bytes with COMPATIBLE >= 12.2
    identifier_bytes: int = 128
    # DRG-11309: a FILTER BY column is at most 249 bytes ("Token Limitations for Oracle Text Indexes": SDATA
    # sections, which FILTER BY and ORDER BY columns map to by default, store VARCHAR2(249 BYTE))
    text_structured_bytes: int = 249
    # PL/SQL Language Reference, "VARCHAR2 Data Type": 1 to 32,767 bytes in PL/SQL, whatever MAX_STRING_SIZE
    plsql_string_bytes: int = 32767

    def sql_bytes(self, base: str) -> int:
        """The largest size a SQL datatype may declare (CREATE TABLE, CAST, RETURNING): MAX_STRING_SIZE."""
        if base in ("char", "nchar"):
            return 2000
        if self.max_string_size == "EXTENDED":
            return 32767
        return 2000 if base == "raw" else 4000

    def sql_literal_bytes(self) -> int:
        """ORA-01704: a text literal in SQL is at most 4,000 bytes (32,767 with MAX_STRING_SIZE = EXTENDED)."""
        return 32767 if self.max_string_size == "EXTENDED" else 4000

    def column_bytes(self, declared: str | None) -> int | None:
        """The most bytes a character or RAW column of this declared type can hold, under the deployment's
        length semantics and character set; None for other types."""
        if not declared:
            return None
        match = _SIZED.match(declared.strip().lower())
        if not match:
            return None
        size = int(match["size"])
        base = match["base"]
        if base == "raw" or match["unit"] == "byte":
            return size
        if base.startswith("n"):
            return size * 2            # AL16UTF16, the national character set of the images
        in_chars = match["unit"] == "char" or self.length_semantics == "CHAR"
        return min(size * self.bytes_per_char, self.sql_bytes(base)) if in_chars else size


DEPLOYMENT = Deployment()


def length_semantics_of(repo: Path) -> str | None:
    """The NLS_LENGTH_SEMANTICS scripts/oracle-dev's logon trigger sets, or None when it sets none."""
    path = repo / ORACLE_DEV
    if not path.exists():
        return None
    match = _LOGON_SEMANTICS.search(path.read_text(encoding="utf-8"))
    return match.group(1).upper() if match else None


def for_repository(repo: Path, **overrides: object) -> Deployment:
    """The deployment the gate checks against: the defaults above, the repository's length semantics, then
    what the command line overrides."""
    deployment = DEPLOYMENT
    semantics = length_semantics_of(repo)
    if semantics:
        deployment = replace(deployment, length_semantics=semantics)
    return replace(deployment, **{k: v for k, v in overrides.items() if v is not None})
