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


MEMORY_TYPES: tuple[MemoryType, ...] = (
    MemoryType('guideline', 'guideline_memory', 'guidelines', 9, False, False,
               ('guideline_key',)),
    MemoryType('persona', 'persona_memory', 'persona', 9, False, False,
               ('persona_key',)),
    MemoryType('toolbox', 'toolbox_memory', 'tools', 9, False, False,
               ('tool_name', 'tool_schema', 'usage_notes', 'tool_handler', 'access_policy')),
    MemoryType('entity', 'entity_memory', 'durable_facts', 1, True, True,
               ('subject', 'predicate', 'confidence', 'embedding')),
    MemoryType('workflow', 'workflow_memory', 'durable_facts', 2, True, True,
               ('workflow_key', 'embedding')),
    MemoryType('kb_document', 'knowledge_base_document', 'evidence', 3, True, False,
               ('title', 'collection', 'source_uri', 'published_at')),
    MemoryType('kb_chunk', 'knowledge_base_chunk', 'evidence', 3, True, True,
               ('document_id', 'document_version', 'chunk_index', 'title', 'embedding')),
    MemoryType('conversation', 'conversation_memory', 'recalled_history', 5, True, True,
               ('turn_index', 'role', 'event_type', 'embedding')),
    MemoryType('summary', 'summarization_memory', 'recalled_history', 4, True, True,
               ('summary_key', 'period_start', 'period_end', 'embedding')),
    MemoryType('compression', 'context_compression', '', 9, False, False,
               ('source_type', 'source_id', 'source_version', 'source_hash', 'generating_model', 'prompt_version')),
    MemoryType('source_ref', 'context_source_ref', '', 9, False, False,
               ('derived_type', 'derived_id', 'derived_version', 'source_type', 'source_id', 'source_version', 'relation')),
)

#: the columns every memory table has
SHARED_COLUMNS: tuple[str, ...] = ('tenant_id', 'id', 'version', 'user_id', 'agent_id', 'thread_id', 'status', 'valid_from', 'valid_until', 'deleted_at', 'content', 'content_json', 'source_refs', 'created_at', 'created_xid', 'content_tokens')

BY_NAME: dict[str, MemoryType] = {memory_type.name: memory_type for memory_type in MEMORY_TYPES}
TABLE_OF: dict[str, str] = {memory_type.name: memory_type.table for memory_type in MEMORY_TYPES}
