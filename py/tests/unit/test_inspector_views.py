"""The inspector's views on a hand-made manifest (no database): order, overflow, escaping, diff."""

from __future__ import annotations

import copy
from html.parser import HTMLParser

from ctxasm.interfaces.inspector import Inspection, describe_diff, describe_manifest, diff_manifests, render_page
from ctxasm.interfaces.inspector.text import budget_bar, safe_line
from ctxasm.services.inspection import overflow_order, overflow_receivers, slices_in_request_order

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)> \x1b[31mred\x1b[0m & \"quoted\""

FACT_V1 = ["entity", "fact_x", 1]
FACT_V2 = ["entity", "fact_x", 2]
SUMMARY = ["summary", "summary_july", 1]
BUDGET = ["guideline", "budget", 1]


def manifest() -> dict:
    # Keys in the order PostgreSQL jsonb hands them back (shorter keys first), not in the order written.
    return {
        "scn": "100:100:", "mode": "postgresql", "model": "gpt-4.1-mini", "intent": "fact_check",
        "question": f"Is X still best? {HOSTILE}", "tenant_id": "acme", "budget_ref": BUDGET,
        "request_hash": "ab" * 32, "request_tokens": 400, "request_limit": 3600, "required_refs": [FACT_V2],
        "scope": {"user_id": "jane", "agent_id": "agent", "thread_id": None},
        "allocation": {
            "fixed": {"tools": 10, "persona": 5, "question": 8, "guidelines": 20},
            "slices": {
                "evidence": {"used": 0, "share": 600, "allowance": 600, "passed_on": 600},
                "durable_facts": {"used": 50, "share": 1200, "allowance": 1800, "passed_on": 1750},
                "volatile_tail": {"used": 10, "share": 900, "allowance": 2650, "passed_on": 2640},
                "recalled_history": {"used": 60, "share": 357, "allowance": 2997, "passed_on": 0},
            },
            "reserves": {"tools": 1000, "output": 400, "request_overhead": 500},
            "remainder": 3057, "unallocated": 0, "before_fixed": 3100, "usable_context": 5000,
        },
        "memories": [
            {"id": "M2", "ref": SUMMARY, "type": "summary", "status": "historical", "slice": "recalled_history",
             "tier": "full", "tokens": 60, "position": 2, "origin": "query",
             "scores": {"rerank": 0.5, "priority": 0.4, "recency": 0.1, "confidence": 0.5, "rerank_logit": 0.0},
             "annotation_refs": [{"current": FACT_V2, "source": FACT_V1}]},
            {"id": "M1", "ref": FACT_V2, "type": "entity", "status": "current", "slice": "durable_facts",
             "tier": "full", "tokens": 50, "position": 1, "origin": "query", "scores": {"priority": 0.5}},
        ],
        "excluded": [{"ref": FACT_V1, "rule": "lifecycle", "detail": f"superseded {HOSTILE}"},
                     {"ref": ["kb_document", "doc_big", 1], "rule": "slice_budget", "slice": "evidence",
                      "tokens": 900}],
    }


def inspection(rows: dict | None = None, m: dict | None = None) -> Inspection:
    return Inspection("manifest_1", "acme", m or manifest(), rows if rows is not None else {
        tuple(FACT_V2): {"id": "fact_x", "version": 2, "content": f"X is 0.78. {HOSTILE}", "status": "active"},
        tuple(FACT_V1): {"id": "fact_x", "version": 1, "content": "X is 0.92.", "status": "superseded"},
        tuple(SUMMARY): {"id": "summary_july", "version": 1, "content": "July: X at 0.92.", "status": "active"},
        tuple(BUDGET): {"id": "budget", "version": 1, "content": "budget", "content_json": {
            "overflow_order": ["evidence", "durable_facts", "volatile_tail", "recalled_history"]}},
    })


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_slices_come_in_request_order_whatever_the_key_order():
    names = [name for name, _ in slices_in_request_order(manifest())]
    assert names == ["guidelines", "persona", "tools", "volatile_tail", "durable_facts", "evidence",
                     "recalled_history", "question"]


def test_overflow_follows_the_budget_row_or_the_allowances():
    m = manifest()
    budget = inspection().budget_row
    assert overflow_order(m, budget) == ["evidence", "durable_facts", "volatile_tail", "recalled_history"]
    with_row = overflow_receivers(m, budget)
    assert with_row == {"evidence": "durable_facts", "durable_facts": "volatile_tail",
                        "volatile_tail": "recalled_history", "recalled_history": None}
    # Without the budget row: the receiver is the one slice whose allowance exceeds its share by what was passed.
    assert overflow_receivers(m) == with_row


def test_budget_bar_text():
    lines = budget_bar(inspection())
    bar = lines[1].strip()
    assert bar.startswith("[" + "o" * 27 + "=" + "e" * 9 + "D") and bar.endswith("Rrrrr]")  # evidence used nothing
    assert 70 <= len(bar) - 2 <= 74  # 72 cells, give or take rounding
    assert any(line.strip().startswith("E evidence") and "-> durable_facts" in line for line in lines)
    assert "o reserves 1900: output 400, tools 1000, request_overhead 500" in "\n".join(lines)
    assert "request: 400 of 3600 tokens" in lines[-1]


def test_text_view_is_terminal_safe_and_complete():
    text = describe_manifest(inspection())
    assert "\x1b" not in text and "\\x1b[31mred" in text
    assert "annotation: cites entity / fact_x / version 1, no longer in effect; current fact entity / fact_x / " \
           "version 2 (in this window at position 1)" in text
    assert text.index("-- lifecycle (1) --") < text.index("-- slice_budget (1) --")
    assert "kb_document / doc_big / version 1: slice evidence; smallest tier 900 tokens" in text
    assert safe_line("a\nb\tc" + "x" * 200, 20) == "a b c" + "x" * 14 + "…"


def test_page_escapes_everything_and_fetches_nothing():
    page = render_page(inspection())
    parser = Tags()
    parser.feed(page)
    tags = [tag for tag, _ in parser.tags]
    assert "script" not in tags and "img" not in tags
    assert all(attrs.get("href", "#").startswith("#") for _, attrs in parser.tags)
    assert not any("src" in attrs for _, attrs in parser.tags)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page and "&quot;quoted&quot;" in page
    assert "@import" not in page and "url(" not in page


def test_page_links_rows_and_the_current_fact():
    page = render_page(inspection())
    parser = Tags()
    parser.feed(page)
    ids = {attrs["id"] for _, attrs in parser.tags if "id" in attrs}
    hrefs = {attrs["href"][1:] for _, attrs in parser.tags if "href" in attrs}
    assert hrefs <= ids, hrefs - ids  # every link lands somewhere
    assert {"excluded-lifecycle", "excluded-slice_budget", "request-hash", "scn"} <= ids


def test_a_row_missing_at_the_snapshot_is_said_so():
    page = render_page(inspection(rows={}))
    assert "could not be read at the recorded snapshot" in page
    assert "text: (row text not readable at the recorded snapshot)" in describe_manifest(inspection(rows={}))
    assert "text: X is 0.78." in describe_manifest(inspection())


def test_diff_finds_what_changed():
    old = manifest()
    new = copy.deepcopy(old)
    new["question"] = "Something else?"
    new["request_hash"] = "cd" * 32
    new["memories"][0]["tier"] = "summary"
    new["memories"][1]["ref"] = ["entity", "fact_x", 3]
    new["excluded"].append({"ref": FACT_V2, "rule": "lifecycle", "detail": "superseded"})
    new["allocation"]["slices"]["evidence"]["used"] = 40
    diff = diff_manifests(old, new, old_id="A", new_id="B")
    assert not diff.request_hash_equal and diff.windows_differ
    assert [c.what for c in diff.asked] == ["question"]
    assert [m["ref"] for m in diff.added] == [["entity", "fact_x", 3]]
    assert [m["ref"] for m in diff.removed] == [FACT_V2]
    assert [(c.ref, [(x.what, x.old, x.new) for x in c.changes]) for c in diff.changed] == [
        (tuple(SUMMARY), [("tier", "full", "summary")])]
    assert [(v.row_id, v.old_versions, v.new_versions) for v in diff.versions] == [("fact_x", (2,), (3,))]
    assert [e["ref"] for e in diff.excluded_added] == [FACT_V2] and diff.excluded_removed == ()
    assert [(c.what, c.old, c.new) for c in diff.allocation] == [("slices.evidence.used", 0, 40)]
    text = describe_diff(diff)
    assert "+ entity / fact_x / version 3" in text and "- entity / fact_x / version 2" in text
    assert "entity / fact_x: version 2 -> 3" in text and "request hash: differs" in text


def test_diff_of_a_manifest_with_itself_is_empty():
    diff = diff_manifests(manifest(), manifest())
    assert diff.request_hash_equal and not diff.windows_differ and diff.asked == ()
    page = render_page(inspection(), diff)
    assert "<strong>equal</strong>" in page and "id=\"diff\"" in page
