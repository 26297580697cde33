"""The error files: Oracle CTX_ERRORS (spec and body), PostgreSQL ctxasm.error_code / error_message, and
py/ctxasm/error_classes.py (one exception class per error)."""

from __future__ import annotations

import json
import textwrap

from ctxasm import error_bases
from ctxasm_dev.contract.catalogue import ERRORS_FILE, Catalogue, CatalogueError, ContractError
from ctxasm_dev.contract.targets import liquibase_header

HEADER = f"generated from {ERRORS_FILE}; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)"


def _engine_errors(catalogue: Catalogue) -> list[ContractError]:
    return [e for e in catalogue.errors if e.engines]


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def oracle_spec(catalogue: Catalogue) -> str:
    errors = _engine_errors(catalogue)
    width = max(len(f"co_{e.name}") for e in errors)
    lines = [
        liquibase_header("ora_errors_spec"),
        f"-- {HEADER}",
        "",
        "--changeset ctxasm:ora-pkg-0010-ctx-errors-spec dbms:oracle runOnChange:true endDelimiter:/ "
        "stripComments:false",
        "create or replace package ctx_errors authid definer is",
        "   /**",
        "    * The error numbers of docs/contract.md, in one place (Trivadis G-5050).",
        "    *",
        "    * Every error has a co_ constant with the number, an e_ exception bound to it with",
        "    * PRAGMA EXCEPTION_INIT (so callers and utPLSQL tests can catch it by name), its symbolic name in",
        "    * error_name and what it says without a detail in error_message. The PostgreSQL twin raises the same",
        "    * names as SQLSTATE CX<nnn> (ctxasm.error_code, ctxasm.error_message).",
        "    * Engine-internal: not part of the contract, never granted to CTXASM_APP.",
        "    */",
        "",
    ]
    for retired in catalogue.retired:
        lines.append(f"   -- -{20000 + retired.number} ({retired.name}) is retired: {retired.note}")
    for reserved in (e for e in catalogue.errors if not e.engines):
        lines.append(f"   -- -{20000 + reserved.number} ({reserved.name}) is reserved: no routine here raises it")
    for e in errors:
        lines.append(f"   {f'co_{e.name}':<{width}} constant pls_integer := {e.oracle_code};")
    lines.append("")
    for e in errors:
        lines.append(f"   e_{e.name} exception;")
        lines.append(f"   pragma exception_init(e_{e.name}, {e.oracle_code});")
    lines += [
        "",
        "   /**",
        "    * The symbolic name of an error number (co_invalid_claim gives 'invalid_claim'); NULL for a number",
        "    * that is not ours. Reads and writes nothing.",
        "    */",
        "   function error_name(in_code in pls_integer) return varchar2 deterministic;",
        "",
        "   /**",
        "    * What an error says without a detail (co_invalid_claim gives 'the tenant claim was refused'), for a",
        "    * raise site that has no more to say; NULL for a number that is not ours. Reads and writes nothing.",
        "    */",
        "   function error_message(in_code in pls_integer) return varchar2 deterministic;",
        "",
        "   /**",
        "    * Raises in_code with the message '<symbolic name>: <in_detail>' (cut to the 2,000 characters",
        "    * RAISE_APPLICATION_ERROR keeps). Reads and writes nothing.",
        "    * @throws in_code always; -20108 invalid_argument when in_code is not one of the constants above",
        "    */",
        "   procedure raise_error(in_code in pls_integer, in_detail in varchar2);",
        "",
        "   /**",
        "    * A value quoted for an error message, as PostgreSQL's quote_literal does, or NULL spelt out; a value",
        "    * longer than 200 characters is cut there and its length named (PostgreSQL: ctxasm.quoted).",
        "    * Reads and writes nothing.",
        "    */",
        "   function quoted(in_text in varchar2) return varchar2 deterministic;",
        "end ctx_errors;",
        "/",
    ]
    return "\n".join(lines) + "\n"


def oracle_body(catalogue: Catalogue) -> str:
    cases = [f"                when co_{e.name} then '{e.name}'" for e in _engine_errors(catalogue)]
    messages = [f"                when co_{e.name} then {_sql_text(e.message)}" for e in _engine_errors(catalogue)]
    return "\n".join([
        liquibase_header("ora_errors_body"),
        f"-- {HEADER}",
        "",
        "--changeset ctxasm:ora-pkg-0010-ctx-errors-body dbms:oracle runOnChange:true endDelimiter:/ "
        "stripComments:false",
        "create or replace package body ctx_errors is",
        "   co_max_message_length constant pls_integer := 2000;",
        "   -- an error never echoes a long argument back whole",
        "   co_max_quoted_length  constant pls_integer := 200;",
        "",
        "   function error_name(in_code in pls_integer) return varchar2 deterministic is",
        "   begin",
        "      return case in_code",
        *cases,
        "             end;",
        "   end error_name;",
        "",
        "   function error_message(in_code in pls_integer) return varchar2 deterministic is",
        "   begin",
        "      return case in_code",
        *messages,
        "             end;",
        "   end error_message;",
        "",
        "   procedure raise_error(in_code in pls_integer, in_detail in varchar2) is",
        "      l_name varchar2(64);",
        "   begin",
        "      l_name := error_name(in_code => in_code);",
        "      if l_name is null then",
        "         raise_application_error(",
        "            co_invalid_argument,",
        "            'invalid_argument: ctx_errors.raise_error has no error number ' || to_char(in_code)",
        "         );",
        "      end if;",
        "      raise_application_error(in_code, substr(l_name || ': ' || in_detail, 1, co_max_message_length));",
        "   end raise_error;",
        "",
        "   function quoted(in_text in varchar2) return varchar2 deterministic is",
        "   begin",
        "      if in_text is null then",
        "         return 'NULL';",
        "      end if;",
        "      if length(in_text) > co_max_quoted_length then",
        "         return sys.dbms_assert.enquote_literal(str => replace(substr(in_text, 1, co_max_quoted_length), "
        "'''', ''''''))",
        "                || '... (' || to_char(length(in_text)) || ' characters)';",
        "      end if;",
        "      return sys.dbms_assert.enquote_literal(str => replace(in_text, '''', ''''''));",
        "   end quoted;",
        "end ctx_errors;",
        "/",
    ]) + "\n"


def postgresql(catalogue: Catalogue) -> str:
    errors = _engine_errors(catalogue)
    width = max(len(e.name) for e in errors) + 2
    cases = [f"        WHEN {_sql_text(e.name):<{width}} THEN '{e.sqlstate}'" for e in errors]
    messages = [f"        WHEN {_sql_text(e.name):<{width}} THEN {_sql_text(e.message)}" for e in errors]
    return "\n".join([
        liquibase_header("pg_errors"),
        f"-- {HEADER}",
        "",
        "--changeset ctxasm:pg-errors-error-code dbms:postgresql runOnChange:true splitStatements:false",
        "--comment: the SQLSTATE of a contract error by its name (docs/contract.md, \"Errors\"), for RAISE ... USING",
        "--comment: ERRCODE = ctxasm.error_code('invalid_field'): the twin of Oracle's CTX_ERRORS.co_<name>. A name",
        "--comment: that is not in the catalogue is a bug of the caller, refused loudly.",
        "CREATE OR REPLACE FUNCTION ctxasm.error_code(in_name varchar) RETURNS varchar",
        "LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$",
        "DECLARE",
        "    l_code varchar := CASE in_name",
        *cases,
        "    END;",
        "BEGIN",
        "    IF l_code IS NULL THEN",
        "        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',",
        "            MESSAGE = format('ctxasm.error_code: %s is not a contract error name', quote_nullable(in_name));",
        "    END IF;",
        "    RETURN l_code;",
        "END;",
        "$$;",
        "--rollback DROP FUNCTION ctxasm.error_code(varchar);",
        "",
        "--changeset ctxasm:pg-errors-error-message dbms:postgresql runOnChange:true splitStatements:false",
        "--comment: what a contract error says without a detail, for a raise site that has no more to say",
        "--comment: (Oracle: CTX_ERRORS.error_message); NULL for a name that is not in the catalogue",
        "CREATE OR REPLACE FUNCTION ctxasm.error_message(in_name varchar) RETURNS varchar",
        "LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$",
        "    SELECT CASE in_name",
        *messages,
        "    END",
        "$$;",
        "--rollback DROP FUNCTION ctxasm.error_message(varchar);",
    ]) + "\n"


#: the plain bases in ctxasm.error_bases: for an error the engines raise, and for one only Python raises
_ENGINE_BASE = "DatabaseError"
_PYTHON_BASE = "NumberedError"


def _base(error: ContractError) -> str:
    """The class an error's generated class derives from. A python_base must be a class of ctxasm.error_bases
    deriving from the plain base, and an error only Python raises must not be a DatabaseError; anything else is
    a catalogue error naming the entry."""
    plain = _ENGINE_BASE if error.engines else _PYTHON_BASE
    if not error.python_base:
        return plain
    base = getattr(error_bases, error.python_base, None)
    fits = isinstance(base, type) and issubclass(base, getattr(error_bases, plain)) and (
        error.engines or not issubclass(base, getattr(error_bases, _ENGINE_BASE)))
    if not fits:
        need = plain if error.engines else f"{plain} and not from {_ENGINE_BASE} (no database routine raises it)"
        raise CatalogueError(f"{ERRORS_FILE}: error {error.name}: python_base {error.python_base!r} is not a class of "
                             f"ctxasm.error_bases deriving from {need}")
    return error.python_base


def _py_text(text: str) -> str:
    """A double-quoted Python string literal."""
    return json.dumps(text, ensure_ascii=False)


def _docstring(error: ContractError) -> list[str]:
    summary = error.message[:1].upper() + error.message[1:] + "."
    when = textwrap.wrap(f"When: {error.when}" + ("" if error.when.endswith(".") else "."), width=112,
                         break_on_hyphens=False)
    text = "\n".join([summary, "", *when]).replace("\\", "\\\\").replace('"""', '\\"""')
    lines = [f"    {line}" if line else "" for line in text.split("\n")]
    lines[0] = '    """' + lines[0].lstrip()
    return [*lines, '    """']


def python_classes(catalogue: Catalogue) -> str:
    """py/ctxasm/error_classes.py: one exception class per catalogue error."""
    classes: list[str] = []
    for e in catalogue.errors:
        classes += ["", "", f"class {e.python_class}({_base(e)}):", *_docstring(e), "",
                    f"    code = {_py_text(e.name)}", f"    number = {e.number}"]
        if e.engines:
            classes.append(f"    sqlstate = {_py_text(e.sqlstate)}")
        classes.append(f"    summary = {_py_text(e.message)}")
    bases = sorted({_ENGINE_BASE, _PYTHON_BASE} | {_base(e) for e in catalogue.errors})
    names = [e.python_class for e in catalogue.errors]
    engine_names = [e.python_class for e in catalogue.errors if e.engines]
    return "\n".join([
        '"""The exception class of every error of the contract (contract/errors.toml).',
        "",
        f"{HEADER[:1].upper()}{HEADER[1:]}.",
        "",
        "Oracle raises an error as ORA-20<number>, PostgreSQL as SQLSTATE CX<number>; ctxasm.errors maps both to",
        "the class here and re-exports every class (import them from there). `summary` is what an error says",
        "without a detail; behaviour written by hand lives in the base an entry names (python_base, a class of",
        "ctxasm.error_bases).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"from ctxasm.error_bases import {', '.join(bases)}",
        "",
        "__all__ = [",
        *[f"    {_py_text(name)}," for name in names],
        "]",
        *classes,
        "",
        "",
        "#: every class above, in number order",
        "CONTRACT_ERRORS: tuple[type[NumberedError], ...] = (",
        *[f"    {name}," for name in names],
        ")",
        "",
        "#: number -> class of every error a database routine raises (ctxasm.errors.from_sqlstate and",
        "#: from_oracle_message map a raised error with it)",
        "RAISED_BY_ENGINES: dict[int, type[DatabaseError]] = {cls.number: cls for cls in (",
        *[f"    {name}," for name in engine_names],
        ")}",
    ]) + "\n"
