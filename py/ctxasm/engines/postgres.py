"""The PostgreSQL adapter: the ctx_* schemas over a psycopg connection."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Iterator

from ctxasm.claims import ClaimSource, StoreClaims
from ctxasm.core.selection import Selection
from ctxasm.engines.checks import from_json, prepared, to_json
from ctxasm.engines.store import WindowScope
from ctxasm.errors import CtxasmError, DatabaseUnavailable, from_sqlstate


class _AbortedPipelineNoise(logging.Filter):
    """psycopg logs "error ignored terminating <Pipeline ...>: ..." when a pipelined block is left by an error and
    leaving the aborted pipeline fails too: the first error is raised to the caller anyway (and names the
    problem), so this line is noise before it on stderr."""

    def filter(self, record: logging.LogRecord) -> bool:
        about = record.args[0] if isinstance(record.args, tuple) and record.args else None
        return not (str(record.msg).startswith("error ignored") and "Pipeline" in type(about).__name__)


logging.getLogger("psycopg").addFilter(_AbortedPipelineNoise())

#: The one statement that scopes a PostgreSQL transaction: a signed claim, verified by the database.
SET_TENANT = "SELECT ctx_session.set_tenant(in_claim => %s)"
PUT_MEMORY = "SELECT ctx_memory.put_memory(in_memory_type => %s, in_record => %s::jsonb)"
#: An evaluation time: the one given, else the database's now (the transaction's start, the clock that stamps a
#: row written without a valid_from), so a row committed before the call is in effect for it.
AT_OR_NOW = "coalesce(%s::timestamptz, now())"


class PostgresStore(StoreClaims):
    """ctx_* schemas over a psycopg connection. The tenant lasts for the current transaction.

    `claims` gives the claim sent to set_tenant for a tenant: a ClaimSigner on the trusted side, a FixedClaim
    in a process launched for one tenant; by default the process's launch configuration (ctxasm.claims).
    The connection's json and jsonb results are read with ctxasm.engines.checks.from_json from then on (the
    values json.loads gives, faster)."""

    engine = "postgresql"
    commits_each_tenant = False

    def __init__(self, connection: Any, claims: ClaimSource | None = None):
        from psycopg.types.json import set_json_loads

        self.connection = connection
        self.round_trips = 0
        self._claims = claims
        set_json_loads(from_json, connection)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            diag = getattr(exc, "diag", None)
            message = (diag.message_primary if diag and diag.message_primary else str(exc)).strip()
            # The failed transaction is over either way; leave the connection usable for the next call (the
            # MCP server keeps one connection for its whole session).
            try:
                self.connection.rollback()
            except psycopg.Error:
                pass
            mapped = from_sqlstate(getattr(exc, "sqlstate", None), message)
            if mapped is not None:
                raise mapped from None
            if isinstance(exc, psycopg.OperationalError):
                raise DatabaseUnavailable(f"PostgreSQL: {message}") from exc
            raise

    def _scalar(self, query: str, params: tuple[Any, ...] = ()) -> Any:
        with self._errors():
            row = self.connection.execute(query, params).fetchone()
        return row[0] if row else None

    def register_tenant(self, tenant_id: str, display_name: str) -> None:
        self._scalar("SELECT ctx_admin.register_tenant(in_tenant_id => %s, in_display_name => %s)",
                     (tenant_id, display_name))

    def purge_tenant(self, tenant_id: str) -> int:
        return self._scalar("SELECT ctx_admin.purge_tenant(in_tenant_id => %s)", (tenant_id,))

    def refresh_statistics(self, tenant_id: str, memory_types: list[str]) -> list[str]:
        """ANALYZE the tenant's partitions of the given types' tables (owner connection). Lexical weights come
        from a partition's planner statistics (ctxasm.question_terms): a partition ANALYZE has not reached yet
        weighs every word alike, so a bulk load refreshes them instead of waiting for autovacuum."""
        from psycopg import sql

        with self._errors():
            partitions = [row[0] for row in self.connection.execute(
                "SELECT ctxasm.tenant_partition(%s, t.table_name) FROM ctxasm.memory_type AS t "
                "WHERE t.memory_type = ANY (%s) ORDER BY t.table_name", (tenant_id, list(memory_types)))]
            for partition in partitions:
                self.connection.execute(sql.SQL("ANALYZE {}.{}").format(sql.Identifier("ctxasm"),
                                                                        sql.Identifier(partition)))
        return partitions

    def set_tenant(self, tenant_id: str) -> None:
        self._scalar(SET_TENANT, (self._claim(tenant_id),))

    def clear_tenant(self) -> None:
        self._scalar("SELECT ctx_session.clear_tenant()")

    def current_tenant(self) -> str | None:
        return self._scalar("SELECT ctx_session.current_tenant()")

    def put_memory(self, memory_type: str, record: dict[str, Any]) -> str:
        return self._scalar(PUT_MEMORY, (memory_type, to_json(prepared(memory_type, record))))

    def put_memories(self, items: Sequence[tuple[str, dict[str, Any]]]) -> bool:
        """put_memory of each (type, record) in order, pipelined (one network wait for all of them), under a
        savepoint of the caller's transaction. True when every one was written; False, with none of them
        written, when any was refused, or when no transaction is open (a block of its own would commit): the
        caller writes them one by one to learn which and why."""
        import psycopg

        if self.connection.info.transaction_status != psycopg.pq.TransactionStatus.INTRANS:
            return False
        try:
            params = [(memory_type, to_json(prepared(memory_type, record))) for memory_type, record in items]
        except CtxasmError:
            return False
        try:
            with self.connection.transaction(), self.connection.cursor() as cursor:
                cursor.executemany(PUT_MEMORY, params)
        except psycopg.Error:
            return False
        return True

    def supersede(self, memory_type: str, memory_id: str, record: dict[str, Any]) -> int:
        return self._scalar(
            "SELECT ctx_memory.supersede(in_memory_type => %s, in_id => %s, in_record => %s::jsonb)",
            (memory_type, memory_id, to_json(prepared(memory_type, record))),
        )

    def add_turn(self, record: dict[str, Any]) -> int:
        """The thread's next turn (CTX_MEMORY.add_turn); returns the turn_index it was given."""
        return self._scalar("SELECT ctx_memory.add_turn(in_record => %s::jsonb)",
                            (to_json(prepared("conversation", record)),))

    def delete_memory(self, memory_type: str, memory_id: str, deleted_at: str | None = None) -> None:
        self._scalar(
            f"SELECT ctx_memory.delete_memory(in_memory_type => %s, in_id => %s, in_deleted_at => {AT_OR_NOW})",
            (memory_type, memory_id, deleted_at),
        )

    def erase(self, memory_type: str, memory_id: str) -> int:
        return self._scalar("SELECT ctx_memory.erase(in_memory_type => %s, in_id => %s)", (memory_type, memory_id))

    def erase_report(self, memory_type: str, memory_id: str) -> dict[str, Any]:
        """erase, with what went per table (CTX_MEMORY.erase_report); the caller commits."""
        return self._scalar("SELECT ctx_memory.erase_report(in_memory_type => %s, in_id => %s)",
                            (memory_type, memory_id))

    def inventory(self, tenant_id: str) -> list[dict[str, Any]]:
        """The tenant's row versions per memory type and status (CTX_MEMORY.inventory)."""
        return self._read(tenant_id, "SELECT ctx_memory.inventory()", ())

    def capture_snapshot(self) -> str:
        return self._scalar("SELECT ctx_memory.capture_snapshot()")

    def database_time(self) -> datetime:
        """The database's clock (the one AT_OR_NOW reads), for a caller that needs "now" as a value."""
        value = self._scalar("SELECT now()")
        self.rollback()
        return value

    def rows_as_of(self, memory_type: str, snapshot: str) -> list[dict[str, Any]]:
        with self._errors():
            rows = self.connection.execute(
                "SELECT row_json FROM ctx_memory.rows_as_of(in_memory_type => %s, in_snapshot => %s)",
                (memory_type, snapshot),
            ).fetchall()
        return [row[0] for row in rows]

    def select_window(self, tenant_id: str, scope: WindowScope) -> Selection:
        """set_tenant and select_window, pipelined: one network round trip; the document parsed (typed) here."""
        return Selection.parse(self.select_window_document(tenant_id, scope))

    def select_window_document(self, tenant_id: str, scope: WindowScope) -> dict[str, Any]:
        """select_window's JSON document as the database returns it (what select_window parses)."""
        with self._errors():
            with self.connection.pipeline():
                self.connection.execute(SET_TENANT, (self._claim(tenant_id),))
                cursor = self.connection.execute(
                    "SELECT ctx_assembly.select_window(in_user_id => %s, in_agent_id => %s, in_thread_id => %s, "
                    f"in_intent => %s, in_evaluation_time => {AT_OR_NOW}, in_question => %s, in_scores => %s::jsonb, "
                    "in_snapshot => %s, in_query_embedding => %s, in_sources => %s::jsonb)",
                    (scope.user_id, scope.agent_id, scope.thread_id, scope.intent, scope.evaluation_time,
                     scope.question, None if scope.scores is None else to_json(scope.scores), scope.snapshot,
                     scope.query_embedding, None if scope.sources is None else to_json(scope.sources)),
                )
            self.round_trips += 1
            return cursor.fetchone()[0]

    def selection_version(self) -> str:
        return self._scalar("SELECT ctx_assembly.selection_version()")

    def record_manifest(self, manifest: dict[str, Any]) -> str:
        """record_manifest and COMMIT, pipelined: one network round trip."""
        with self._errors():
            with self.connection.pipeline():
                cursor = self.connection.execute(
                    "SELECT ctx_assembly.record_manifest(in_manifest => %s::jsonb)", (to_json(manifest),))
                self.connection.commit()
            self.round_trips += 1
            return cursor.fetchone()[0]

    def _read(self, tenant_id: str, query: str, params: tuple[Any, ...]) -> Any:
        """set_tenant and one read routine, pipelined: one round trip; the transaction is then rolled back."""
        with self._errors():
            with self.connection.pipeline():
                self.connection.execute(SET_TENANT, (self._claim(tenant_id),))
                cursor = self.connection.execute(query, params)
            self.round_trips += 1
            row = cursor.fetchone()
            self.connection.rollback()
        return row[0] if row else None

    def read_manifest(self, tenant_id: str, manifest_id: str) -> dict[str, Any] | None:
        """A recorded manifest of the tenant, or None (another tenant's manifest is unknown to this one)."""
        return self._read(tenant_id, "SELECT ctx_assembly.read_manifest(in_manifest_id => %s)", (manifest_id,))

    def latest_manifest_id(self, tenant_id: str, user_id: str | None, agent_id: str | None,
                           thread_id: str | None) -> str | None:
        """The scope's most recent window: what `expand` may open when no manifest is named."""
        return self._read(tenant_id, "SELECT ctx_assembly.latest_manifest_id(in_user_id => %s, in_agent_id => %s, "
                          "in_thread_id => %s)", (user_id, agent_id, thread_id))

    def read_event(self, tenant_id: str, event_id: str) -> dict[str, Any] | None:
        """A conversation event of the tenant (a tool result, a recorded request), or None."""
        return self._read(tenant_id, "SELECT ctx_memory.read_event(in_event_id => %s)", (event_id,))

    def row_states(self, tenant_id: str, refs: list[list[Any]], snapshot: str) -> dict[str, tuple[str, str | None]]:
        """For each "type:id:version": (its status now, its status in `snapshot` or None if it was not
        readable then). Rows this tenant cannot see now are absent from the result."""
        states = self._read(tenant_id, "SELECT ctx_memory.row_states(in_refs => %s::jsonb, in_snapshot => %s)",
                            (to_json([list(r) for r in refs]), snapshot))
        return {key: (now, then) for key, (now, then) in (states or {}).items()}

    def read_compressions(self, tenant_id: str, refs: list[list[Any]]) -> dict[str, dict[str, Any]]:
        """The stored compressions `refs` names, as they are now, by "compression:id:version"; the ones this
        tenant cannot see are absent (CTX_MEMORY.read_compressions)."""
        return self._read(tenant_id, "SELECT ctx_memory.read_compressions(in_refs => %s::jsonb)",
                          (to_json([list(r) for r in refs]),)) or {}

    def thread_activity(self, tenant_id: str, user_id: str | None, agent_id: str | None,
                        limit: int) -> list[dict[str, Any]]:
        """The threads with message turns their episode summary does not cover yet (CTX_MEMORY.thread_activity)."""
        return self._read(tenant_id, "SELECT ctx_memory.thread_activity(in_user_id => %s, in_agent_id => %s, "
                          "in_limit => %s)", (user_id, agent_id, limit)) or []

    def thread_turns(self, tenant_id: str, thread_id: str, after_turn: int, limit: int) -> list[dict[str, Any]]:
        """A thread's message turns after `after_turn`, in order (CTX_MEMORY.thread_turns)."""
        return self._read(tenant_id, "SELECT ctx_memory.thread_turns(in_thread_id => %s, in_after_turn => %s, "
                          "in_limit => %s)", (thread_id, after_turn, limit)) or []

    def read_facts(self, tenant_id: str, subject_prefix: str, predicate: str | None, memory_id: str | None,
                   limit: int) -> list[dict[str, Any]]:
        """Facts whose subject starts with `subject_prefix` that the claim's user and agent own: the active ones,
        newest first, or every version of `memory_id` (CTX_MEMORY.read_facts)."""
        return self._read(tenant_id, "SELECT ctx_memory.read_facts(in_subject_prefix => %s, in_predicate => %s, "
                          "in_id => %s, in_limit => %s)", (subject_prefix, predicate, memory_id, limit)) or []

    def _tool_call(self, tenant_id: str, query: str, params: tuple[Any, ...]) -> Any:
        """set_tenant and one ctx_tools routine, pipelined: one network round trip; no commit."""
        with self._errors():
            with self.connection.pipeline():
                self.connection.execute(SET_TENANT, (self._claim(tenant_id),))
                cursor = self.connection.execute(query, params)
            self.round_trips += 1
            return cursor.fetchone()[0]

    def active_tools(self, tenant_id: str, user_id: str | None, agent_id: str | None,
                     at: datetime | None) -> list[dict[str, Any]]:
        return self._tool_call(
            tenant_id,
            f"SELECT ctx_tools.active_tools(in_user_id => %s, in_agent_id => %s, in_evaluation_time => {AT_OR_NOW})",
            (user_id, agent_id, at))

    def search_memory(self, tenant_id: str, user_id: str | None, agent_id: str | None, thread_id: str | None,
                      at: datetime | None, query: str, query_embedding: str | None, limit: int) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            "SELECT ctx_tools.search_memory(in_user_id => %s, in_agent_id => %s, in_thread_id => %s, "
            f"in_evaluation_time => {AT_OR_NOW}, in_query => %s, in_query_embedding => %s, in_limit => %s)",
            (user_id, agent_id, thread_id, at, query, query_embedding, limit))

    def lookup_entity(self, tenant_id: str, user_id: str | None, agent_id: str | None, at: datetime | None,
                      subject: str, predicate: str) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            "SELECT ctx_tools.lookup_entity(in_user_id => %s, in_agent_id => %s, "
            f"in_evaluation_time => {AT_OR_NOW}, in_subject => %s, in_predicate => %s)",
            (user_id, agent_id, at, subject, predicate))

    def expand(self, tenant_id: str, manifest_id: str, memory_id: str, at: datetime | None) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            f"SELECT ctx_tools.expand(in_manifest_id => %s, in_memory_id => %s, in_evaluation_time => {AT_OR_NOW})",
            (manifest_id, memory_id, at))

    def commit(self) -> None:
        with self._errors():
            self.connection.commit()

    def rollback(self) -> None:
        if self.connection.closed:  # the server dropped it: nothing is left to roll back
            return
        with self._errors():
            self.connection.rollback()
