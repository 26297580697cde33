"""The inspector page for Jane's window, opened by a real headless Chromium.

Uses Debian's /usr/bin/chromium (package `chromium`); the test never installs it and skips, saying so, when it is
missing. Artefacts (the page, the DOM as Chromium rendered it, a 1400x2400 screenshot) are left in
py/tests/artifacts/ for a person to look at.
"""

from __future__ import annotations

import re
import struct
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.interfaces.inspector import load_inspection, write_page
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
QUESTION = "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR."
FACT = "entity / fact_helios_rag_beir_ndcg10"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"headless Chromium not found at {CHROMIUM} (Debian package `chromium`; scripts/test installs it "
           "as root)")


def chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="ctxasm-chromium-") as profile:
        result = subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args],
                                capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, f"chromium failed ({result.returncode}): {result.stderr[-2000:]}"
    return result


class RenderedText(HTMLParser):
    """The text under every element id of the DOM Chromium serialized, and the tags it built."""

    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "embed", "source", "wbr"}

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.stack: list[str | None] = []
        self.text: dict[str, list[str]] = {}

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
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


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_jane_page_in_headless_chromium(demo_target):
    spec = WindowSpec(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                      thread_id="thread_jane_research", intent="fact_check", question=QUESTION)
    with pgconn.connect(demo_target, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        window = assemble(store, spec, parse_time("2026-09-28T12:00:00"))
        inspection = load_inspection(store, "acme", window.manifest_id)
    ARTIFACTS.mkdir(exist_ok=True)
    page = write_page(ARTIFACTS / "jane_inspector.html", inspection)
    url = page.resolve().as_uri()

    dom = chromium("--dump-dom", url).stdout
    (ARTIFACTS / "jane_inspector.dom.html").write_text(dom, encoding="utf-8")
    rendered = RenderedText()
    rendered.feed(dom)
    assert "script" not in rendered.tags

    memories = {tuple(m["ref"]): m for m in window.manifest["memories"]}
    fact = memories[("entity", "fact_helios_rag_beir_ndcg10", 2)]
    card = rendered.of(f"mem-{fact['id']}")
    assert card.startswith(f"{fact['position']} {fact['id']} current tier full {fact['tokens']} tokens source row "
                           f"{FACT} / version 2"), card
    row = rendered.of(f"row-{fact['id']}")
    assert row.startswith(f"{FACT} / version 2 row reference [\"entity\", \"fact_helios_rag_beir_ndcg10\", 2]")
    assert "Helios-RAG achieves 0.78 nDCG@10 on the BEIR benchmark (corrected)." in row

    july = memories[("summary", "context_july_summary", 1)]
    card = rendered.of(f"mem-{july['id']}")
    assert card.startswith(f"{july['position']} {july['id']} historical tier full"), card
    assert (f"Annotation: this historical memory cites {FACT} / version 1, which is no longer in effect. "
            f"Current fact: {FACT} / version 2 (in this window at position {fact['position']}).") in card

    lifecycle = rendered.of("excluded-lifecycle")
    assert lifecycle == f"lifecycle (1) {FACT} / version 1: superseded", lifecycle
    assert rendered.of("request-hash") == window.manifest["request_hash"]
    assert rendered.of("scn") == window.manifest["scn"]

    screenshot = ARTIFACTS / "jane_inspector.png"
    screenshot.unlink(missing_ok=True)
    chromium(f"--screenshot={screenshot}", "--window-size=1400,2400", url)
    assert screenshot.exists() and screenshot.stat().st_size > 50_000
    assert png_size(screenshot) == (1400, 2400)
