"""One exception class per failure a user can act on.

The database raises the same symbolic errors on both engines (docs/contract.md, contract/errors.toml): Oracle
as ORA-20<nnn>, PostgreSQL as SQLSTATE CX<nnn>. `from_sqlstate` and `from_oracle_message` map them to the classes here.
"""

from __future__ import annotations

import re

from ctxasm import error_codes


class CtxasmError(Exception):
    """Base of every error ctxasm reports on purpose; `code` is the symbolic name."""

    code: str = "ctxasm_error"
    exit_code: int = 1


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


class DatabaseError(CtxasmError):
    """An error the contract defines, raised by CTX_* / ctx_* routines."""

    number: int = 0

    def __init__(self, message: str):
        super().__init__(message)


class TenantNotSet(DatabaseError):
    code, number = "tenant_not_set", 102


class InvalidMemoryType(DatabaseError):
    code, number = "invalid_memory_type", 103


class InvalidField(DatabaseError):
    code, number = "invalid_field", 104


class DuplicateMemory(DatabaseError):
    code, number = "duplicate_memory", 105


class MemoryNotFound(DatabaseError):
    code, number = "memory_not_found", 106


class InvalidSnapshot(DatabaseError):
    code, number = "invalid_snapshot", 107


class InvalidArgument(DatabaseError):
    code, number = "invalid_argument", 108


class UnknownIntent(DatabaseError):
    code, number = "unknown_intent", 110


class BudgetMissing(DatabaseError):
    code, number = "budget_missing", 111


class InvalidBudget(DatabaseError):
    """A context_budget guideline that is malformed or inconsistent, refused by the database or by
    ctxasm.core.budget. `field` is the JSON path at fault within its content_json ("shares.fact_check.evidence";
    "$" the object itself) and `problem` what is wrong there; both None when only the database's message is known."""

    code, number = "invalid_budget", 112

    def __init__(self, message: str, *, field: str | None = None, problem: str | None = None):
        super().__init__(message)
        self.field = field
        self.problem = problem

    @classmethod
    def at(cls, field: str, problem: str) -> InvalidBudget:
        """The error for one field: "invalid_budget: <field>: <problem>"."""
        return cls(f"invalid_budget: {field}: {problem}", field=field, problem=problem)


class InvalidQuestion(DatabaseError):
    code, number = "invalid_question", 113


class InvalidManifest(DatabaseError):
    code, number = "invalid_manifest", 114


class NotInWindow(DatabaseError):
    """expand: the manifest is unknown to the tenant, or the memory id was not issued in it."""

    code, number = "not_in_window", 115


class SourceUnavailable(DatabaseError):
    """expand: the memory was issued, but its source row version is gone, superseded, erased or expired."""

    code, number = "source_unavailable", 116


class InvalidClaim(DatabaseError):
    """set_tenant refused the tenant claim: one error for a wrong, expired, tampered or malformed claim and for
    a tenant that is not registered, so a caller learns nothing about which tenants exist."""

    code, number = "invalid_claim", 118


class ScopeNotAllowed(DatabaseError):
    """A routine was called for a user or agent other than the one the session's claim names."""

    code, number = "scope_not_allowed", 119


class ToolRefused(CtxasmError):
    """The MCP server refuses a tool call because the tool's access_policy does not admit the caller.
    Raised in Python only; 117 is reserved for it on both engines, which never raise it."""

    code, number = "tool_refused", 117

    def __init__(self, message: str):
        super().__init__(message)


def _contract_classes() -> dict[int, type[DatabaseError]]:
    """Number -> class for every error the engines raise (contract/errors.toml, via error_codes). A catalogue
    error without a hand-written class above gets a plain one here, so a new error is one catalogue edit; a
    hand-written class that disagrees with the catalogue is a bug, refused at import."""
    classes: dict[int, type[DatabaseError]] = {}
    for entry in error_codes.CONTRACT_ERRORS:
        cls = globals().get(entry.python_class)
        if cls is None:
            cls = type(entry.python_class, (DatabaseError,), {"code": entry.name, "number": entry.number,
                                                             "__doc__": entry.message, "__module__": __name__})
            globals()[entry.python_class] = cls
        if (cls.code, cls.number) != (entry.name, entry.number):
            raise ImportError(f"ctxasm.errors.{entry.python_class} is {cls.code} {cls.number}; contract/errors.toml "
                              f"says {entry.name} {entry.number}")
        if entry.engines:
            classes[entry.number] = cls
    return classes


CONTRACT_ERRORS: dict[int, type[DatabaseError]] = _contract_classes()


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


def from_sqlstate(sqlstate: str | None, message: str) -> CtxasmError | None:
    """The contract error for a PostgreSQL SQLSTATE, or None if it is not one of ours."""
    match = _SQLSTATE.match(sqlstate or "")
    if not match:
        return None
    cls = CONTRACT_ERRORS.get(int(match.group(1)))
    return cls(message) if cls else None


def from_oracle_message(message: str) -> CtxasmError | None:
    """The contract error for an Oracle error text (ORA-20nnn: ...), or None."""
    match = _ORA.search(message or "")
    if not match:
        return None
    cls = CONTRACT_ERRORS.get(int(match.group(1)))
    if cls is None:
        return None
    text = message[match.end():].lstrip(": ").splitlines()[0] if message else message
    return cls(text)
