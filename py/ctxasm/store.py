"""One adapter per engine over the write API (docs/contract.md), with one interface.

The adapters only call the database packages; every rule (validation, versioning, isolation) lives there.
Database errors of the contract come back as the exception classes of ctxasm.errors.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterator, Protocol

from .claims import ClaimSource
from .errors import DatabaseUnavailable, InvalidField, from_oracle_message, from_sqlstate

#: The one statement that scopes a PostgreSQL transaction: a signed claim, verified by the database.
SET_TENANT = "SELECT ctx_session.set_tenant(in_claim => %s)"


def _json_default(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def to_json(record: Any) -> str:
    return json.dumps(record, default=_json_default, ensure_ascii=False)


def unstorable_text(value: Any, path: str) -> str | None:
    """The first string in `value` that PostgreSQL (and Oracle) cannot store, as "path: problem", or None
    (found by the hostile-input tests): NUL, which no text or jsonb value may hold, and lone surrogates,
    which are not UTF-8 text. Keys are checked too."""
    if isinstance(value, str):
        if "\x00" in value:
            return f"{path}: contains a NUL character"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"{path}: not valid Unicode text (lone surrogate at offset {exc.start})"
        return None
    if isinstance(value, dict):
        pairs = [(path, key) for key in value] + [(f"{path}.{key}", item) for key, item in value.items()]
    elif isinstance(value, list):
        pairs = [(f"{path}[{index}]", item) for index, item in enumerate(value)]
    else:
        return None
    return next((problem for sub, item in pairs if (problem := unstorable_text(item, sub))), None)


def prepared(memory_type: str, record: dict[str, Any]) -> dict[str, Any]:
    """A record as the write path sends it: checked for unstorable text, with its token count."""
    if isinstance(record, dict):
        for key, value in record.items():
            problem = unstorable_text(value, key)
            if problem:
                raise InvalidField(f"invalid_field: {memory_type}.{problem}")
        return with_token_count(record)
    return record


def with_token_count(record: dict[str, Any]) -> dict[str, Any]:
    """The record with `content_tokens`, the o200k_base count of its content, added when it brings a text
    and no count of its own: assembly then joins the stored count instead of encoding the text again."""
    content = record.get("content")
    if not isinstance(content, str) or not content or "content_tokens" in record:
        return record
    from .tokens import count_tokens

    return {**record, "content_tokens": count_tokens(content)}


@dataclass(frozen=True)
class WindowScope:
    """The arguments of CTX_ASSEMBLY.select_window."""

    user_id: str | None
    agent_id: str | None
    thread_id: str | None
    intent: str
    evaluation_time: datetime
    question: str
    scores: dict[str, float] | None = None
    #: replay: read the rows as of this recorded snapshot (PostgreSQL) or SCN (Oracle) instead of now
    snapshot: str | None = None
    #: the question's embedding in pgvector text form ('[0.1,...]'); None = lexical retrieval only
    query_embedding: str | None = None
    #: replay (and the reranker's second pass): the source list the manifest recorded, instead of gathering
    #: candidates again
    sources: list[dict[str, Any]] | None = None


class MemoryStore(Protocol):
    """Every method that names a tenant sets it first from a claim the store's claim source gives for that
    tenant (ctxasm.claims): the database, not this layer, decides whether the claim holds."""

    engine: str
    # True where a bulk load must commit each tenant's rows on their own (Oracle Text under VPD: loader.py)
    commits_each_tenant: bool

    def register_tenant(self, tenant_id: str, display_name: str) -> None: ...
    def purge_tenant(self, tenant_id: str) -> int: ...
    def set_tenant(self, tenant_id: str) -> None: ...
    def clear_tenant(self) -> None: ...
    def current_tenant(self) -> str | None: ...
    def put_memory(self, memory_type: str, record: dict[str, Any]) -> str: ...
    def supersede(self, memory_type: str, memory_id: str, record: dict[str, Any]) -> int: ...
    def delete_memory(self, memory_type: str, memory_id: str, deleted_at: str | None = None) -> None: ...
    def erase(self, memory_type: str, memory_id: str) -> int: ...
    def erase_report(self, memory_type: str, memory_id: str) -> dict[str, Any]: ...
    def inventory(self, tenant_id: str) -> list[dict[str, Any]]: ...
    def capture_snapshot(self) -> str: ...
    def rows_as_of(self, memory_type: str, snapshot: str) -> list[dict[str, Any]]: ...
    def select_window(self, tenant_id: str, scope: WindowScope) -> dict[str, Any]: ...
    def selection_version(self) -> str: ...
    def record_manifest(self, manifest: dict[str, Any]) -> str: ...
    def read_manifest(self, tenant_id: str, manifest_id: str) -> dict[str, Any] | None: ...
    def latest_manifest_id(self, tenant_id: str, user_id: str | None, agent_id: str | None,
                           thread_id: str | None) -> str | None: ...
    def read_event(self, tenant_id: str, event_id: str) -> dict[str, Any] | None: ...
    def row_states(self, tenant_id: str, refs: list[list[Any]], snapshot: str) -> dict[str, tuple[str, str | None]]: ...
    # CTX_TOOLS: the database half of the MCP tools. Each sets the tenant and calls one routine; none commits.
    def active_tools(self, tenant_id: str, user_id: str | None, agent_id: str | None,
                     at: datetime) -> list[dict[str, Any]]: ...
    def search_memory(self, tenant_id: str, user_id: str | None, agent_id: str | None, thread_id: str | None,
                      at: datetime, query: str, query_embedding: str | None, limit: int) -> dict[str, Any]: ...
    def lookup_entity(self, tenant_id: str, user_id: str | None, agent_id: str | None, at: datetime,
                      subject: str, predicate: str) -> dict[str, Any]: ...
    def expand(self, tenant_id: str, manifest_id: str, memory_id: str, at: datetime) -> dict[str, Any]: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...


def _launch_claims() -> ClaimSource:
    from .claims import launch_claims

    return launch_claims()


class PostgresStore:
    """ctx_* schemas over a psycopg connection. The tenant lasts for the current transaction.

    `claims` gives the claim sent to set_tenant for a tenant: a ClaimSigner on the trusted side, a FixedClaim
    in a process launched for one tenant; by default the process's launch configuration (ctxasm.claims)."""

    engine = "postgresql"
    commits_each_tenant = False

    def __init__(self, connection: Any, claims: ClaimSource | None = None):
        self.connection = connection
        self.round_trips = 0
        self._claims = claims

    @property
    def claims(self) -> ClaimSource:
        if self._claims is None:
            self._claims = _launch_claims()
        return self._claims

    def _claim(self, tenant_id: str) -> str:
        return self.claims.claim_for(tenant_id)

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

    def set_tenant(self, tenant_id: str) -> None:
        self._scalar(SET_TENANT, (self._claim(tenant_id),))

    def clear_tenant(self) -> None:
        self._scalar("SELECT ctx_session.clear_tenant()")

    def current_tenant(self) -> str | None:
        return self._scalar("SELECT ctx_session.current_tenant()")

    def put_memory(self, memory_type: str, record: dict[str, Any]) -> str:
        return self._scalar(
            "SELECT ctx_memory.put_memory(in_memory_type => %s, in_record => %s::jsonb)",
            (memory_type, to_json(prepared(memory_type, record))),
        )

    def supersede(self, memory_type: str, memory_id: str, record: dict[str, Any]) -> int:
        return self._scalar(
            "SELECT ctx_memory.supersede(in_memory_type => %s, in_id => %s, in_record => %s::jsonb)",
            (memory_type, memory_id, to_json(prepared(memory_type, record))),
        )

    def delete_memory(self, memory_type: str, memory_id: str, deleted_at: str | None = None) -> None:
        self._scalar(
            "SELECT ctx_memory.delete_memory(in_memory_type => %s, in_id => %s, "
            "in_deleted_at => coalesce(%s::timestamptz, now()))",
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

    def rows_as_of(self, memory_type: str, snapshot: str) -> list[dict[str, Any]]:
        with self._errors():
            rows = self.connection.execute(
                "SELECT row_json FROM ctx_memory.rows_as_of(in_memory_type => %s, in_snapshot => %s)",
                (memory_type, snapshot),
            ).fetchall()
        return [row[0] for row in rows]

    def select_window(self, tenant_id: str, scope: WindowScope) -> dict[str, Any]:
        """set_tenant and select_window, pipelined: one network round trip."""
        with self._errors():
            with self.connection.pipeline():
                self.connection.execute(SET_TENANT, (self._claim(tenant_id),))
                cursor = self.connection.execute(
                    "SELECT ctx_assembly.select_window(in_user_id => %s, in_agent_id => %s, in_thread_id => %s, "
                    "in_intent => %s, in_evaluation_time => %s, in_question => %s, in_scores => %s::jsonb, "
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

    def _tool_call(self, tenant_id: str, query: str, params: tuple[Any, ...]) -> Any:
        """set_tenant and one ctx_tools routine, pipelined: one network round trip; no commit."""
        with self._errors():
            with self.connection.pipeline():
                self.connection.execute(SET_TENANT, (self._claim(tenant_id),))
                cursor = self.connection.execute(query, params)
            self.round_trips += 1
            return cursor.fetchone()[0]

    def active_tools(self, tenant_id: str, user_id: str | None, agent_id: str | None,
                     at: datetime) -> list[dict[str, Any]]:
        return self._tool_call(
            tenant_id,
            "SELECT ctx_tools.active_tools(in_user_id => %s, in_agent_id => %s, in_evaluation_time => %s)",
            (user_id, agent_id, at))

    def search_memory(self, tenant_id: str, user_id: str | None, agent_id: str | None, thread_id: str | None,
                      at: datetime, query: str, query_embedding: str | None, limit: int) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            "SELECT ctx_tools.search_memory(in_user_id => %s, in_agent_id => %s, in_thread_id => %s, "
            "in_evaluation_time => %s, in_query => %s, in_query_embedding => %s, in_limit => %s)",
            (user_id, agent_id, thread_id, at, query, query_embedding, limit))

    def lookup_entity(self, tenant_id: str, user_id: str | None, agent_id: str | None, at: datetime,
                      subject: str, predicate: str) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            "SELECT ctx_tools.lookup_entity(in_user_id => %s, in_agent_id => %s, in_evaluation_time => %s, "
            "in_subject => %s, in_predicate => %s)",
            (user_id, agent_id, at, subject, predicate))

    def expand(self, tenant_id: str, manifest_id: str, memory_id: str, at: datetime) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            "SELECT ctx_tools.expand(in_manifest_id => %s, in_memory_id => %s, in_evaluation_time => %s)",
            (manifest_id, memory_id, at))

    def commit(self) -> None:
        with self._errors():
            self.connection.commit()

    def rollback(self) -> None:
        if self.connection.closed:  # the server dropped it: nothing is left to roll back (issue 8, faults)
            return
        with self._errors():
            self.connection.rollback()


class OracleStore:
    """CTX_* packages over a python-oracledb connection (thin mode). Not exercised on machines without Oracle:
    the conformance suite runs it only when CTXASM_ORACLE_DSN is set."""

    engine = "oracle"
    # SYNC (ON COMMIT) indexes a transaction's new rows under the committing session's VPD context: rows of a
    # tenant other than the one set at commit would stay unindexed, so a load commits each tenant on its own.
    commits_each_tenant = True

    def __init__(self, connection: Any, claims: ClaimSource | None = None):
        self.connection = connection
        self._claims = claims

    claims = PostgresStore.claims
    _claim = PostgresStore._claim

    @contextmanager
    def _errors(self) -> Iterator[None]:
        import oracledb

        try:
            yield
        except oracledb.Error as exc:
            mapped = from_oracle_message(str(exc))
            if mapped is not None:
                raise mapped from None
            raise

    def _call(self, name: str, returns: Any = None, **params: Any) -> Any:
        with self._errors(), self.connection.cursor() as cursor:
            if returns is None:
                cursor.callproc(name, keyword_parameters=params)
                return None
            return cursor.callfunc(name, returns, keyword_parameters=params)

    def register_tenant(self, tenant_id: str, display_name: str) -> None:
        self._call("ctx_admin.register_tenant", in_tenant_id=tenant_id, in_display_name=display_name)

    def purge_tenant(self, tenant_id: str) -> int:
        return int(self._call("ctx_admin.purge_tenant", int, in_tenant_id=tenant_id))

    def set_tenant(self, tenant_id: str) -> None:
        self._call("ctx_session.set_tenant", in_claim=self._claim(tenant_id))

    def clear_tenant(self) -> None:
        self._call("ctx_session.clear_tenant")

    def current_tenant(self) -> str | None:
        return self._call("ctx_session.current_tenant", str)

    def put_memory(self, memory_type: str, record: dict[str, Any]) -> str:
        return self._call("ctx_memory.put_memory", str, in_memory_type=memory_type,
                          in_record=to_json(prepared(memory_type, record)))

    def supersede(self, memory_type: str, memory_id: str, record: dict[str, Any]) -> int:
        return int(self._call("ctx_memory.supersede", int, in_memory_type=memory_type, in_id=memory_id,
                              in_record=to_json(prepared(memory_type, record))))

    def delete_memory(self, memory_type: str, memory_id: str, deleted_at: str | None = None) -> None:
        params: dict[str, Any] = {"in_memory_type": memory_type, "in_id": memory_id}
        if deleted_at is not None:
            params["in_deleted_at"] = datetime.fromisoformat(deleted_at.replace("Z", "+00:00"))
        self._call("ctx_memory.delete_memory", **params)

    def erase(self, memory_type: str, memory_id: str) -> int:
        return int(self._call("ctx_memory.erase", int, in_memory_type=memory_type, in_id=memory_id))

    def capture_snapshot(self) -> str:
        return self._call("ctx_memory.capture_snapshot", str)

    def rows_as_of(self, memory_type: str, snapshot: str) -> list[dict[str, Any]]:
        import oracledb

        with self._errors():
            cursor = self._call("ctx_memory.rows_as_of", oracledb.DB_TYPE_CURSOR,
                                in_memory_type=memory_type, in_snapshot=snapshot)
            rows = cursor.fetchall()
        return [json.loads(row[0].read() if hasattr(row[0], "read") else row[0]) for row in rows]

    def select_window(self, tenant_id: str, scope: WindowScope) -> dict[str, Any]:
        """set_tenant and select_window in one anonymous block: one round trip."""
        import oracledb

        with self._errors(), self.connection.cursor() as cursor:
            result = cursor.var(oracledb.DB_TYPE_CLOB)
            cursor.execute(
                "begin ctx_session.set_tenant(in_claim => :claim); "
                ":result := ctx_assembly.select_window(in_user_id => :user_id, in_agent_id => :agent_id, "
                "in_thread_id => :thread_id, in_intent => :intent, in_evaluation_time => :at, "
                "in_question => :question, in_scores => :scores, in_snapshot => :snapshot, "
                "in_query_embedding => :embedding, in_sources => :sources); end;",
                claim=self._claim(tenant_id), user_id=scope.user_id, agent_id=scope.agent_id,
                thread_id=scope.thread_id,
                intent=scope.intent, at=scope.evaluation_time, question=scope.question,
                scores=None if scope.scores is None else to_json(scope.scores), snapshot=scope.snapshot,
                embedding=scope.query_embedding,
                sources=None if scope.sources is None else to_json(scope.sources), result=result,
            )
            return json.loads(result.getvalue().read())

    def selection_version(self) -> str:
        return self._call("ctx_assembly.selection_version", str)

    def record_manifest(self, manifest: dict[str, Any]) -> str:
        with self._errors(), self.connection.cursor() as cursor:
            manifest_id = cursor.callfunc("ctx_assembly.record_manifest", str,
                                          keyword_parameters={"in_manifest": to_json(manifest)})
        self.connection.commit()
        return manifest_id

    def _read(self, tenant_id: str, call: str, returns: Any = None, **binds: Any) -> Any:
        """set_tenant and one read function in one anonymous block, then rollback; a CLOB result is parsed as
        JSON (NULL gives None)."""
        import oracledb

        with self._errors(), self.connection.cursor() as cursor:
            result = cursor.var(returns or oracledb.DB_TYPE_CLOB)
            cursor.execute(f"begin ctx_session.set_tenant(in_claim => :claim); :result := {call}; end;",
                           claim=self._claim(tenant_id), result=result, **binds)
            value = result.getvalue()
        self.connection.rollback()
        if returns is not None:
            return value
        return json.loads(value.read()) if value is not None else None

    def row_states(self, tenant_id: str, refs: list[list[Any]], snapshot: str) -> dict[str, tuple[str, str | None]]:
        """As PostgresStore.row_states (CTX_MEMORY.row_states; definer's rights, so the application needs no
        FLASHBACK privilege)."""
        states = self._read(tenant_id, "ctx_memory.row_states(in_refs => :refs, in_snapshot => :snapshot)",
                            refs=to_json([list(r) for r in refs]), snapshot=snapshot)
        return {key: (now, then) for key, (now, then) in (states or {}).items()}

    def read_manifest(self, tenant_id: str, manifest_id: str) -> dict[str, Any] | None:
        return self._read(tenant_id, "ctx_assembly.read_manifest(in_manifest_id => :id)", id=manifest_id)

    def latest_manifest_id(self, tenant_id: str, user_id: str | None, agent_id: str | None,
                           thread_id: str | None) -> str | None:
        import oracledb

        return self._read(tenant_id, "ctx_assembly.latest_manifest_id(in_user_id => :u, in_agent_id => :a, "
                          "in_thread_id => :t)", oracledb.DB_TYPE_VARCHAR, u=user_id, a=agent_id, t=thread_id)

    def read_event(self, tenant_id: str, event_id: str) -> dict[str, Any] | None:
        return self._read(tenant_id, "ctx_memory.read_event(in_event_id => :id)", id=event_id)

    def inventory(self, tenant_id: str) -> list[dict[str, Any]]:
        return self._read(tenant_id, "ctx_memory.inventory()") or []

    def erase_report(self, memory_type: str, memory_id: str) -> dict[str, Any]:
        import oracledb

        with self._errors(), self.connection.cursor() as cursor:
            value = cursor.callfunc("ctx_memory.erase_report", oracledb.DB_TYPE_CLOB,
                                    keyword_parameters={"in_memory_type": memory_type, "in_id": memory_id})
        return json.loads(value.read())

    def _tool_call(self, tenant_id: str, call: str, **binds: Any) -> Any:
        """set_tenant and one CTX_TOOLS function in one anonymous block: one round trip; no commit.
        `call` is the function call with named binds; its CLOB result is parsed as JSON."""
        import oracledb

        with self._errors(), self.connection.cursor() as cursor:
            result = cursor.var(oracledb.DB_TYPE_CLOB)
            cursor.execute(f"begin ctx_session.set_tenant(in_claim => :claim); :result := {call}; end;",
                           claim=self._claim(tenant_id), result=result, **binds)
            return json.loads(result.getvalue().read())

    def active_tools(self, tenant_id: str, user_id: str | None, agent_id: str | None,
                     at: datetime) -> list[dict[str, Any]]:
        return self._tool_call(
            tenant_id,
            "ctx_tools.active_tools(in_user_id => :user_id, in_agent_id => :agent_id, in_evaluation_time => :at)",
            user_id=user_id, agent_id=agent_id, at=at)

    def search_memory(self, tenant_id: str, user_id: str | None, agent_id: str | None, thread_id: str | None,
                      at: datetime, query: str, query_embedding: str | None, limit: int) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            "ctx_tools.search_memory(in_user_id => :user_id, in_agent_id => :agent_id, in_thread_id => :thread_id, "
            "in_evaluation_time => :at, in_query => :query, in_query_embedding => :embedding, in_limit => :lim)",
            user_id=user_id, agent_id=agent_id, thread_id=thread_id, at=at, query=query,
            embedding=query_embedding, lim=limit)

    def lookup_entity(self, tenant_id: str, user_id: str | None, agent_id: str | None, at: datetime,
                      subject: str, predicate: str) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            "ctx_tools.lookup_entity(in_user_id => :user_id, in_agent_id => :agent_id, in_evaluation_time => :at, "
            "in_subject => :subject, in_predicate => :predicate)",
            user_id=user_id, agent_id=agent_id, at=at, subject=subject, predicate=predicate)

    def expand(self, tenant_id: str, manifest_id: str, memory_id: str, at: datetime) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            "ctx_tools.expand(in_manifest_id => :manifest_id, in_memory_id => :memory_id, in_evaluation_time => :at)",
            manifest_id=manifest_id, memory_id=memory_id, at=at)

    def commit(self) -> None:
        self.connection.commit()

    def rollback(self) -> None:
        self.connection.rollback()

