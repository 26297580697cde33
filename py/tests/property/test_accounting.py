"""Exact accounting and reclaim, over budgets from 1k to 64k tokens and candidates of every shape (no database:
a selection document in, request and manifest out).

- A window never fails request_over_budget because of framing: the fitter prices each line as the serialized
  request escapes it, and what framing still costs is given back from the lowest-priority records.
- With reclaim on, no window leaves unused tokens that a candidate excluded for lack of room would fit into.
"""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from ctxasm.core import render
from ctxasm.core.compose import WindowSpec, compose
from ctxasm.core.selection import Selection
from ctxasm.core.tokens import count_tokens

SLICES = ("durable_facts", "evidence", "recalled_history", "volatile_tail")
STATUS = {"durable_facts": "current", "evidence": "evidence", "recalled_history": "unverified",
          "volatile_tail": "unverified"}
TYPE = {"durable_facts": "entity", "evidence": "kb_chunk", "recalled_history": "conversation",
        "volatile_tail": "conversation"}
SPEC = WindowSpec(tenant_id="acme", user_id="jane", agent_id="ra", thread_id="t1", intent="ask",
                  question="What did we decide about the \"gate\" and its retraining?")
# Text that escaping changes (quotes, backslashes, line breaks, markup), non-ASCII, and long runs.
TEXT = st.text(alphabet=st.sampled_from(list("abcdefghij klmnop \"\\\n\t<>&'é中😀.,:;-_0123456789")),
               min_size=1, max_size=400).filter(lambda t: t.strip())


@st.composite
def shares(draw):
    weights = [draw(st.integers(0, 10)) for _ in SLICES]
    total = sum(weights) or 1
    return {name: round(weight / total, 3) for name, weight in zip(SLICES, weights)}


@st.composite
def budget_json(draw, reclaim=None):
    usable = draw(st.integers(1_000, 64_000))
    output = draw(st.integers(0, usable // 5))
    tools = draw(st.integers(0, usable // 5))
    overhead = draw(st.sampled_from([0, 0, 10, 50, 200]))
    share = draw(shares())
    while sum(share.values()) > 1:  # rounding to 3 places may overshoot by 0.001
        biggest = max(share, key=share.get)
        share[biggest] = round(share[biggest] - 0.001, 3)
    return {
        "usable_context": usable, "output_reserve": output, "tool_reserve": tools,
        "request_overhead_reserve": overhead, "max_rounds": 3, "max_tool_result_tokens": min(tools, 500),
        "weights": {"rerank": 0.6, "confidence": 0.25, "recency": 0.15}, "recency_days": 60,
        "shares": {"ask": share},
        "overflow_order": list(draw(st.permutations(SLICES))),
        "reclaim_unused": draw(st.booleans()) if reclaim is None else reclaim,
    }


@st.composite
def candidates(draw):
    items = []
    count = draw(st.integers(0, 120))
    for index in range(count):
        slice_name = draw(st.sampled_from(SLICES))
        text = draw(TEXT)
        summary = draw(st.one_of(st.none(), TEXT))
        items.append({
            "ref": [TYPE[slice_name], f"r{index}", 1], "type": TYPE[slice_name], "slice": slice_name,
            "status": STATUS[slice_name], "required": False, "selection_rank": index + 1,
            "role": draw(st.sampled_from(["user", "assistant"])), "turn_index": index,
            "thread_id": draw(st.sampled_from(["t0", "t2", "t3"])) if slice_name == "recalled_history" else "t1",
            "valid_from": draw(st.sampled_from(["2026-05-01T10:00:00+00:00", "2026-06-02T09:00:00+00:00"])),
            "title": draw(st.one_of(st.none(), TEXT.map(lambda t: t[:40]))),
            "scores": {"priority": draw(st.floats(0, 1, allow_nan=False))},
            "tiers": {"full": text, "summary": summary, "pointer": text[:60]},
            "summary_ref": None, "annotations": [],
        })
    return items


def selection(budget, items):
    return Selection.parse({
        "engine": "postgresql", "snapshot": "1:1:", "tenant_id": "acme", "evaluation_time": "2026-09-28T12:00:00+00:00",
        "selection_version": "test", "scorer": "external",
        "budget": {"ref": ["guideline", "budget", 1], "content_json": budget},
        "fixed": [{"ref": ["guideline", "g1", 1], "type": "guideline", "slice": "guidelines", "key": "cite",
                   "content": "Cite memory \"ids\".\nAlways.", "extra": None}],
        "candidates": items, "required_refs": [], "excluded": [],
        "retrieval": {"method": "recorded", "depth": 50, "items": []},
    })


@given(budget=budget_json(), items=candidates())
def test_framing_never_makes_a_window_fail(budget, items):
    limit = budget["usable_context"] - budget["output_reserve"] - budget["tool_reserve"]
    # Room for the developer message, the question and the request's own framing; tighter is a real overflow.
    assume(limit - budget["request_overhead_reserve"] > 400)
    window = compose(selection(budget, items), SPEC)
    manifest = window.manifest
    assert manifest["request_tokens"] == count_tokens(render.serialize(window.request)) <= limit
    # The lines are priced as the request carries them: what framing costs beyond them is the message
    # envelopes and the tool and model fields, so at most a few records are ever given back.
    given_back = [x for x in manifest["excluded"] if x["rule"] == "request_budget"]
    assert len(given_back) <= 3, given_back
    slices = manifest["allocation"]["slices"]
    for name in SLICES:
        seated = [m for m in manifest["memories"] if m["slice"] == name]
        assert slices[name]["used"] == sum(m["tokens"] for m in seated), name


@given(budget=budget_json(reclaim=True), items=candidates())
def test_reclaim_leaves_no_room_a_left_out_candidate_would_fit(budget, items):
    limit = budget["usable_context"] - budget["output_reserve"] - budget["tool_reserve"]
    assume(limit - budget["request_overhead_reserve"] > 400)
    manifest = compose(selection(budget, items), SPEC).manifest
    unused = manifest["allocation"]["unused"]
    assert unused >= 0
    for left_out in (x for x in manifest["excluded"] if x["rule"] == "slice_budget"):
        assert left_out["tokens"] > unused, (left_out, unused)
