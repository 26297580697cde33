"""The exception class of every error of the contract (contract/errors.toml).

Generated from contract/errors.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate).

Oracle raises an error as ORA-20<number>, PostgreSQL as SQLSTATE CX<number>; ctxasm.errors maps both to
the class here and re-exports every class (import them from there). `summary` is what an error says
without a detail; behaviour written by hand lives in the base an entry names (python_base, a class of
ctxasm.error_bases).
"""

from __future__ import annotations

from ctxasm.error_bases import DatabaseError, FieldProblemError, NumberedError, UnknownChoiceError

__all__ = [
    "TenantNotSet",
    "InvalidMemoryType",
    "InvalidField",
    "DuplicateMemory",
    "MemoryNotFound",
    "InvalidSnapshot",
    "InvalidArgument",
    "UnknownIntent",
    "BudgetMissing",
    "InvalidBudget",
    "InvalidQuestion",
    "InvalidManifest",
    "NotInWindow",
    "SourceUnavailable",
    "ToolRefused",
    "InvalidClaim",
    "ScopeNotAllowed",
    "SessionLimitsLifted",
]


class TenantNotSet(DatabaseError):
    """No tenant is set in this transaction.

    When: a memory routine called with no tenant in the session.
    """

    code = "tenant_not_set"
    number = 102
    sqlstate = "CX102"
    summary = "no tenant is set in this transaction"


class InvalidMemoryType(DatabaseError):
    """Not a memory type.

    When: a memory type that is not one of the contract's memory types (the table of memory types above).
    """

    code = "invalid_memory_type"
    number = 103
    sqlstate = "CX103"
    summary = "not a memory type"


class InvalidField(DatabaseError):
    """A field is missing, of the wrong type, out of range or unknown.

    When: a field missing, of the wrong type, out of range, or unknown; the message names it as `<type>.<field>`.
    """

    code = "invalid_field"
    number = 104
    sqlstate = "CX104"
    summary = "a field is missing, of the wrong type, out of range or unknown"


class DuplicateMemory(DatabaseError):
    """The id already exists for the tenant.

    When: `put_memory` with an id that already exists for the tenant.
    """

    code = "duplicate_memory"
    number = 105
    sqlstate = "CX105"
    summary = "the id already exists for the tenant"


class MemoryNotFound(DatabaseError):
    """No active version of the id.

    When: `supersede` / `delete_memory` with no active version of that id.
    """

    code = "memory_not_found"
    number = 106
    sqlstate = "CX106"
    summary = "no active version of the id"


class InvalidSnapshot(DatabaseError):
    """The snapshot does not parse.

    When: `rows_as_of` with a snapshot that does not parse.
    """

    code = "invalid_snapshot"
    number = 107
    sqlstate = "CX107"
    summary = "the snapshot does not parse"


class InvalidArgument(DatabaseError):
    """A NULL or malformed argument.

    When: a NULL or malformed scalar argument.
    """

    code = "invalid_argument"
    number = 108
    sqlstate = "CX108"
    summary = "a NULL or malformed argument"


class UnknownIntent(UnknownChoiceError):
    """The intent is not one of the budget's shares.

    When: the intent is not one of the budget's `shares`.
    """

    code = "unknown_intent"
    number = 110
    sqlstate = "CX110"
    summary = "the intent is not one of the budget's shares"


class BudgetMissing(DatabaseError):
    """No context_budget guideline is in effect.

    When: no `context_budget` guideline in effect for the scope at the evaluation time.
    """

    code = "budget_missing"
    number = 111
    sqlstate = "CX111"
    summary = "no context_budget guideline is in effect"


class InvalidBudget(FieldProblemError):
    """The budget is malformed.

    When: a budget field the database uses is malformed (the Python layer checks the rest, same code), or two
    `context_budget` guidelines of the scope that wins are in effect at once (both named: id and version).
    """

    code = "invalid_budget"
    number = 112
    sqlstate = "CX112"
    summary = "the budget is malformed"


class InvalidQuestion(DatabaseError):
    """The question is empty or too long.

    When: an empty question, or one longer than the contract allows.
    """

    code = "invalid_question"
    number = 113
    sqlstate = "CX113"
    summary = "the question is empty or too long"


class InvalidManifest(DatabaseError):
    """The manifest is malformed.

    When: `record_manifest` with a manifest missing its arrays, hash or budget reference; in Python, a manifest that
    does not match contract/schemas/manifest.schema.json where it is written or read (the JSON path named).
    """

    code = "invalid_manifest"
    number = 114
    sqlstate = "CX114"
    summary = "the manifest is malformed"


class NotInWindow(DatabaseError):
    """The memory id was not issued in the manifest.

    When: `expand` with a manifest unknown to the tenant, or a memory id the manifest did not issue; names the
    memory id.
    """

    code = "not_in_window"
    number = 115
    sqlstate = "CX115"
    summary = "the memory id was not issued in the manifest"


class SourceUnavailable(DatabaseError):
    """The source row version is no longer available.

    When: `expand` of an issued memory whose source row version is gone, superseded, deleted, erased, expired or not
    yet in effect; names the memory id.
    """

    code = "source_unavailable"
    number = 116
    sqlstate = "CX116"
    summary = "the source row version is no longer available"


class ToolRefused(NumberedError):
    """The tool's access policy does not admit the caller.

    When: raised by the MCP server in Python only, when a tool's `access_policy` does not admit the caller or its
    stored schema leaves a string without `maxLength`.
    """

    code = "tool_refused"
    number = 117
    summary = "the tool's access policy does not admit the caller"


class InvalidClaim(DatabaseError):
    """The tenant claim was refused.

    When: `set_tenant` with a claim that is malformed, forged, tampered, expired, too long-lived or for an
    unregistered tenant: one message for all.
    """

    code = "invalid_claim"
    number = 118
    sqlstate = "CX118"
    summary = "the tenant claim was refused"


class ScopeNotAllowed(DatabaseError):
    """The scope is not the one the session's claim names.

    When: a routine called for another user or agent than the session's claim names, or a row written, deleted or
    erased outside it.
    """

    code = "scope_not_allowed"
    number = 119
    sqlstate = "CX119"
    summary = "the scope is not the one the session's claim names"


class SessionLimitsLifted(DatabaseError):
    """The session lifted a limit the deployment set.

    When: PostgreSQL: a contract routine called by an application session whose `statement_timeout` or
    `idle_in_transaction_session_timeout` is off or above the deployment's (a session may `SET` them itself, so the
    routines refuse to run instead); names the setting. Oracle never raises it: a profile's limits cannot be lifted
    by the session.
    """

    code = "session_limits_lifted"
    number = 120
    sqlstate = "CX120"
    summary = "the session lifted a limit the deployment set"


#: every class above, in number order
CONTRACT_ERRORS: tuple[type[NumberedError], ...] = (
    TenantNotSet,
    InvalidMemoryType,
    InvalidField,
    DuplicateMemory,
    MemoryNotFound,
    InvalidSnapshot,
    InvalidArgument,
    UnknownIntent,
    BudgetMissing,
    InvalidBudget,
    InvalidQuestion,
    InvalidManifest,
    NotInWindow,
    SourceUnavailable,
    ToolRefused,
    InvalidClaim,
    ScopeNotAllowed,
    SessionLimitsLifted,
)

#: number -> class of every error a database routine raises (ctxasm.errors.from_sqlstate and
#: from_oracle_message map a raised error with it)
RAISED_BY_ENGINES: dict[int, type[DatabaseError]] = {cls.number: cls for cls in (
    TenantNotSet,
    InvalidMemoryType,
    InvalidField,
    DuplicateMemory,
    MemoryNotFound,
    InvalidSnapshot,
    InvalidArgument,
    UnknownIntent,
    BudgetMissing,
    InvalidBudget,
    InvalidQuestion,
    InvalidManifest,
    NotInWindow,
    SourceUnavailable,
    InvalidClaim,
    ScopeNotAllowed,
    SessionLimitsLifted,
)}
