"""A new tenant that works at once: registered, with the default context budget and memory instructions.

The budget is the article's example (5,000 usable tokens; 400 for output, 1,000 for tool results across the loop,
500 for request framing; three rounds; the comparison and fact_check shares) with `reclaim_unused` on, so a
slice's unused share goes to the next slice in the overflow order. It is a starting point: a production budget
comes from evaluations of the workload; a new version of the guideline row (supersede) changes it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ctxasm.engines.store import MemoryStore
from ctxasm.services import load

#: The row id of a tenant's budget guideline (the key prefixed with context_, as in the article's seed).
BUDGET_ID = "context_context_budget"

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
    },
    "overflow_order": ["evidence", "durable_facts", "volatile_tail", "recalled_history"],
    "reclaim_unused": True,
}


def new_tenant_document(tenant_id: str, display_name: str, at: datetime) -> dict[str, Any]:
    """The scenario document of a new tenant: its default budget guideline (tenant-wide) and, as `ctxasm load`
    gives a tenant with a budget and no instructions, the default memory instructions."""
    budget = {"type": "guideline", "id": BUDGET_ID, "guideline_key": "context_budget",
              "valid_from": at.isoformat(),
              "content": "Context budget: 5000 usable tokens with reserves for output (400), tools (1000) and "
                         "framing (500); unused shares are reclaimed in the overflow order.",
              "content_json": DEFAULT_BUDGET}
    document = {"format": "ctxasm-scenario/1", "name": f"new-tenant-{tenant_id}",
                "tenants": [{"tenant_id": tenant_id, "display_name": display_name, "memories": [budget]}]}
    load.add_memory_instructions(document)
    return document


def create_tenant(store: MemoryStore, tenant_id: str, display_name: str, at: datetime) -> load.LoadReport:
    """Register the tenant (a transaction of its own), then write its default rows in one transaction, through an
    owner store."""
    return load.load_document(store, new_tenant_document(tenant_id, display_name, at), f"new tenant {tenant_id}")
