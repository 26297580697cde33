"""The error files: Oracle CTX_ERRORS (spec and body), PostgreSQL ctxasm.error_code, py/ctxasm/error_codes.py."""

from __future__ import annotations

from ctxasm_dev.contract.catalogue import ERRORS_FILE, Catalogue, ContractError
from ctxasm_dev.contract.targets import liquibase_header

HEADER = f"generated from {ERRORS_FILE}; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)"


def _engine_errors(catalogue: Catalogue) -> list[ContractError]:
    return [e for e in catalogue.errors if e.engines]


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def oracle_spec(catalogue: Catalogue) -> str:
    errors = _engine_errors(catalogue)
    width = max(len(f"co_{e.name}") for e in errors)
    msg_width = max(len(f"co_msg_{e.name}") for e in errors)
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
        "    * PRAGMA EXCEPTION_INIT (so callers and utPLSQL tests can catch it by name), a co_msg_ constant with",
        "    * what it says without its detail, and its symbolic name in error_name. The PostgreSQL twin raises the",
        "    * same names as SQLSTATE CX<nnn> (ctxasm.error_code).",
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
    lines.append("")
    for e in errors:
        lines.append(f"   {f'co_msg_{e.name}':<{msg_width}} constant varchar2(200) := {_sql_text(e.message)};")
    lines += [
        "",
        "   /**",
        "    * The symbolic name of an error number (co_invalid_claim gives 'invalid_claim'); NULL for a number",
        "    * that is not ours. Reads and writes nothing.",
        "    */",
        "   function error_name(in_code in pls_integer) return varchar2 deterministic;",
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
        "--comment: what a contract error says without its detail (Oracle: CTX_ERRORS.co_msg_<name>); NULL for a",
        "--comment: name that is not in the catalogue",
        "CREATE OR REPLACE FUNCTION ctxasm.error_message(in_name varchar) RETURNS varchar",
        "LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$",
        "    SELECT CASE in_name",
        *messages,
        "    END",
        "$$;",
        "--rollback DROP FUNCTION ctxasm.error_message(varchar);",
    ]) + "\n"


def python(catalogue: Catalogue) -> str:
    rows = [f"    ContractError({e.name!r}, {e.number}, {e.python_class!r}, {e.message!r}, {e.engines}),"
            for e in catalogue.errors]
    return "\n".join([
        f'"""The errors of the contract: {HEADER}.',
        "",
        "Oracle raises an error as ORA-<oracle_code>, PostgreSQL as SQLSTATE <sqlstate>; ctxasm.errors maps both",
        "to the class named python_class.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import NamedTuple",
        "",
        "",
        "class ContractError(NamedTuple):",
        "    name: str",
        "    number: int",
        "    python_class: str",
        "    message: str",
        "    #: False for an error only Python raises (its number is reserved on both engines)",
        "    engines: bool",
        "",
        "    @property",
        "    def sqlstate(self) -> str:",
        '        return f"CX{self.number}"',
        "",
        "    @property",
        "    def oracle_code(self) -> int:",
        "        return -20000 - self.number",
        "",
        "",
        "CONTRACT_ERRORS: tuple[ContractError, ...] = (",
        *rows,
        ")",
        "",
        "BY_NAME: dict[str, ContractError] = {error.name: error for error in CONTRACT_ERRORS}",
    ]) + "\n"
