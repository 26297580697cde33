"""Every manifest the database holds after assembly and the agent loop's tool rounds validates against the
manifest schema as read back; one broken in storage is refused by replay and the inspector, naming the path."""

from __future__ import annotations

import pytest

from ctxasm.core.manifest import manifest_problems
from ctxasm.engines.postgres import PostgresStore
from ctxasm.errors import InvalidManifest
from ctxasm.local import pgconn
from ctxasm.services.inspection import load_inspection
from ctxasm.services.replay import replay

from ..conftest import read_as_owner
from .test_agent_loop import run_transcript


@pytest.fixture()
def store(corpus_once):
    with pgconn.connect(corpus_once, pgconn.app_login()) as connection:
        yield PostgresStore(connection)


def stored_manifests(target) -> list[tuple[str, dict]]:
    return read_as_owner(target, "acme", "SELECT id, content_json FROM ctxasm.conversation_memory "
                                         "WHERE event_type = 'context_manifest' ORDER BY created_at, id")


def test_every_recorded_manifest_validates_as_read_back(store, corpus_once):
    runs = [run_transcript(store, name)[2] for name in ("missing_detail", "tool_reserve_and_rounds")]
    written = [m for run in runs for m in run.manifests]
    assert max(m.round for m in written) >= 3, "the transcripts must reach a second tool round"
    stored = dict(stored_manifests(corpus_once))
    assert len(stored) >= len(written)
    for manifest_id, manifest in stored.items():
        assert manifest_problems(manifest) == [], manifest_id
    assert any(manifest.get("turns") for manifest in stored.values())


def test_a_manifest_broken_in_storage_is_refused_where_it_is_read(store, corpus_once):
    run = run_transcript(store, "missing_detail")[2]
    first = run.window.manifest_id
    with pgconn.connect(corpus_once, pgconn.owner_login()) as connection:
        PostgresStore(connection).set_tenant("acme")
        connection.execute("UPDATE ctxasm.conversation_memory SET content_json = jsonb_set(content_json, "
                           "'{memories,0,tier}', '\"huge\"') WHERE id = %s", (first,))
        connection.commit()
    with pytest.raises(InvalidManifest, match=r"^invalid_manifest: \$\.memories\[0\]\.tier: 'huge' is not one of"):
        replay(store, "acme", first)
    store.rollback()
    with pytest.raises(InvalidManifest, match=r"\$\.memories\[0\]\.tier"):
        load_inspection(store, "acme", first, with_request=False)
