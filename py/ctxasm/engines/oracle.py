"""The Oracle adapter: the CTX_* packages over a python-oracledb connection (thin mode)."""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Iterator

from ctxasm.claims import ClaimSource, StoreClaims
from ctxasm.core.selection import Selection
from ctxasm.engines.checks import prepared, to_json
from ctxasm.engines.store import WindowScope
from ctxasm.errors import from_oracle_message

#: The head of an anonymous block whose `l_at` is the evaluation time: the one bound to :at, else the database's
#: now (SYSTIMESTAMP, the clock that stamps a row written without a valid_from), so a row committed before the
#: call is in effect for it. A PL/SQL variable, so a NULL bind of any type converts.
AT_OR_NOW = "declare l_at timestamp with time zone := :at; begin "
EVALUATION_TIME = "in_evaluation_time => nvl(l_at, systimestamp)"


class OracleStore(StoreClaims):
    """CTX_* packages over a python-oracledb connection (thin mode). Not exercised on machines without Oracle:
    the conformance suite runs it only when CTXASM_ORACLE_DSN is set."""

    engine = "oracle"
    # SYNC (ON COMMIT) indexes a transaction's new rows under the committing session's VPD context: rows of a
    # tenant other than the one set at commit would stay unindexed, so a load commits each tenant on its own.
    commits_each_tenant = True

    def __init__(self, connection: Any, claims: ClaimSource | None = None):
        self.connection = connection
        self._claims = claims

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

    def refresh_statistics(self, tenant_id: str, memory_types: list[str]) -> list[str]:
        """Nothing to refresh: Oracle Text scores terms from its own index, which a commit synchronises, and
        the tables are not partitioned by tenant (optimizer statistics are the database's scheduled job)."""
        return []

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

    def add_turn(self, record: dict[str, Any]) -> int:
        return int(self._call("ctx_memory.add_turn", int, in_record=to_json(prepared("conversation", record))))

    def delete_memory(self, memory_type: str, memory_id: str, deleted_at: str | None = None) -> None:
        params: dict[str, Any] = {"in_memory_type": memory_type, "in_id": memory_id}
        if deleted_at is not None:
            params["in_deleted_at"] = datetime.fromisoformat(deleted_at.replace("Z", "+00:00"))
        self._call("ctx_memory.delete_memory", **params)

    def erase(self, memory_type: str, memory_id: str) -> int:
        return int(self._call("ctx_memory.erase", int, in_memory_type=memory_type, in_id=memory_id))

    def capture_snapshot(self) -> str:
        return self._call("ctx_memory.capture_snapshot", str)

    def database_time(self) -> datetime:
        """The database's clock (SYSTIMESTAMP, the one AT_OR_NOW reads), for a caller that needs "now" as a value."""
        with self._errors(), self.connection.cursor() as cursor:
            cursor.execute("select sys_extract_utc(systimestamp) from dual")
            value = cursor.fetchone()[0]
        return value.replace(tzinfo=timezone.utc)

    def rows_as_of(self, memory_type: str, snapshot: str) -> list[dict[str, Any]]:
        import oracledb

        with self._errors():
            cursor = self._call("ctx_memory.rows_as_of", oracledb.DB_TYPE_CURSOR,
                                in_memory_type=memory_type, in_snapshot=snapshot)
            rows = cursor.fetchall()
        return [json.loads(row[0].read() if hasattr(row[0], "read") else row[0]) for row in rows]

    def select_window(self, tenant_id: str, scope: WindowScope) -> Selection:
        """set_tenant and select_window in one anonymous block: one round trip; the document parsed (typed) here."""
        return Selection.parse(self.select_window_document(tenant_id, scope))

    def select_window_document(self, tenant_id: str, scope: WindowScope) -> dict[str, Any]:
        """select_window's JSON document as the database returns it (what select_window parses)."""
        import oracledb

        with self._errors(), self.connection.cursor() as cursor:
            result = cursor.var(oracledb.DB_TYPE_CLOB)
            cursor.execute(
                f"{AT_OR_NOW}ctx_session.set_tenant(in_claim => :claim); "
                ":result := ctx_assembly.select_window(in_user_id => :user_id, in_agent_id => :agent_id, "
                f"in_thread_id => :thread_id, in_intent => :intent, {EVALUATION_TIME}, "
                "in_question => :question, in_scores => :scores, in_snapshot => :snapshot, "
                "in_query_embedding => :embedding, in_sources => :sources); end;",
                claim=self._claim(tenant_id), user_id=scope.user_id, agent_id=scope.agent_id,
                thread_id=scope.thread_id,
                intent=scope.intent, at=scope.evaluation_time, question=scope.question,
                scores=None if scope.scores is None else to_json(scope.scores), snapshot=scope.snapshot,
                embedding=scope.query_embedding,
                sources=None if scope.sources is None else to_json(scope.sources), result=result,
            )
            document: dict[str, Any] = json.loads(result.getvalue().read())
            return document

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

    def read_compressions(self, tenant_id: str, refs: list[list[Any]]) -> dict[str, dict[str, Any]]:
        return self._read(tenant_id, "ctx_memory.read_compressions(in_refs => :refs)",
                          refs=to_json([list(r) for r in refs])) or {}

    def thread_activity(self, tenant_id: str, user_id: str | None, agent_id: str | None,
                        limit: int) -> list[dict[str, Any]]:
        return self._read(tenant_id, "ctx_memory.thread_activity(in_user_id => :u, in_agent_id => :a, "
                          "in_limit => :n)", u=user_id, a=agent_id, n=limit) or []

    def thread_turns(self, tenant_id: str, thread_id: str, after_turn: int, limit: int) -> list[dict[str, Any]]:
        return self._read(tenant_id, "ctx_memory.thread_turns(in_thread_id => :t, in_after_turn => :after, "
                          "in_limit => :n)", t=thread_id, after=after_turn, n=limit) or []

    def read_facts(self, tenant_id: str, subject_prefix: str, predicate: str | None, memory_id: str | None,
                   limit: int) -> list[dict[str, Any]]:
        return self._read(tenant_id, "ctx_memory.read_facts(in_subject_prefix => :prefix, in_predicate => :p, "
                          "in_id => :id, in_limit => :n)", prefix=subject_prefix, p=predicate, id=memory_id,
                          n=limit) or []

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
        `call` is the function call with named binds (its evaluation time EVALUATION_TIME, bound from `at`); its
        CLOB result is parsed as JSON."""
        import oracledb

        with self._errors(), self.connection.cursor() as cursor:
            result = cursor.var(oracledb.DB_TYPE_CLOB)
            cursor.execute(f"{AT_OR_NOW}ctx_session.set_tenant(in_claim => :claim); :result := {call}; end;",
                           claim=self._claim(tenant_id), result=result, **binds)
            return json.loads(result.getvalue().read())

    def active_tools(self, tenant_id: str, user_id: str | None, agent_id: str | None,
                     at: datetime | None) -> list[dict[str, Any]]:
        return self._tool_call(
            tenant_id,
            f"ctx_tools.active_tools(in_user_id => :user_id, in_agent_id => :agent_id, {EVALUATION_TIME})",
            user_id=user_id, agent_id=agent_id, at=at)

    def search_memory(self, tenant_id: str, user_id: str | None, agent_id: str | None, thread_id: str | None,
                      at: datetime | None, query: str, query_embedding: str | None, limit: int) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            "ctx_tools.search_memory(in_user_id => :user_id, in_agent_id => :agent_id, in_thread_id => :thread_id, "
            f"{EVALUATION_TIME}, in_query => :query, in_query_embedding => :embedding, in_limit => :lim)",
            user_id=user_id, agent_id=agent_id, thread_id=thread_id, at=at, query=query,
            embedding=query_embedding, lim=limit)

    def lookup_entity(self, tenant_id: str, user_id: str | None, agent_id: str | None, at: datetime | None,
                      subject: str, predicate: str) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            f"ctx_tools.lookup_entity(in_user_id => :user_id, in_agent_id => :agent_id, {EVALUATION_TIME}, "
            "in_subject => :subject, in_predicate => :predicate)",
            user_id=user_id, agent_id=agent_id, at=at, subject=subject, predicate=predicate)

    def expand(self, tenant_id: str, manifest_id: str, memory_id: str, at: datetime | None) -> dict[str, Any]:
        return self._tool_call(
            tenant_id,
            f"ctx_tools.expand(in_manifest_id => :manifest_id, in_memory_id => :memory_id, {EVALUATION_TIME})",
            manifest_id=manifest_id, memory_id=memory_id, at=at)

    def commit(self) -> None:
        self.connection.commit()

    def rollback(self) -> None:
        self.connection.rollback()
