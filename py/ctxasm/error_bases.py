"""The bases of ctxasm's exceptions, and the hand-written behaviour a catalogue error can name.

ctxasm.error_classes (generated from contract/errors.toml) derives one class per catalogue error from a class
here: DatabaseError for an error the engines raise, NumberedError for one only Python raises, or the class an
entry names as its `python_base` (which must derive from the right one of those two). ctxasm.errors
re-exports everything; import from there.
"""

from __future__ import annotations

from typing import ClassVar, Self


class CtxasmError(Exception):
    """Base of every error ctxasm reports on purpose; `code` is the symbolic name."""

    code: ClassVar[str] = "ctxasm_error"
    exit_code: ClassVar[int] = 1


class NumberedError(CtxasmError):
    """An error of contract/errors.toml: its symbolic `code`, its `number` (Oracle -20<number>, PostgreSQL
    SQLSTATE CX<number>) and its `summary`, what it says without a detail. Raised with no message, it says
    "<code>: <summary>"; a raise site that knows more passes "<code>: <detail>" naming the field at fault."""

    number: ClassVar[int] = 0
    sqlstate: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def __init__(self, message: str | None = None):
        super().__init__(f"{self.code}: {self.summary}" if message is None else message)


class DatabaseError(NumberedError):
    """An error the contract defines that the CTX_* / ctx_* routines raise, mapped back by ctxasm.errors."""


class FieldProblemError(DatabaseError):
    """A database error that Python also raises about one field of a JSON document: `field` is the JSON path
    at fault ("shares.fact_check.evidence"; "$" the document itself) and `problem` what is wrong there; both
    None when only the database's message is known."""

    def __init__(self, message: str | None = None, *, field: str | None = None, problem: str | None = None):
        super().__init__(message)
        self.field = field
        self.problem = problem

    @classmethod
    def at(cls, field: str, problem: str) -> Self:
        """The error for one field: "<code>: <field>: <problem>"."""
        return cls(f"{cls.code}: {field}: {problem}", field=field, problem=problem)


class UnknownChoiceError(DatabaseError):
    """A database error that Python also raises for a value outside a known set: `value` is the value asked
    for and `known` the values there are; both empty when only the database's message is known."""

    def __init__(self, message: str | None = None, *, value: str | None = None, known: tuple[str, ...] = ()):
        super().__init__(message)
        self.value = value
        self.known = known

    @classmethod
    def of(cls, value: str, known: tuple[str, ...] | list[str], what: str) -> Self:
        """The error for one value: "<code>: '<value>' is not <what> (known: a, b)"."""
        known = tuple(known)
        return cls(f"{cls.code}: {value!r} is not {what} (known: {', '.join(known) or 'none'})", value=value,
                   known=known)
