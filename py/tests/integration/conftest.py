"""Fixtures of the integration tests beside tests/conftest.py's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..chat_server import ChatServer


@pytest.fixture()
def server() -> Iterator[ChatServer]:
    """The OpenAI-compatible chat server on 127.0.0.1 (tests/chat_server.py), for one test."""
    with ChatServer() as running:
        yield running
