"""A conversation turn may name its speaker (conversation_memory.speaker): a group conversation's people, a named
agent. The selection document carries the name, a recalled turn's line shows it where the role would be
(`M3 Maya: ...`, two tokens cheaper than `M3 user: Maya: ...` and still saying who spoke), a thread turn's
message starts with it, the column is checked like any other, and erasure removes it with the text."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import pytest

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.engines.store import WindowScope
from ctxasm.errors import CtxasmError
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble

from ..conftest import FACT_CHECK_BUDGET, load_scenario, read_as_owner

TENANT, USER, AGENT, THREAD = "crew", "jane", "research-assistant", "thread_now"
QUESTION = "Who said the greenhouse heater was broken?"
AT = datetime(2026, 6, 1, tzinfo=timezone.utc)


def _document() -> dict:
    scope = {"user_id": USER, "agent_id": AGENT}
    turns = [
        ("maya_1", "user", "Maya", "The greenhouse heater is broken again, the seedlings froze overnight."),
        ("tom_1", "assistant", "Tom", "I told the landlord about the greenhouse heater last week."),
        ("plain_1", "user", None, "Is the greenhouse heater covered by the lease?"),
    ]
    memories = [{"type": "guideline", "id": "budget", "guideline_key": "context_budget", "agent_id": AGENT,
                 "valid_from": "2026-01-01T00:00:00Z", "content": "Budget.", "content_json": FACT_CHECK_BUDGET}]
    for index, (row_id, role, speaker, text) in enumerate(turns):
        memories.append({"type": "conversation", "id": row_id, "role": role, "turn_index": index,
                         "thread_id": "thread_old", "valid_from": f"2026-04-01T10:{index:02d}:00Z", "content": text,
                         **({"speaker": speaker} if speaker else {}), **scope})
    memories.append({"type": "conversation", "id": "tail_1", "role": "user", "turn_index": 0, "thread_id": THREAD,
                     "speaker": "Maya", "valid_from": "2026-05-01T10:00:00Z",
                     "content": "Can someone look at the heater today?", **scope})
    return {"format": "ctxasm-scenario/1", "name": "speakers",
            "tenants": [{"tenant_id": TENANT, "display_name": "Named speakers", "memories": memories}]}


@pytest.fixture()
def crew_target(clean_db, tmp_path):
    load_scenario(clean_db, tmp_path, _document())
    return clean_db


def _spec() -> WindowSpec:
    return WindowSpec(tenant_id=TENANT, user_id=USER, agent_id=AGENT, thread_id=THREAD, intent="fact_check",
                      question=QUESTION)


def test_a_named_speaker_reads_in_place_of_the_role(crew_target):
    with pgconn.connect(crew_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        window = assemble(store, _spec(), AT)
        document = store.select_window_document(TENANT, WindowScope(USER, AGENT, THREAD, "fact_check", AT, QUESTION))
        connection.rollback()
    speakers = {c["ref"][1]: c["speaker"] for c in document["candidates"] if c["type"] == "conversation"}
    assert speakers == {"maya_1": "Maya", "tom_1": "Tom", "plain_1": None, "tail_1": "Maya"}
    ids = {m["ref"][1]: m["id"] for m in window.manifest["memories"]}
    context = window.request["messages"][-1]["content"]
    lines = context.splitlines()
    assert f"{ids['maya_1']} Maya: The greenhouse heater is broken again, the seedlings froze overnight." in lines
    assert f"{ids['tom_1']} Tom: I told the landlord about the greenhouse heater last week." in lines
    assert f"{ids['plain_1']} user: Is the greenhouse heater covered by the lease?" in lines  # no name: the role
    tail = [m for m in window.request["messages"] if m["content"] == "Maya: Can someone look at the heater today?"]
    assert [m["role"] for m in tail] == ["user"]


def test_a_window_with_named_turns_replays_to_the_same_request(crew_target):
    from ctxasm.services.replay import replay

    with pgconn.connect(crew_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        window = assemble(store, _spec(), AT)
        result = replay(store, TENANT, window.manifest_id)
    assert result.status == "match", result


def test_a_question_that_names_a_speaker_lifts_their_turns_and_replays_alike(crew_target):
    from ctxasm.contract_constants import SPEAKER_WEIGHT, THREAD_WEIGHT
    from ctxasm.services.replay import replay

    spec = replace(_spec(), question="Did Maya say the greenhouse heater was broken?")
    with pgconn.connect(crew_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        window = assemble(store, spec, AT)
        result = replay(store, TENANT, window.manifest_id)
        plain = store.select_window_document(TENANT, WindowScope(USER, AGENT, THREAD, "fact_check", AT, QUESTION))
        named = store.select_window_document(TENANT, WindowScope(USER, AGENT, THREAD, "fact_check", AT,
                                                                 "Maya: " + QUESTION))
        connection.rollback()
    assert result.status == "match", result  # the recorded logits carry the lift

    def logits(document):
        return {c["ref"][1]: c["scores"]["rerank_logit"] for c in document["candidates"]
                if c["slice"] == "recalled_history"}

    # Lexical retrieval only (no embedding given), so only the question's one added name differs: Maya's turn,
    # alone in naming her, gains the weight and its conversation's share of it; the others only that share.
    before, after = logits(plain), logits(named)
    thread_gain = round(THREAD_WEIGHT * SPEAKER_WEIGHT, 6)
    assert after["maya_1"] - before["maya_1"] == pytest.approx(SPEAKER_WEIGHT + thread_gain, abs=1e-6)
    assert after["tom_1"] - before["tom_1"] == pytest.approx(thread_gain, abs=1e-6)


def test_names_speaker_matches_whole_words_in_order(crew_target):
    cases = [("Maya", True), ("MAYA", True), ("Ann", False), ("Maya Lee", False), ("Lee Maya", False), ("--", False),
             (None, False)]
    with pgconn.connect(crew_target, pgconn.owner_login()) as connection:
        words = connection.execute("SELECT ctxasm.question_words(%s)",
                                   ("When did Maya's landlord fix it for the annual check?",)).fetchone()[0]
        assert words == " when did maya s landlord fix it for the annual check "
        got = [(name, connection.execute("SELECT ctxasm.names_speaker(%s, %s)", (words, name)).fetchone()[0])
               for name, _ in cases]
    assert got == cases


def test_a_speaker_is_checked_like_any_column(crew_target):
    with pgconn.connect(crew_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant(TENANT)
        with pytest.raises(CtxasmError, match=r"conversation\.speaker"):
            store.put_memory("conversation", {"id": "long", "role": "user", "thread_id": "thread_old",
                                              "user_id": USER, "agent_id": AGENT, "turn_index": 9,
                                              "speaker": "M" * 65, "content": "hello"})
        connection.rollback()


def test_erasure_removes_the_speaker_with_the_text(crew_target):
    with pgconn.connect(crew_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant(TENANT)
        store.erase("conversation", "maya_1")
        store.commit()
    rows = read_as_owner(crew_target, TENANT, "SELECT speaker, status FROM ctxasm.conversation_memory "
                                              "WHERE tenant_id = %s AND id = 'maya_1'", (TENANT,))
    assert rows == [(None, "erased")]


def test_a_session_adds_a_named_turn_and_the_next_window_shows_the_name(clean_db):
    from ctxasm.api import Memory
    from ctxasm.errors import InvalidArgument

    with Memory.open(database=clean_db.database) as memory:
        memory.create_tenant("newco")
        session = memory.session("newco", user_id="u1", agent_id="helper", thread_id="t1")
        session.add_turn("user", "The heater in the greenhouse is broken.", speaker="Maya")
        session.add_turn("assistant", "I will tell the landlord.")
        with pytest.raises(InvalidArgument, match="speaker"):
            session.add_turn("user", "hello", speaker=7)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgument, match="speaker is blank"):
            session.add_turn("user", "hello", speaker=" ")
        window = session.assemble("what is broken?")
    contents = [m["content"] for m in window.request["messages"]]
    assert "Maya: The heater in the greenhouse is broken." in contents  # the thread's own turns, as messages
    assert "I will tell the landlord." in contents


def test_an_episode_summary_names_who_said_what(clean_db, monkeypatch):
    from ctxasm.api import Memory
    from ctxasm.services.episodes import Thresholds

    monkeypatch.delenv("CTXASM_SUMMARY_MODEL", raising=False)  # the offline summarizer: first sentence of each turn
    said = datetime(2026, 9, 20, 9, 0, tzinfo=timezone.utc)
    with Memory.open(database=clean_db.database, pool_size=1) as memory:
        memory.create_tenant("newco", at="2026-01-01T00:00:00")
        session = memory.session("newco", user_id="u1", agent_id="helper", thread_id="garden")
        session.add_turn("user", "The heater broke. It was cold.", speaker="Maya", at=said)
        session.add_turn("assistant", "I called the landlord.", speaker="Tom", at=said)
        session.add_turn("user", "Did they answer?", at=said)
        result = session.summarize_threads(thresholds=Thresholds(min_new_turns=3), at=said)
    assert result.written == 1, result.describe()
    (summary,) = read_as_owner(clean_db, "newco", "SELECT content FROM ctxasm.summarization_memory")
    assert summary[0].startswith("Maya: The heater broke. Tom: I called the landlord. user: Did they answer?"), summary
