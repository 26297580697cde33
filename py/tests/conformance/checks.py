"""The assertions a scenario's `expect` can make about an assembled window.

Memories are compared by the rows they cite ([type, id, version]), never by their text: generated text may
change, the rows it stands for may not.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from ctxasm.contract_constants import ADJACENT_MARGIN, SPEAKER_WEIGHT, THREAD_WEIGHT
from ctxasm.core.refs import Ref

FIXED_SLICES = ("guidelines", "persona", "tools")


def key(ref: list[Any]) -> str:
    return Ref.of(ref).key


def refs_in(manifest: dict[str, Any], slice_name: str) -> list[list[Any]]:
    return [m["ref"] for m in sorted(manifest["memories"], key=lambda m: m["position"]) if m["slice"] == slice_name]


def thread_share(scores: dict[str, Any]) -> float:
    """What a recalled turn's logit gained from its conversation's best turn (scores.thread_logit), rounded as
    the database rounds it: half away from zero, in decimal (a float's round() goes to even, and misses the
    database's figure by 1e-6 whenever the product ends in 5)."""
    share = Decimal(str(THREAD_WEIGHT)) * Decimal(str(scores.get("thread_logit", 0)))
    return float(share.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP))


def own_logit(scores: dict[str, Any]) -> float:
    """A recalled turn's logit less its conversation's share (scored on its own, not through a neighbour)."""
    assert "adjacent_logit" not in scores, "scored through a neighbour"
    return scores["rerank_logit"] - thread_share(scores)


def hybrid_logit(scores: dict[str, Any], best_bm25: float) -> float:
    """The hybrid scorer's logit from a candidate's recorded figures (docs/assembly.md, "Relevance"): the recorded
    similarity is rounded to six places, so this is within about 1e-5 of the database's."""
    bm25 = scores.get("bm25") or 0
    return 12 * ((scores.get("similarity") or 0) - 0.35) + (1.5 * bm25 / best_bm25 if best_bm25 > 0 else 0)


def named_lifts(scores: dict[str, Any], best_bm25: float) -> float:
    """What a recalled turn's own logit has beyond the hybrid scorer's figure and its length's share: the lifts of
    the speaker and the time the question names, else nothing."""
    return own_logit(scores) - hybrid_logit(scores, best_bm25) - scores.get("length_logit", 0)


def check_window(expect: dict[str, Any], request: dict[str, Any], manifest: dict[str, Any]) -> None:
    by_key = {key(m["ref"]): m for m in manifest["memories"]}
    assert manifest["request_tokens"] <= manifest["request_limit"], "the request must fit its budget"

    for slice_name, refs in expect.get("refs", {}).items():
        seated = refs_in(manifest, slice_name)
        assert seated == refs, f"slice {slice_name}: seated {seated}"
    if "fixed" in expect:
        fixed = [m["ref"] for m in sorted(manifest["memories"], key=lambda m: m["position"])
                 if m["slice"] in FIXED_SLICES]
        assert fixed == expect["fixed"]
    for ref_key, tier in expect.get("tiers", {}).items():
        assert ref_key in by_key, f"{ref_key} is not in the window"
        assert by_key[ref_key]["tier"] == tier, ref_key
    for ref_key, rule in expect.get("tier_rules", {}).items():
        assert by_key[ref_key].get("tier_rule") == rule, f"{ref_key}: why its tier"
    for ref_key, summary_ref in expect.get("summary_refs", {}).items():
        assert by_key[ref_key].get("summary_ref") == summary_ref, ref_key
    if "scorer" in expect:
        assert manifest["scorer"] == expect["scorer"]
    for ref_key, status in expect.get("status", {}).items():
        assert by_key[ref_key]["status"] == status, ref_key
    if "annotations" in expect:
        annotated = {k: [a["current"] for a in m["annotation_refs"]] for k, m in by_key.items()
                     if m.get("annotation_refs")}
        assert annotated == expect["annotations"]
    if "required_refs" in expect:
        assert manifest["required_refs"] == expect["required_refs"]
    if "excluded" in expect:
        actual = sorted((key(x["ref"]), x["rule"]) for x in manifest["excluded"])
        assert actual == sorted((key(x["ref"]), x["rule"]) for x in expect["excluded"])
        for wanted in expect["excluded"]:
            found = next(x for x in manifest["excluded"] if x["ref"] == wanted["ref"] and x["rule"] == wanted["rule"])
            for field in ("detail", "kept"):
                if field in wanted:
                    assert found.get(field) == wanted[field], (key(wanted["ref"]), field)
    slices = manifest["allocation"]["slices"]
    for slice_name, fields in expect.get("allocation", {}).items():
        for field, value in fields.items():
            assert slices[slice_name][field] == value, (slice_name, field)
    for giver, receiver in expect.get("flows", []):
        assert slices[giver]["passed_on"] == slices[giver]["allowance"] - slices[giver]["used"], giver
        assert slices[receiver]["allowance"] == slices[receiver]["share"] + slices[giver]["passed_on"], receiver
    for ref_key, neighbour_key in expect.get("scored_by_neighbour", {}).items():
        scores = by_key[ref_key]["scores"]
        assert scores.get("adjacent_logit") is not None, f"{ref_key} is not scored through a neighbour"
        # its logit: the neighbour's less the margin, plus its conversation's share (the same for both)
        assert abs(scores["rerank_logit"] - scores["adjacent_logit"] - thread_share(scores)) < 1e-6, ref_key
        neighbour = by_key[neighbour_key]["scores"]
        lent = neighbour["rerank_logit"] - thread_share(neighbour) - ADJACENT_MARGIN
        assert abs(scores["adjacent_logit"] - lent) < 1e-6, (ref_key, neighbour_key)
    # The speaker weight when the question names a recalled turn's speaker (and no time), else nothing.
    history = [m["scores"] for m in manifest["memories"] if m["slice"] == "recalled_history"]
    best_bm25 = max((scores.get("bm25") or 0 for scores in history), default=0)
    for ref_key in expect.get("speaker_named", []):
        lift = named_lifts(by_key[ref_key]["scores"], best_bm25)
        assert abs(lift - SPEAKER_WEIGHT) < 1e-4, (ref_key, lift)
    for ref_key in expect.get("speaker_not_named", []):
        lift = named_lifts(by_key[ref_key]["scores"], best_bm25)
        assert abs(lift) < 1e-4, (ref_key, lift)
    for ref_key in expect.get("scored_on_their_own", []):
        assert "adjacent_logit" not in by_key[ref_key]["scores"], ref_key
    if "equal_priority" in expect:
        priorities = {by_key[key(ref)]["scores"]["priority"] for ref in expect["equal_priority"]}
        assert len(priorities) == 1, priorities
    if expect.get("tail_latest_first"):
        seated = [m for m in manifest["memories"] if m["slice"] == "volatile_tail"]
        turns = sorted(m["ref"][1] for m in seated)
        assert turns, "some turns must fit"
        tail_messages = request["messages"][1:-1]
        assert len(tail_messages) == len(seated)
        assert [m["ref"][1] for m in sorted(seated, key=lambda m: m["position"])] == turns, "oldest first"
    for ref in expect.get("tail_contains", []):
        assert key(ref) in by_key and by_key[key(ref)]["slice"] == "volatile_tail", key(ref)
    for ref in expect.get("tail_lacks", []):
        assert key(ref) not in by_key, key(ref)
        assert any(x["ref"] == ref and x["rule"] == "slice_budget" for x in manifest["excluded"]), key(ref)
    for ref in expect.get("absent", []):
        assert key(ref) not in by_key and all(x["ref"] != ref for x in manifest["excluded"]), key(ref)
    # A recalled turn's line: its window id, then who spoke (the speaker's name, else the role) and the text.
    context = request["messages"][-1]["content"].splitlines()
    for ref_key, line in expect.get("turn_lines", {}).items():
        assert ref_key in by_key, f"{ref_key} is not in the window"
        assert f"{by_key[ref_key]['id']} {line}" in context, (ref_key, line)
    for text in expect.get("contents_lack", []):
        assert all(text not in message["content"] for message in request["messages"]), text
