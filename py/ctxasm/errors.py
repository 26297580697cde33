"""One exception class per failure a user can act on; import them all from here.

The database raises the same symbolic errors on both engines (docs/contract.md, contract/errors.toml): Oracle
as ORA-20<nnn>, PostgreSQL as SQLSTATE CX<nnn>. Their classes are generated from the catalogue into
ctxasm.error_classes (bases and behaviour written by hand in ctxasm.error_bases) and re-exported here;
`from_sqlstate` and `from_oracle_message` map a raised error to its class. The errors below are Python's own,
with no number in the contract.
"""

from __future__ import annotations

import re

from ctxasm import error_classes
from ctxasm.error_bases import CtxasmError, DatabaseError, FieldProblemError, NumberedError
from ctxasm.error_classes import *  # noqa: F403 (one class per catalogue error, listed in its __all__)
from ctxasm.error_classes import CONTRACT_ERRORS, RAISED_BY_ENGINES

__all__ = ["CONTRACT_ERRORS", "ConfigError", "CtxasmError", "DatabaseError", "DatabaseUnavailable",
           "FieldProblemError", "InvalidSelection", "NumberedError", "ProviderError", "ScenarioError", "brief_message",
           "from_oracle_message", "from_sqlstate", "shortened"]
__all__ += error_classes.__all__


class ConfigError(CtxasmError):
    code = "config_error"
    exit_code = 2


class ProviderError(CtxasmError):
    """The model provider could not be reached, timed out or refused the request, after bounded retries."""

    code = "provider_error"
    exit_code = 7


class DatabaseUnavailable(CtxasmError):
    code = "database_unavailable"
    exit_code = 3


class ScenarioError(CtxasmError):
    """A scenario file that does not validate; the message names the file and the JSON path."""

    code = "invalid_scenario"
    exit_code = 4

    def __init__(self, path: str, json_path: str, problem: str):
        self.path = path
        self.json_path = json_path
        self.problem = problem
        super().__init__(f"{path}: {json_path}: {problem}")


class InvalidSelection(CtxasmError):
    """A select_window document that does not match contract/schemas/selection.schema.json: an engine and the
    Python that reads it disagree (a deployed database older or newer than the package). `field` is the JSON
    path at fault, `problem` what is wrong there."""

    code = "invalid_selection"

    def __init__(self, message: str, *, field: str | None = None, problem: str | None = None):
        self.field = field
        self.problem = problem
        super().__init__(message)


def shortened(value: object, limit: int = 200) -> str:
    """A value as an error message may quote it: repr, cut to `limit` characters with the full length named."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def brief_message(message: str, value: object, limit: int = 200) -> str:
    """A validator's message with the bad value it quotes cut to `limit` characters (jsonschema quotes the
    whole instance: a 100,000-character argument would come back whole)."""
    full = repr(value)
    if len(full) > limit and full in message:
        message = message.replace(full, shortened(value, limit))
    return message if len(message) <= 2 * limit + 200 else message[:2 * limit + 200] + "..."


_SQLSTATE = re.compile(r"^CX(\d{3})$")
_ORA = re.compile(r"ORA-20(\d{3})")


def from_sqlstate(sqlstate: str | None, message: str) -> DatabaseError | None:
    """The contract error for a PostgreSQL SQLSTATE, or None if it is not one of ours."""
    match = _SQLSTATE.match(sqlstate or "")
    if not match:
        return None
    cls = RAISED_BY_ENGINES.get(int(match.group(1)))
    return cls(message) if cls else None


def from_oracle_message(message: str) -> DatabaseError | None:
    """The contract error for an Oracle error text (ORA-20nnn: ...), or None."""
    match = _ORA.search(message or "")
    if not match:
        return None
    cls = RAISED_BY_ENGINES.get(int(match.group(1)))
    if cls is None:
        return None
    text = message[match.end():].lstrip(": ").splitlines()[0] if message else message
    return cls(text)
