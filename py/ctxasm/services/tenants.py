"""A new tenant that works at once: registered, with the default context budget and memory instructions.

The budget is the article's example (5,000 usable tokens; 400 for output, 1,000 for tool results across the loop,
500 for request framing; three rounds; the comparison and fact_check shares) with `reclaim_unused` on, so a
slice's unused share goes to the next slice in the overflow order, and a `recall` intent for questions about
earlier conversations (most of the dynamic share to recalled history). Its weights (rerank 0.6, confidence 0.25,
recency 0.15) cost no recall: relevance orders the candidates, confidence and recency break near-ties, and
recency counts in full only when the question asks about the present ("now", "latest", "still", ...;
docs/assembly.md, "Choosing the weights"). It is a starting point: a production budget comes from evaluations of
the workload; a new version of the guideline row (supersede) changes it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ctxasm.engines.store import MemoryStore
from ctxasm.errors import InvalidArgument
from ctxasm.services import load
from ctxasm.services import memory_spans as spans
from ctxasm.services.budgets import TENANT_BUDGET_ID

#: The row id of a tenant's budget guideline (the key prefixed with context_, as in the article's seed).
BUDGET_ID = TENANT_BUDGET_ID

DEFAULT_BUDGET: dict[str, Any] = {
    "usable_context": 5000,
    "output_reserve": 400,
    "tool_reserve": 1000,
    "request_overhead_reserve": 500,
    "max_rounds": 3,
    "max_tool_result_tokens": 1000,
    "weights": {"rerank": 0.60, "confidence": 0.25, "recency": 0.15},
    "recency_days": 60,
    "shares": {
        "comparison": {"durable_facts": 0.15, "evidence": 0.60, "recalled_history": 0.05, "volatile_tail": 0.20},
        "fact_check": {"durable_facts": 0.40, "evidence": 0.25, "recalled_history": 0.10, "volatile_tail": 0.25},
        "recall": {"durable_facts": 0.15, "evidence": 0.10, "recalled_history": 0.50, "volatile_tail": 0.25},
    },
    "overflow_order": ["evidence", "durable_facts", "volatile_tail", "recalled_history"],
    "reclaim_unused": True,
}


def new_tenant_document(tenant_id: str, display_name: str, at: datetime | None) -> dict[str, Any]:
    """The scenario document of a new tenant: its default budget guideline (tenant-wide) and, as `ctxasm load`
    gives a new tenant with a budget and no instructions, the default memory instructions. `at` None: in effect
    from the load (the database's clock)."""
    budget = {"type": "guideline", "id": BUDGET_ID, "guideline_key": "context_budget",
              **({"valid_from": at.isoformat()} if at is not None else {}),
              "content": "Context budget: 5000 usable tokens with reserves for output (400), tools (1000) and "
                         "framing (500); unused shares are reclaimed in the overflow order. Intents: comparison, "
                         "fact_check, and recall (questions about earlier conversations: half the dynamic share is "
                         "recalled history). Relevance orders the candidates; confidence and recency break near-ties, "
                         "and recency counts in full only when the question asks about the present.",
              "content_json": DEFAULT_BUDGET}
    document = {"format": "ctxasm-scenario/1", "name": f"new-tenant-{tenant_id}",
                "tenants": [{"tenant_id": tenant_id, "display_name": display_name, "memories": [budget]}]}
    load.add_memory_instructions(document)
    return document


def create_tenant(store: MemoryStore, tenant_id: str, display_name: str, at: datetime | None) -> load.LoadReport:
    """Register the tenant (a transaction of its own), then write its default rows in one transaction, through an
    owner store; a tenant the database has already is refused (InvalidArgument), before anything is written. Its
    span: create_memory_store (a tenant's memory is its store)."""
    with spans.memory_span(spans.CREATE_MEMORY_STORE, tenant_id, "tenant_create"):
        if load.registered_tenants(store, [tenant_id]):
            raise InvalidArgument(
                f"invalid_argument: tenant {tenant_id!r} exists already; `ctxasm budget set` changes its budget, "
                "`ctxasm load --upsert` adds memories to it")
        return load.load_document(store, new_tenant_document(tenant_id, display_name, at), f"new tenant {tenant_id}")


def purge_tenant(store: MemoryStore, tenant_id: str) -> int:
    """Remove every row of the tenant, its history and its registration (CTX_ADMIN.purge_tenant), committed,
    through an owner store; returns the rows removed (0 for a tenant the database does not have). Its span:
    delete_memory_store."""
    with spans.memory_span(spans.DELETE_MEMORY_STORE, tenant_id, "tenant_purge") as span:
        try:
            removed = int(store.purge_tenant(tenant_id))
            store.commit()
        except BaseException:
            store.rollback()
            raise
        span.set_attribute("ctxasm.purged_rows", removed)
        return removed
