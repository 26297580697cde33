"""The loader's default memory instructions: added to a tenant whose scenario sets a budget and no instructions."""

from __future__ import annotations

from ctxasm.services import load

BUDGET = {"type": "guideline", "id": "budget", "guideline_key": "context_budget", "content": "budget",
          "content_json": {}}


def document(*tenants):
    return {"format": "ctxasm-scenario/1", "tenants": [
        {"tenant_id": name, "display_name": name, "memories": list(memories)} for name, memories in tenants]}


def keys(tenant):
    return [m.get("guideline_key") for m in tenant["memories"] if m["type"] == "guideline"]


def test_a_tenant_with_a_budget_and_no_instructions_gets_the_defaults():
    own = {"type": "guideline", "id": "mine", "guideline_key": "memory_instructions.expand", "content": "Expand."}
    doc = document(("acme", [BUDGET]), ("corpus_only", [{"type": "kb_chunk", "id": "c1", "content": "x"}]),
                   ("custom", [BUDGET, own]))
    assert load.add_memory_instructions(doc) == len(load.DEFAULT_MEMORY_INSTRUCTIONS)
    acme, corpus_only, custom = doc["tenants"]
    assert keys(acme) == ["context_budget", "memory_instructions", "memory_instructions.expand",
                          "memory_instructions.search_memory"]
    added = [m for m in acme["memories"] if m["guideline_key"] != "context_budget"]
    assert all(not m.get("agent_id") and not m.get("user_id") and m["content"] for m in added)  # tenant-wide
    assert "expand" not in added[0]["content"]  # the general instructions name no tool
    assert keys(corpus_only) == [] and keys(custom) == ["context_budget", "memory_instructions.expand"]
    assert load.add_memory_instructions(doc) == 0  # idempotent
