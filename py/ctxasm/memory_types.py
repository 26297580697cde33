"""The memory types and their tables: generated from contract/memory_types.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)."""

from __future__ import annotations

from typing import NamedTuple


class MemoryType(NamedTuple):
    name: str
    table: str
    #: the window slice its rows compete for; '' for a type that is never a candidate
    slice: str
    #: which copy of a duplicate is kept, lowest first
    authority: int
    searchable: bool
    embedded: bool
    #: the type-specific columns, in table order
    columns: tuple[str, ...]
    #: (memory-row slot, column) for each column that fills a slot of the memory-row shape, in column order
    row: tuple[tuple[str, str], ...]

    @property
    def extra(self) -> tuple[str, ...]:
        """The columns that fill no slot: they travel in the memory row's `extra` document, in column order."""
        filled = {column for _, column in self.row}
        return tuple(column for column in self.columns if column not in filled)

    def slot(self, name: str) -> str | None:
        """The column that fills the memory-row slot `name`, or None (the row holds NULL there)."""
        return dict(self.row).get(name)


MEMORY_TYPES: tuple[MemoryType, ...] = (
    MemoryType('guideline', 'guideline_memory', 'guidelines', 9, False, False,
               ('guideline_key',),
               (('key_name', 'guideline_key'),)),
    MemoryType('persona', 'persona_memory', 'persona', 9, False, False,
               ('persona_key',),
               (('key_name', 'persona_key'),)),
    MemoryType('toolbox', 'toolbox_memory', 'tools', 9, False, False,
               ('tool_name', 'tool_schema', 'usage_notes', 'tool_handler', 'access_policy'),
               (('key_name', 'tool_name'),)),
    MemoryType('entity', 'entity_memory', 'durable_facts', 1, True, True,
               ('subject', 'predicate', 'confidence', 'embedding'),
               (('subject', 'subject'), ('predicate', 'predicate'), ('confidence', 'confidence'), ('embedding', 'embedding'))),
    MemoryType('workflow', 'workflow_memory', 'durable_facts', 2, True, True,
               ('workflow_key', 'embedding'),
               (('key_name', 'workflow_key'), ('embedding', 'embedding'))),
    MemoryType('kb_document', 'knowledge_base_document', 'evidence', 3, True, False,
               ('title', 'collection', 'source_uri', 'published_at'),
               (('title', 'title'), ('key_name', 'collection'))),
    MemoryType('kb_chunk', 'knowledge_base_chunk', 'evidence', 3, True, True,
               ('document_id', 'document_version', 'chunk_index', 'title', 'embedding'),
               (('key_name', 'document_id'), ('turn_index', 'chunk_index'), ('title', 'title'), ('embedding', 'embedding'))),
    MemoryType('conversation', 'conversation_memory', 'recalled_history', 5, True, True,
               ('turn_index', 'role', 'event_type', 'embedding', 'speaker'),
               (('turn_index', 'turn_index'), ('role', 'role'), ('event_type', 'event_type'), ('embedding', 'embedding'))),
    MemoryType('summary', 'summarization_memory', 'recalled_history', 4, True, True,
               ('summary_key', 'period_start', 'period_end', 'embedding'),
               (('key_name', 'summary_key'), ('embedding', 'embedding'))),
    MemoryType('compression', 'context_compression', '', 9, False, False,
               ('source_type', 'source_id', 'source_version', 'source_hash', 'generating_model', 'prompt_version'),
               ()),
    MemoryType('source_ref', 'context_source_ref', '', 9, False, False,
               ('derived_type', 'derived_id', 'derived_version', 'source_type', 'source_id', 'source_version', 'relation'),
               ()),
)

#: the slots of the one memory-row shape, in order (a type's row names the column filling each)
ROW_SLOTS: tuple[str, ...] = ('confidence', 'key_name', 'subject', 'predicate', 'title', 'turn_index', 'role', 'event_type', 'embedding')

#: the columns every memory table has
SHARED_COLUMNS: tuple[str, ...] = ('tenant_id', 'id', 'version', 'user_id', 'agent_id', 'thread_id', 'status', 'valid_from', 'valid_until', 'deleted_at', 'content', 'content_json', 'source_refs', 'created_at', 'created_xid', 'content_tokens')

BY_NAME: dict[str, MemoryType] = {memory_type.name: memory_type for memory_type in MEMORY_TYPES}
TABLE_OF: dict[str, str] = {memory_type.name: memory_type.table for memory_type in MEMORY_TYPES}
