"""Which memory rows retrieval searches, and the text each one's embedding is computed from.

Pure: the writer (loader, Python API) embeds these texts when it writes a row, so the database can run
vector retrieval over durable facts, evidence and recalled history alike. Conversation events (manifests,
tool results, recorded requests) are records, not memory: they are never embedded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxasm.core.render import speaker_name
from ctxasm.memory_types import MEMORY_TYPES

#: Memory types with an `embedding` column that retrieval reads (contract/memory_types.toml).
EMBEDDED_TYPES: tuple[str, ...] = tuple(memory_type.name for memory_type in MEMORY_TYPES if memory_type.embedded)


def embedding_text(memory_type: str, record: Mapping[str, Any]) -> str | None:
    """The text to embed for a record (or a later version's fields, merged over the record), or None when
    the row is not searchable or has no text."""
    if memory_type not in EMBEDDED_TYPES:
        return None
    if memory_type == "conversation" and (record.get("role") == "event"
                                          or record.get("event_type", "message") != "message"):
        return None
    content = record.get("content")
    if not isinstance(content, str) or not content.strip():
        return None
    if memory_type == "kb_chunk":
        return f"{record.get('title') or ''}\n{content}".strip()
    speaker = record.get("speaker") if memory_type == "conversation" else None
    if isinstance(speaker, str) and speaker_name(speaker):
        # As the turn reads in a window: who spoke, then what was said.
        return f"{speaker_name(speaker)}: {content}"
    return content
