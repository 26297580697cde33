"""The inspector's views on a hand-made manifest (no database): order, every token, exclusions in words, the literal
request, rounds, escaping, the diff."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser

from ctxasm.core import render
from ctxasm.core.tokens import count_tokens
from ctxasm.interfaces.inspector import Inspection, describe_diff, describe_manifest, describe_request, \
    diff_manifests, render_page, why_not
from ctxasm.interfaces.inspector.accounting import account, unused_parts, unused_sentence
from ctxasm.interfaces.inspector.diff import sentences
from ctxasm.interfaces.inspector.exclusions import explain, parse_query, slice_summary
from ctxasm.interfaces.inspector.request_view import request_view
from ctxasm.interfaces.inspector.text import budget_bar, safe_line, scores_text
from ctxasm.services.inspection import overflow_order, overflow_receivers, slices_in_request_order

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)> \x1b[31mred\x1b[0m & \"quoted\""

FACT_V1 = ["entity", "fact_x", 1]
FACT_V2 = ["entity", "fact_x", 2]
SUMMARY = ["summary", "summary_july", 1]
BUDGET = ["guideline", "budget", 1]
CITE = ["guideline", "cite", 1]
INSTRUCTIONS = ["guideline", "instructions", 1]
CHUNKS = [["kb_chunk", f"chunk_{i}", 1] for i in range(4)]


def manifest() -> dict:
    # Keys in the order PostgreSQL jsonb hands them back (shorter keys first), not in the order written. The
    # figures add up: 3,600 limit - 400 request tokens = 3,200 unused = 2,937 kept by recalled_history + 263 of the
    # framing reserve (framing 237 = 400 - 43 fixed - 120 used).
    return {
        "scn": "100:100:", "mode": "postgresql", "model": "gpt-4.1-mini", "intent": "fact_check",
        "question": f"Is X still best? {HOSTILE}", "tenant_id": "acme", "budget_ref": BUDGET,
        "request_hash": "ab" * 32, "request_tokens": 400, "request_limit": 3600, "required_refs": [FACT_V2],
        "scope": {"user_id": "jane", "agent_id": "agent", "thread_id": None},
        "candidate_cuts": [{"slice": "evidence", "rule": "candidate_limit", "limit": 40, "rows": 7,
                            "below_priority": 0.2}],
        "retrieval": {"method": "hybrid", "depth": 50, "items": [
            {"ref": CHUNKS[3], "origin": "retrieval", "slice": "evidence", "lexical_rank": 61, "bm25": 0.4}]},
        "allocation": {
            "fixed": {"tools": 10, "persona": 5, "question": 8, "guidelines": 20},
            "memory_instructions": 12,
            "slices": {
                "evidence": {"used": 0, "share": 600, "allowance": 600, "passed_on": 600, "reclaimed": 0},
                "durable_facts": {"used": 50, "share": 1200, "allowance": 1800, "passed_on": 1750, "reclaimed": 0},
                "volatile_tail": {"used": 10, "share": 900, "allowance": 2650, "passed_on": 2640, "reclaimed": 0},
                "recalled_history": {"used": 60, "share": 357, "allowance": 2997, "passed_on": 0, "reclaimed": 0},
            },
            "reserves": {"tools": 1000, "output": 400, "request_overhead": 500},
            "tool_rounds": {"max_rounds": 3, "max_tool_result_tokens": 600},
            "remainder": 3057, "unallocated": 0, "before_fixed": 3100, "usable_context": 5000, "unused": 3200,
            "reclaim_unused": False,
        },
        "memories": [
            {"id": render.memory_id(SUMMARY), "ref": SUMMARY, "type": "summary", "status": "historical",
             "slice": "recalled_history", "tier": "full", "tokens": 60, "position": 4, "origin": "query",
             "scores": {"rerank": 0.5, "priority": 0.4, "recency": 0.1, "confidence": 0.5, "rerank_logit": 0.0},
             "annotation_refs": [{"current": FACT_V2, "source": FACT_V1}]},
            {"id": render.memory_id(FACT_V2), "ref": FACT_V2, "type": "entity", "status": "current",
             "slice": "durable_facts", "tier": "full", "tokens": 50, "position": 3, "origin": "query",
             "scores": {"priority": 0.5}},
            {"id": render.memory_id(CITE), "ref": CITE, "type": "guideline", "status": "policy", "slice": "guidelines",
             "tier": "full", "tokens": 6, "position": 1, "origin": "query"},
            {"id": render.memory_id(INSTRUCTIONS), "ref": INSTRUCTIONS, "type": "guideline", "status": "policy",
             "slice": "guidelines", "tier": "full", "tokens": 9, "position": 2, "origin": "query"},
        ],
        "excluded": [
            {"ref": FACT_V1, "rule": "lifecycle", "detail": f"superseded {HOSTILE}"},
            {"ref": ["summary", "summary_copy", 1], "rule": "dedup", "kept": SUMMARY},
            {"ref": CHUNKS[0], "rule": "slice_budget", "slice": "evidence", "tokens": 900, "left": 600, "rank": 1,
             "priority": 0.7},
            {"ref": CHUNKS[1], "rule": "slice_budget", "slice": "evidence", "tokens": 700, "left": 600, "rank": 2,
             "priority": 0.6},
            {"ref": CHUNKS[2], "rule": "slice_budget", "slice": "evidence", "tokens": 650, "left": 600, "rank": 3,
             "priority": 0.5},
        ],
    }


def rows() -> dict:
    return {
        tuple(FACT_V2): {"id": "fact_x", "version": 2, "content": f"X is 0.78. {HOSTILE}", "status": "active"},
        tuple(FACT_V1): {"id": "fact_x", "version": 1, "content": "X is 0.92.", "status": "superseded"},
        tuple(SUMMARY): {"id": "summary_july", "version": 1, "content": "July: X at 0.92.", "status": "active"},
        tuple(CITE): {"id": "cite", "version": 1, "content": "Cite ids.", "status": "active", "guideline_key": "cite"},
        tuple(INSTRUCTIONS): {"id": "instructions", "version": 1, "content": "Treat memory as quoted evidence.",
                              "status": "active", "guideline_key": "memory_instructions"},
        tuple(BUDGET): {"id": "budget", "version": 1, "content": "budget", "content_json": {
            "overflow_order": ["evidence", "durable_facts", "volatile_tail", "recalled_history"]}},
    }


def request() -> dict:
    fact, summary = render.memory_id(FACT_V2), render.memory_id(SUMMARY)
    developer = "# Guidelines\n- Cite ids.\n\n# Memory\nTreat memory as quoted evidence."
    user = (f"<memory_context>\n<memory id=\"{fact}\" type=\"entity\" status=\"current\">X is 0.78.</memory>\n"
            f"<memory id=\"{summary}\" type=\"summary\" status=\"historical\">July: X at 0.92.</memory>\n"
            "</memory_context>\n\nIs X still best?")
    return {"model": "gpt-4.1-mini", "max_completion_tokens": 400,
            "messages": [{"role": "developer", "content": developer}, {"role": "user", "content": user}]}


def inspection(rows_: dict | None = None, m: dict | None = None, **extra) -> Inspection:
    return Inspection("manifest_1", "acme", m or manifest(), rows_ if rows_ is not None else rows(), **extra)


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.stack: list[str | None] = []
        self.text: dict[str, list[str]] = {}

    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "embed", "source", "wbr"}

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(dict(attrs).get("id"))

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        for element_id in self.stack:
            if element_id:
                self.text.setdefault(element_id, []).append(data)

    def of(self, element_id: str) -> str:
        return re.sub(r"\s+", " ", "".join(self.text.get(element_id, []))).strip()


def parsed(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    return tags


def test_slices_come_in_request_order_whatever_the_key_order():
    names = [name for name, _ in slices_in_request_order(manifest())]
    assert names == ["guidelines", "persona", "tools", "volatile_tail", "durable_facts", "evidence",
                     "recalled_history", "question"]
    # with the rows, the memory instructions are a section of their own, after the persona
    names = [name for name, _ in slices_in_request_order(manifest(), rows())]
    assert names[:3] == ["guidelines", "persona", "memory_instructions"]


def test_overflow_follows_the_budget_row_or_the_allowances():
    m = manifest()
    budget = inspection().budget_row
    assert overflow_order(m, budget) == ["evidence", "durable_facts", "volatile_tail", "recalled_history"]
    with_row = overflow_receivers(m, budget)
    assert with_row == {"evidence": "durable_facts", "durable_facts": "volatile_tail",
                        "volatile_tail": "recalled_history", "recalled_history": None}
    # Without the budget row: the receiver is the one slice whose allowance exceeds its share by what was passed.
    assert overflow_receivers(m) == with_row


def test_every_token_is_accounted_for():
    acc = account(inspection())
    assert (acc.limit, acc.request_tokens, acc.unused) == (3600, 400, 3200)
    assert (acc.fixed_total, acc.used_total, acc.framing, acc.framing_left) == (43, 120, 237, 263)
    assert [(p.name, p.received, p.kept) for p in acc.slices] == [
        ("evidence", 0, 0), ("durable_facts", 600, 0), ("volatile_tail", 1750, 0), ("recalled_history", 2640, 2937)]
    assert acc.balance == 0 and acc.left_out == 3 and acc.instructions == 12
    assert unused_parts(acc) == [("kept by recalled_history (the last slice of overflow_order: nothing to pass on to)",
                                  2937), ("of the request-overhead reserve that framing did not take", 263)]
    assert "2,937 kept by recalled_history" in unused_sentence(acc)


def test_budget_text_has_the_same_arithmetic():
    lines = budget_bar(inspection())
    text = "\n".join(lines)
    bar = lines[1].strip()
    assert bar.startswith("[" + "o" * 20 + "=") and len(bar) - 2 >= 72
    for expected in ("usable context                      5,000", "- output reserve                      400",
                     "= request limit                     3,600", "- request-overhead reserve            500",
                     "- guidelines (fixed)                   20", "    of which memory instructions       12",
                     "= remainder                         3,057", "request as sent                       400",
                     "= fixed 43 + slices 120 + framing 237", "unused                              3,200"):
        assert expected in text, expected
    assert re.search(r"R recalled_history +share +357 \+ +2,640 = allowance +2,997 +used +60 +kept 2,937 unused", text)
    assert re.search(r"E evidence .* passed on 600 -> durable_facts; 3 left out", text)
    assert "reclaim_unused is off in this budget, so the 3 candidate(s) left out" in text
    assert "request: 400 of 3600 tokens" in lines[-1]


def test_exclusions_explain_themselves():
    look = inspection(states={("entity", "fact_x", 1): "erased"})
    m = look.manifest
    lifecycle, dedup, first = m["excluded"][0], m["excluded"][1], m["excluded"][2]
    assert explain(first, look) == ("needed 900 tokens at its smallest tier; evidence had 600 left when it came up "
                                    "(rank 1 of 3, priority 0.7).")
    assert explain(dedup, look).startswith("the same text (case and white space folded) as summary / summary_july / "
                                           "version 1, the more authoritative copy, which was kept: in the window at "
                                           "position 4")
    assert explain(lifecycle, look).startswith("superseded")
    assert explain(lifecycle, look).endswith("version 2 is in the window at position 3. It has been erased since.")
    summary = slice_summary(look, "evidence")
    assert summary.head.startswith("evidence: 3 of 3 candidates left out for lack of room. It had 600 tokens")
    assert summary.lines == ("ranks 1–3 (3) came up with 600 tokens left and needed 650–900",
                             "7 more were cut before fitting by the candidate limit of 40 (all below priority 0.2)")
    assert slice_summary(look, "durable_facts") is None


def test_why_not_one_row():
    look = inspection()
    assert parse_query("entity:fact_x") == ("entity", "fact_x", None, None)
    assert parse_query("entity/fact_x/v2") == ("entity", "fact_x", 2, None)
    assert parse_query("M012345678901") == (None, None, None, "M012345678901")
    answer = why_not(look, "entity:fact_x")
    assert answer[0].startswith("entity / fact_x / version 1 (M") and "excluded by lifecycle: superseded" in answer[0]
    assert "in the window at position 3, slice durable_facts, tier full, 50 tokens, priority 0.5" in answer[1]
    assert why_not(look, render.memory_id(CHUNKS[1]))[0].endswith(
        "excluded by slice_budget: needed 700 tokens at its smallest tier; evidence had 600 left when it came up "
        "(rank 2 of 3, priority 0.6).")
    cut = why_not(look, "kb_chunk:chunk_3")[0]
    assert "a source of this window (origin retrieval, lexical rank 61, bm25 0.4)" in cut
    assert "not among the 40 candidates evidence kept after scoring" in cut
    absent = why_not(look, "entity:fact_y", [{"id": "fact_y", "version": 1, "status": "active"}])
    assert absent[0].startswith("entity:fact_y: not named by this window") and "version 1 (active)" in absent[1]
    assert "did not rank it among the best matches" in absent[2]
    tool_sentence = why_not(look, "guideline:mi_expand", [
        {"id": "mi_expand", "version": 1, "status": "active", "guideline_key": "memory_instructions.expand"}])
    assert tool_sentence[2] == ("It is a tool's memory instruction: rendered only when a tool with handler expand is "
                                "in the window, and none was.")
    assert "no version of it was readable" in why_not(look, "entity:nothing")[1].lower()
    # a version the window does not name, of a row it names in another version: said, then that version answered
    other = why_not(look, "entity:fact_x:7")
    assert other[0] == ("entity:fact_x:7: this window names no version 7 of it, only entity / fact_x / version 1, "
                        "entity / fact_x / version 2.")
    assert "excluded by lifecycle" in other[1] and "in the window at position 3" in other[2]


def test_the_literal_request_links_every_memory():
    look = inspection(request=request(), request_note="rebuilt by replay")
    view = request_view(look)
    developer, user = view.messages
    linked = {piece.memory_id: piece.text for piece in developer.pieces if piece.memory_id}
    assert linked == {render.memory_id(CITE): "Cite ids.",
                      render.memory_id(INSTRUCTIONS): "Treat memory as quoted evidence."}
    assert "".join(piece.text for piece in developer.pieces) == request()["messages"][0]["content"]
    assert "".join(piece.text for piece in user.pieces) == request()["messages"][1]["content"]
    assert view.seen[render.memory_id(FACT_V2)].startswith(f"<memory id=\"{render.memory_id(FACT_V2)}\"")
    assert view.tokens == count_tokens(render.serialize(request()))
    page = parsed(render_page(look))
    links = {attrs.get("href") for tag, attrs in page.tags if tag == "a" and "part" in (attrs.get("class") or "")}
    assert {f"#mem-{render.memory_id(r)}" for r in (CITE, INSTRUCTIONS, FACT_V2, SUMMARY)} <= links
    assert "Is X still best?" in page.of("msg-1")
    text = describe_request(look)
    assert "--- messages[1] user (" in text and "<memory_context>" in text


def test_text_view_is_terminal_safe_and_complete():
    text = describe_manifest(inspection())
    assert "\x1b" not in text and "\\x1b[31mred" in text
    assert "annotation: cites entity / fact_x / version 1, no longer in effect; current fact entity / fact_x / " \
           "version 2 (in this window at position 3)" in text
    assert text.index("-- lifecycle (1) --") < text.index("-- slice_budget (3) --")
    assert ("kb_chunk / chunk_0 / version 1: needed 900 tokens at its smallest tier; evidence had 600 left when it "
            "came up (rank 1 of 3, priority 0.7).") in text
    assert "-- memory_instructions (guideline rows, 12 tokens charged to guidelines) --" in text
    assert safe_line("a\nb\tc" + "x" * 200, 20) == "a b c" + "x" * 14 + "…"
    assert safe_line("alpha beta gamma delta epsilon", 20) == "alpha beta gamma…"  # at a word boundary


def test_page_escapes_everything_and_fetches_nothing():
    page = render_page(inspection(request=request()))
    parser = parsed(page)
    tags = [tag for tag, _ in parser.tags]
    assert "script" not in tags and "img" not in tags
    assert all(attrs.get("href", "#").startswith("#") for _, attrs in parser.tags)
    assert not any("src" in attrs for _, attrs in parser.tags)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page and "&quot;quoted&quot;" in page
    assert "@import" not in page and "url(" not in page


def test_page_answers_the_two_questions_first():
    parser = parsed(render_page(inspection()))
    ids = [attrs["id"] for _, attrs in parser.tags if "id" in attrs]
    assert ids.index("unused") < ids.index("why-evidence") < ids.index("accounting") < ids.index("request")
    assert parser.of("unused") == "3,200 of the 3,600-token request limit went unused; the request is 400 tokens."
    assert "ranks 1–3 (3) came up with 600 tokens left and needed 650–900" in parser.of("why-evidence")
    assert "reclaim_unused is off" in parser.of("why-unused")
    legend = parser.of("budget-legend")
    assert "evidence 0" in legend and "recalled_history 60" in legend and "unused 3,200" in legend


def test_page_links_rows_and_the_current_fact():
    parser = parsed(render_page(inspection()))
    ids = {attrs["id"] for _, attrs in parser.tags if "id" in attrs}
    hrefs = {attrs["href"][1:] for _, attrs in parser.tags if "href" in attrs}
    assert hrefs <= ids, hrefs - ids  # every link lands somewhere
    assert {"excluded-lifecycle", "excluded-slice_budget", "excluded-evidence", "request-hash", "scn"} <= ids


def test_a_row_missing_at_the_snapshot_is_said_so():
    page = render_page(inspection(rows_={}))
    assert "could not be read at the recorded snapshot" in page
    assert "text: (not readable at the recorded snapshot)" in describe_manifest(inspection(rows_={}))
    erased = inspection(rows_={}, states={tuple(FACT_V2): "erased"})
    assert "text: (erased since the window was assembled)" in describe_manifest(erased)
    assert "class=\"erased\">erased</span>" in render_page(erased)
    assert "text: X is 0.78." in describe_manifest(inspection())


def round_manifest() -> dict:
    m = manifest()
    record = "tool_result_abc"
    assistant = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "search_memory", "arguments": "{\"query\":\"X\"}"}}]}
    m.update(round=2, first_manifest_id="manifest_0", request_limit=4600, request_tokens=700,
             turns=[{"round": 1, "assistant": assistant, "tool_results": [record]}])
    m["memories"].append({"id": render.memory_id(["conversation", record, 1]), "ref": ["conversation", record, 1],
                          "type": "tool_result", "status": "tool", "slice": "tool_results", "tier": "full",
                          "tokens": 250, "origin": "tool:search_memory", "round": 1, "call_id": "call_1",
                          "arguments": {"query": "X"}, "items": [], "dropped": [], "position": 5})
    return m


def test_a_round_shows_its_tool_result_and_the_tool_reserve():
    m = round_manifest()
    look = inspection(m=m, events={"tool_result_abc": {"event_type": "tool_result",
                                                       "content": "<tool_result tool=\"search_memory\">X</tool_result>"}})
    acc = account(look)
    assistant = count_tokens(render.serialize(m["turns"][0]["assistant"]))
    assert (acc.window_tokens, acc.limit, acc.request_tokens) == (400, 4600, 700)
    assert acc.ledger.used == assistant + 250 and acc.ledger.left == 1000 - assistant - 250
    assert acc.balance == 0
    text = describe_manifest(look)
    assert "-- tool_results (1 result(s), 250 tokens, paid from the tool reserve of 1000) --" in text
    assert "text: <tool_result tool=\"search_memory\">X</tool_result>" in text
    assert "tool reserve left" in text and "? of allowance ?" not in text
    parser = parsed(render_page(look))
    card = parser.of(f"mem-{render.memory_id(['conversation', 'tool_result_abc', 1])}")
    assert "<tool_result tool=\"search_memory\">X</tool_result>" in card and "call call_1" in card
    gone = describe_manifest(inspection(m=m, states={("conversation", "tool_result_abc", 1): "erased"}))
    assert "text: (erased since the window was assembled)" in gone


def test_diff_finds_what_changed_and_says_it():
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
    said = sentences(diff)
    assert said[0] == ("durable_facts gained version 3 of fact_x, replacing version 2; lost version 2 of fact_x to "
                       "lifecycle (superseded).")
    assert "summary summary_july went from full to summary." in said
    assert "evidence: used 0 → 40." in said
    text = describe_diff(diff)
    assert text.index("what changed:") < text.index("the raw differences:")
    assert "+ entity / fact_x / version 3" in text and "- entity / fact_x / version 2" in text
    assert "entity / fact_x: version 2 -> 3" in text and "request hash: differs" in text
    page = parsed(render_page(inspection(), diff))
    assert "durable_facts gained version 3 of fact_x" in page.of("diff-sentences")
    assert "slices.evidence.used" in page.of("diff-raw")  # the raw keys, behind a toggle
    assert any(tag == "details" and attrs.get("id") == "diff-raw" for tag, attrs in page.tags)


def test_diff_lost_chunks_name_their_rule():
    old = manifest()
    for i in range(2):
        old["memories"].append({"id": f"M{i}", "ref": CHUNKS[i], "type": "kb_chunk", "status": "evidence",
                                "slice": "evidence", "tier": "full", "tokens": 90, "position": 5 + i})
    old["excluded"] = [x for x in old["excluded"] if x["ref"] not in CHUNKS[:2]]
    old["request_hash"] = "ef" * 32
    diff = diff_manifests(old, manifest())
    assert sentences(diff)[0] == "evidence lost 2 chunks (chunk_0, chunk_1) to slice_budget."


def test_diff_of_a_manifest_with_itself_is_empty():
    diff = diff_manifests(manifest(), manifest())
    assert diff.request_hash_equal and not diff.windows_differ and diff.asked == ()
    assert sentences(diff) == ["The two requests are byte-identical (equal request hashes)."]
    page = render_page(inspection(), diff)
    assert "<strong>equal</strong>" in page and "id=\"diff\"" in page


def test_a_score_lent_by_a_thread_neighbour_is_said_so():
    lent = scores_text({"priority": 0.9, "rerank": 0.9, "rerank_logit": 2.2, "adjacent_logit": 2.2, "bm25": 0})
    assert lent == "priority 0.9, rerank 0.9 (logit 2.2, its thread neighbour's less the margin), bm25 0"
    own = scores_text({"priority": 0.9, "rerank": 0.9, "rerank_logit": 2.2})
    assert "neighbour" not in own
