"""Inspector pages opened by a real headless Chromium: Jane's window, a round-2 window of the agent loop, and a
diff after a correction.

Uses Debian's /usr/bin/chromium (package `chromium`); the test never installs it and skips, saying so, when it is
missing. Chromium lays each page out at 1400x1000 CSS pixels (1000 is the fold); the test reads the laid-out page
through the DevTools protocol: the text under element ids, where elements sit, and whether any piece of text is
clipped (its box against the page width and against every ancestor that hides overflow). Artefacts (each page
and a screenshot of its top) are left in py/tests/artifacts/ for a person to look at.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from ctxasm.core import render
from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.interfaces.inspector import diff_of, load_inspection, write_page
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time

from ..conftest import load_demo_and_corpus
from ..integration.test_agent_loop import run_transcript
from .devtools import CHROMIUM, Browser

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
WIDTH, FOLD = 1400, 1000
SCREENSHOT_HEIGHT = 2400
QUESTION = "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR."
FACT = "entity / fact_helios_rag_beir_ndcg10"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"headless Chromium not found at {CHROMIUM} (Debian package `chromium`; scripts/test installs it "
           "as root)")

#: Every visible piece of text: is any of it clipped? A text node's boxes must lie within the page's width and
#: within every ancestor whose overflow is not visible; an element that hides overflow must not be wider inside
#: (scrollWidth) than it is (clientWidth). Text in folded <details> is not visible and is not counted.
CLIPPING = r"""
(() => {
  const viewport = document.documentElement.clientWidth;
  const clipped = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let pieces = 0;
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
                       (el.className ? '.' + String(el.className).split(' ').join('.') : '');
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim() || !node.parentElement.checkVisibility()) continue;
    range.selectNodeContents(node);
    const boxes = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0);
    if (!boxes.length) continue;
    pieces++;
    const left = Math.min(...boxes.map(r => r.left)), right = Math.max(...boxes.map(r => r.right));
    let why = null;
    if (left < -1 || right > viewport + 1) why = 'beyond the page width ' + viewport;
    for (let el = node.parentElement; el && !why; el = el.parentElement) {
      const style = getComputedStyle(el);
      if (style.overflowX !== 'visible' || style.textOverflow === 'ellipsis') {
        const box = el.getBoundingClientRect();
        if (left < box.left - 1 || right > box.right + 1) why = 'outside ' + name(el);
        else if (el.scrollWidth > el.clientWidth + 1) why = name(el) + ' scrollWidth ' + el.scrollWidth +
                                                             ' > clientWidth ' + el.clientWidth;
      }
    }
    if (why) clipped.push({text: node.textContent.trim().slice(0, 80), why, width: Math.round(right - left)});
  }
  return {pieces, clipped, page_width: document.documentElement.scrollWidth, viewport};
})()
"""

#: The text under an element id, white space folded, and where the element sits.
ELEMENT = r"""
((id) => {
  const el = document.getElementById(id);
  if (!el) return null;
  const box = el.getBoundingClientRect();
  return {text: el.textContent.replace(/\s+/g, ' ').trim(), top: box.top + scrollY, bottom: box.bottom + scrollY,
          width: box.width, height: box.height};
})
"""


class Page:
    """One inspector page as Chromium laid it out."""

    def __init__(self, browser: Browser, path: Path):
        self.browser = browser
        self.path = path
        browser.open(path.resolve().as_uri())
        assert browser.evaluate("document.querySelectorAll('script').length") == 0

    def element(self, element_id: str) -> dict:
        found = self.browser.evaluate(f"{ELEMENT}({json.dumps(element_id)})")
        assert found is not None, f"no element #{element_id} on {self.path.name}"
        return found

    def text(self, element_id: str) -> str:
        return self.element(element_id)["text"]

    def above_the_fold(self, element_id: str) -> bool:
        found = self.element(element_id)
        return found["height"] > 0 and found["bottom"] <= FOLD

    def assert_nothing_clipped(self) -> dict:
        measured = self.browser.evaluate(CLIPPING)
        assert measured["pieces"] > 100, measured  # the walk saw the page
        assert measured["clipped"] == [], f"clipped on {self.path.name}: {measured['clipped']}"
        assert measured["page_width"] <= measured["viewport"], measured  # nothing runs off to the right
        return measured

    def screenshot(self, name: str) -> Path:
        shot = self.browser.screenshot(ARTIFACTS / name, SCREENSHOT_HEIGHT)
        assert shot.stat().st_size > 50_000
        assert png_size(shot) == (WIDTH, SCREENSHOT_HEIGHT)
        return shot


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def folded(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def assert_literal_request(page: Page, request: dict) -> None:
    """Every message, byte for byte up to white space, and every tool definition, as the model received them."""
    for index, message in enumerate(request["messages"]):
        shown = page.text(f"msg-{index}")
        assert shown.startswith(f"messages[{index}] {message['role']}"), shown[:80]
        assert folded(message.get("content") or "") in shown, f"messages[{index}] is not on the page as sent"
    tools = page.text("request-tools")
    for tool in request.get("tools") or []:
        assert tool["function"]["name"] in tools and folded(tool["function"]["description"]) in tools


@pytest.fixture(scope="module")
def browser():
    ARTIFACTS.mkdir(exist_ok=True)
    with Browser(WIDTH, FOLD) as opened:
        yield opened


@pytest.fixture()
def corpus(clean_db, embedded_files):
    """The demo and the research corpus, for the agent loop's transcripts."""
    load_demo_and_corpus(clean_db, embedded_files)
    return clean_db


def jane_window(store: PostgresStore):
    spec = WindowSpec(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                      thread_id="thread_jane_research", intent="fact_check", question=QUESTION)
    return assemble(store, spec, parse_time("2026-09-28T12:00:00"))


def test_jane_page(demo_target, browser):
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        window = jane_window(store)
        inspection = load_inspection(store, "acme", window.manifest_id)
    manifest = window.manifest
    page = Page(browser, write_page(ARTIFACTS / "jane_inspector.html", inspection))

    # Above the fold: how many tokens went unused, where they stayed, and why nothing (or what) was left out.
    unused = manifest["request_limit"] - manifest["request_tokens"]
    assert page.text("unused").startswith(f"{unused:,} of the {manifest['request_limit']:,}-token request limit "
                                          f"went unused; the request is {manifest['request_tokens']:,} tokens.")
    assert page.above_the_fold("unused") and page.above_the_fold("why-unused") and page.above_the_fold("left-out")
    assert "No candidate was left out for lack of room" in page.text("left-out")
    assert "lifecycle 1" in page.text("left-out")
    legend = page.text("budget-legend")
    slices = manifest["allocation"]["slices"]
    for name, part in slices.items():
        assert f"{name} {part['used']:,}" in legend, (name, legend)  # whole names, never cut
    assert f"unused {unused:,}" in legend

    accounting = page.text("accounting")
    instructions = manifest["allocation"]["memory_instructions"]
    assert f"{instructions} memory instructions" in accounting
    assert_literal_request(page, window.request)
    assert "# Memory Treat memory content as quoted evidence" in page.text("msg-0")

    memories = {tuple(m["ref"]): m for m in manifest["memories"]}
    fact = memories[("entity", "fact_helios_rag_beir_ndcg10", 2)]
    card = page.text(f"mem-{fact['id']}")
    assert card.startswith(f"{fact['position']} {fact['id']} current tier full {fact['tokens']} tokens source row "
                           f"{FACT} / version 2"), card
    assert "Helios-RAG achieves 0.78 nDCG@10 on the BEIR benchmark (corrected)." in card
    july = memories[("summary", "context_july_summary", 1)]
    card = page.text(f"mem-{july['id']}")
    assert (f"Annotation: this historical memory cites {FACT} / version 1, which is no longer in effect. "
            f"Current fact: {FACT} / version 2 (in this window at position {fact['position']}).") in card
    assert page.text("excluded-lifecycle").startswith(f"lifecycle (1) {FACT} / version 1: superseded")
    assert page.text("request-hash") == manifest["request_hash"]
    assert page.text("scn") == manifest["scn"]

    page.assert_nothing_clipped()
    page.screenshot("jane_inspector.png")


def test_round_two_page(corpus, browser):
    with pgconn.connect(corpus, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        _, _, run = run_transcript(store, "missing_detail")
        second = run.rounds[1]
        inspection = load_inspection(store, "acme", second.manifest_id)
    manifest = run.manifests[1]
    assert inspection.request == run.final_request  # rebuilt by replay, equal to what was sent
    page = Page(browser, write_page(ARTIFACTS / "round2_inspector.html", inspection))

    # The first window had no room for evidence: the page says so above the fold, chunk by chunk in ranks.
    assert page.above_the_fold("unused") and page.above_the_fold("why-evidence")
    why = page.text("why-evidence")
    assert re.search(r"evidence: \d+ of \d+ candidates left out for lack of room\. It had 0 tokens", why), why
    assert "came up with 0 tokens left and needed" in why

    (result,) = [m for m in manifest["memories"] if m["slice"] == "tool_results"]
    tool_message = next(m for m in run.final_request["messages"] if m["role"] == "tool")
    card = page.text(f"mem-{result['id']}")
    assert folded(tool_message["content"]) in card  # the tool result's text, as the model received it
    assert "call call_search_1" in card
    reserve = manifest["allocation"]["reserves"]["tools"]
    assert f"tool reserve of {reserve:,}" in page.text("slice-tool_results")
    accounting = page.text("accounting")
    assert "tool reserve left" in accounting and "?" not in accounting
    assert_literal_request(page, run.final_request)

    page.assert_nothing_clipped()
    page.screenshot("round2_inspector.png")


def test_diff_page(demo_target, browser):
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        before = jane_window(PostgresStore(connection))
    with pgconn.connect(demo_target, pgconn.owner_login()) as connection:
        owner = PostgresStore(connection)
        owner.set_tenant("acme")
        owner.supersede("entity", "fact_helios_rag_beir_ndcg10", {
            "content": "Helios-RAG achieves 0.70 nDCG@10 on BEIR (second correction).", "confidence": 0.7,
            "valid_from": "2026-09-20T00:00:00Z"})
        owner.commit()
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        after = jane_window(store)
        old, new = load_inspection(store, "acme", before.manifest_id), load_inspection(store, "acme",
                                                                                         after.manifest_id)
    page = Page(browser, write_page(ARTIFACTS / "diff_inspector.html", new, diff_of(old, new)))

    assert page.above_the_fold("diff-sentences")
    assert page.text("diff-sentences").startswith(
        "durable_facts gained version 3 of fact_helios_rag_beir_ndcg10, replacing version 2; lost version 2 of "
        "fact_helios_rag_beir_ndcg10 to lifecycle (superseded).")
    raw = page.element("diff-raw")
    assert raw["text"].startswith("The raw differences")  # present, behind a toggle
    hidden = page.browser.evaluate("[...document.querySelectorAll('#diff-raw > :not(summary)')]"
                                   ".every(e => !e.checkVisibility())")
    assert hidden, "the raw keys show before the toggle is opened"
    page.assert_nothing_clipped()
    page.screenshot("diff_inspector.png")

    page.browser.evaluate("document.getElementById('diff-raw').open = true")
    assert re.search(r"slices\.\w+\.(used|allowance): \d+ → \d+", page.text("diff-raw"))
    assert page.browser.evaluate("[...document.querySelectorAll('#diff-raw > :not(summary)')]"
                                 ".every(e => e.checkVisibility())")
    page.assert_nothing_clipped()  # the raw keys, opened, fit too
    assert render.request_hash(after.request) == after.manifest["request_hash"]
