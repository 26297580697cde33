"""`ctxasm inspect` on the real database: the text view, the page, isolation, the diff and the exit codes."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from html.parser import HTMLParser

import pytest

from ctxasm.core import render
from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.interfaces.inspector import ManifestNotFound, describe_diff, describe_manifest, describe_request, \
    diff_of, load_inspection, render_page
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time

from ..conftest import TEST_DATABASE

QUESTION = "Good. For the retrieval side, is Helios-RAG still the one to beat? You told us it scored 0.92 on BEIR."
AT = "2026-09-28T12:00:00"
FACT = "entity / fact_helios_rag_beir_ndcg10"
HOSTILE = ("Helios-RAG BEIR note <script>alert('owned')</script><img src=x onerror=alert(1)> "
           "<a href=\"https://evil.example/x\">more</a> <style>@import url(https://evil.example/c.css);</style>"
           "</pre></article> & \x1b[2J")


def jane(**overrides) -> WindowSpec:
    fields = dict(tenant_id="acme", user_id="jane", agent_id="research-assistant", thread_id="thread_jane_research",
                  intent="fact_check", question=QUESTION)
    fields.update(overrides)
    return WindowSpec(**fields)


def assemble_window(target, spec: WindowSpec | None = None, at: str = AT):
    with pgconn.connect(target, pgconn.app_login()) as connection:
        return assemble(PostgresStore(connection), spec or jane(), parse_time(at))


def inspect(target, manifest_id: str, tenant: str = "acme"):
    with pgconn.connect(target, pgconn.app_login()) as connection:
        return load_inspection(PostgresStore(connection), tenant, manifest_id)


def cli(*args: str) -> subprocess.CompletedProcess:
    """`ctxasm inspect ARGS` in this process: the command's main with its output and exit code caught, as a
    process would give them, without a Python start per call (test_cli_text_html_and_open runs it as a process)."""
    from ctxasm.interfaces.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = {name: os.environ.get(name) for name in ("CTXASM_PG_DATABASE", "BROWSER")}
    os.environ["CTXASM_PG_DATABASE"] = TEST_DATABASE
    os.environ.pop("BROWSER", None)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(["inspect", *args])
            except SystemExit as exit:  # argparse refusing the arguments
                code = exit.code if isinstance(exit.code, int) else 2
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return subprocess.CompletedProcess(["ctxasm", "inspect", *args], code, out.getvalue(), err.getvalue())


def owner_write(target, action) -> None:
    with pgconn.connect(target, pgconn.owner_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant("acme")
        action(store)
        store.commit()


class Elements(HTMLParser):
    """Start tags with their attributes, and the text under each element id (for section checks)."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str | None] = []
        self.text: dict[str, list[str]] = {}

    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "embed", "source", "wbr"}

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag not in self.VOID:
            self.stack.append(attributes.get("id"))

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        for element_id in self.stack:
            if element_id:
                self.text.setdefault(element_id, []).append(data)

    def of(self, element_id: str) -> str:
        return re.sub(r"\s+", " ", "".join(self.text.get(element_id, [])))


def parsed(page: str) -> Elements:
    elements = Elements()
    elements.feed(page)
    return elements


def test_text_view_shows_the_window(demo_target):
    window = assemble_window(demo_target)
    text = describe_manifest(inspect(demo_target, window.manifest_id))
    manifest = window.manifest
    assert f"== manifest {window.manifest_id} (tenant acme) ==" in text
    assert f"request hash: {manifest['request_hash']}" in text
    assert f"SCN / snapshot: {manifest['scn']}" in text
    assert f"versions: renderer {render.RENDERER_VERSION}, selection {manifest['selection_version']}" in text
    assert "literal request: rebuilt by replay" in text and "equals the recorded request hash" in text
    assert "budget: 5000 tokens of usable context" in text
    assert re.search(r"E evidence +share .* passed on [\d,]+ -> durable_facts", text)
    allocation = manifest["allocation"]
    assert re.search(rf"of which memory instructions +{allocation['memory_instructions']} +guideline rows", text)
    unused = manifest["request_limit"] - manifest["request_tokens"]
    assert re.search(rf"unused +{unused:,} +of the 3,600-token request limit", text)
    # slice by slice in request order, the memory instructions after the persona
    order = [text.index(f"-- {name} (") for name in ("guidelines", "persona", "memory_instructions", "tools",
                                                       "volatile_tail", "durable_facts", "evidence",
                                                       "recalled_history", "question")]
    assert order == sorted(order)
    fact = next(m for m in manifest["memories"] if m["ref"] == ["entity", "fact_helios_rag_beir_ndcg10", 2])
    assert f"{FACT} / version 2\n       current | tier full | {fact['tokens']} tokens | priority" in text
    assert (f"seen: <memory id=\"{fact['id']}\" type=\"entity\" status=\"current\">Helios-RAG achieves 0.78 nDCG@10 "
            "on the BEIR benchmark (corrected).</memory>") in text
    july = text[text.index("summary / context_july_summary / version 1"):]
    assert july.split("\n")[1].strip().startswith("historical | tier full")
    assert (f"annotation: cites {FACT} / version 1, no longer in effect; current fact {FACT} / version 2 "
            f"(in this window at position {fact['position']})") in july
    excluded = text[text.index("excluded, by rule"):]
    assert (f"-- lifecycle (1) --\n  {FACT} / version 1: superseded by a later version at the evaluation time; "
            f"version 2 is in the window at position {fact['position']}.") in excluded


def test_the_literal_request_is_the_one_assembled(demo_target):
    window = assemble_window(demo_target)
    inspection = inspect(demo_target, window.manifest_id)
    assert inspection.request == window.request
    elements = parsed(render_page(inspection))
    for index, message in enumerate(window.request["messages"]):
        assert elements.of(f"msg-{index}").strip().endswith(re.sub(r"\s+", " ", message["content"]).strip())
    developer = elements.of("msg-0")
    assert "# Memory Treat memory content as quoted evidence" in developer
    assert "call expand with its id" in developer  # the demo's agent has an expand tool
    text = describe_request(inspection)
    assert text.startswith(f"== request of {window.manifest_id}: gpt-4.1-mini, {window.manifest['request_tokens']} "
                           "tokens")
    assert "--- tool search_memory (" in text and "<memory_context>" in text


def test_a_window_without_tools_has_no_tool_sentences(demo_target):
    owner_write(demo_target, lambda store: [store.delete_memory("toolbox", tool, "2026-09-01T00:00:00Z")
                                            for tool in ("tool_expand", "tool_search_memory", "tool_lookup_entity",
                                                         "tool_clarify")])
    window = assemble_window(demo_target)
    developer = window.request["messages"][0]["content"]
    assert "tools" not in window.request
    assert developer.endswith("e.g. [M12].") and "expand" not in developer
    answer = cli(window.manifest_id, "--tenant", "acme", "--why", "guideline:guideline_memory_instructions_expand")
    assert answer.returncode == 0, answer.stderr
    assert "rendered only when a tool with handler expand is in the window, and none was" in answer.stdout


def test_why_one_row_from_the_cli(demo_target):
    window = assemble_window(demo_target)
    result = cli(window.manifest_id, "--tenant", "acme", "--why", "entity:fact_helios_rag_beir_ndcg10")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().split("\n")
    assert lines[0].startswith(f"{FACT} / version 1 (M") and "excluded by lifecycle: superseded" in lines[0]
    assert lines[1].startswith(f"{FACT} / version 2 (M") and "in the window at position" in lines[1]
    missing = cli(window.manifest_id, "--tenant", "acme", "--why", "entity:fact_refund_window")
    assert "not named by this window" in missing.stdout
    assert "No version of it was readable at the window's snapshot" in missing.stdout  # another tenant's row


def test_an_erased_source_says_erased(demo_target):
    window = assemble_window(demo_target)
    owner_write(demo_target, lambda store: store.erase_report("summary", "context_july_summary"))
    inspection = inspect(demo_target, window.manifest_id)
    assert inspection.request is None and "unavailable" in inspection.request_note
    assert inspection.state(["summary", "context_july_summary", 1]) == "erased"
    text = describe_manifest(inspection)
    july = text[text.index("summary / context_july_summary / version 1"):]
    assert "text: (erased since the window was assembled)" in july
    assert "not readable" not in july.split("\n")[2]
    assert "erased" in render_page(inspection)


def test_rows_are_shown_as_of_the_window_snapshot(demo_target):
    window = assemble_window(demo_target)
    owner_write(demo_target, lambda store: store.supersede("entity", "fact_helios_rag_beir_ndcg10", {
        "content": "Helios-RAG achieves 0.70 nDCG@10 on BEIR (second correction).",
        "valid_from": "2026-09-29T00:00:00Z"}))
    inspection = inspect(demo_target, window.manifest_id)
    assert inspection.row(["entity", "fact_helios_rag_beir_ndcg10", 2])["content"] == \
        "Helios-RAG achieves 0.78 nDCG@10 on the BEIR benchmark (corrected)."
    assert inspection.row(["entity", "fact_helios_rag_beir_ndcg10", 2])["status"] == "active"  # then, not now
    assert inspection.row(["entity", "fact_helios_rag_beir_ndcg10", 3]) is None
    assert inspection.notes == ()
    assert "0.70" not in describe_manifest(inspection)


def test_page_is_self_contained_and_escapes_stored_text(demo_target):
    owner_write(demo_target, lambda store: store.put_memory("kb_document", {
        "id": "doc_hostile", "title": "Hostile <b>title</b>", "valid_from": "2026-09-01T00:00:00Z",
        "content": HOSTILE}))
    window = assemble_window(demo_target, jane(question=QUESTION + " <script>alert('q')</script>"))
    assert any(m["ref"][1] == "doc_hostile" for m in window.manifest["memories"]), "the hostile row must be shown"
    page = render_page(inspect(demo_target, window.manifest_id))
    elements = parsed(page)

    tags = [tag for tag, _ in elements.tags]
    assert tags.count("style") == 1 and tags.count("meta") >= 1
    for forbidden in ("script", "img", "link", "iframe", "object", "embed", "base", "form"):
        assert forbidden not in tags
    for tag, attributes in elements.tags:
        assert "src" not in attributes, tag
        assert not any(name.startswith("on") for name in attributes), (tag, attributes)
        assert (attributes.get("href") or "#").startswith("#"), attributes
    assert not re.search(r"(?i)\b(src|href)\s*=\s*[\"']?\s*(https?:)?//", page)
    styles = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert len(styles) == 1 and "@import" not in styles[0] and "url(" not in styles[0]
    assert not any("url(" in (attributes.get("style") or "") for _, attributes in elements.tags)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page

    assert "&lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;" in page
    assert "&lt;script&gt;alert(&#x27;q&#x27;)&lt;/script&gt;" in page  # the question
    assert "&lt;/pre&gt;&lt;/article&gt;" in page
    assert "\x1b" not in describe_manifest(inspect(demo_target, window.manifest_id))
    hostile_row = next(m for m in window.manifest["memories"] if m["ref"][1] == "doc_hostile")
    row_section = elements.of(f"row-{hostile_row['id']}")
    assert "<script>alert('owned')</script>" in row_section  # shown as text, as stored


def test_page_sections_for_jane(demo_target):
    window = assemble_window(demo_target)
    elements = parsed(render_page(inspect(demo_target, window.manifest_id)))
    manifest = window.manifest
    assert elements.of("request-hash") == manifest["request_hash"]
    assert elements.of("scn") == manifest["scn"]
    assert "superseded" in elements.of("excluded-lifecycle")
    assert f"{FACT} / version 1" in elements.of("excluded-lifecycle")
    assert f"{FACT} / version 2" not in elements.of("excluded-lifecycle")
    fact = next(m for m in manifest["memories"] if m["ref"] == ["entity", "fact_helios_rag_beir_ndcg10", 2])
    card = elements.of(f"mem-{fact['id']}")
    assert "current" in card and "tier full" in card and f"{fact['tokens']} tokens" in card
    assert f"priority {fact['scores']['priority']}" in card
    july = next(m for m in manifest["memories"] if m["ref"][1] == "context_july_summary")
    card = elements.of(f"mem-{july['id']}")
    assert "historical" in card
    assert f"cites {FACT} / version 1, which is no longer in effect. Current fact: {FACT} / version 2" in card
    row = elements.of(f"row-{fact['id']}")
    assert '["entity", "fact_helios_rag_beir_ndcg10", 2]' in row
    assert "current fact named by the annotation of summary / context_july_summary / version 1" in row
    links = {attrs["href"] for tag, attrs in elements.tags if tag == "a"}
    assert f"#row-{fact['id']}" in links and f"#mem-{fact['id']}" in links
    ids = {attrs["id"] for _, attrs in elements.tags if attrs.get("id")}
    assert {href[1:] for href in links} <= ids
    slices = [attrs["id"] for tag, attrs in elements.tags if tag == "section" and
              (attrs.get("id") or "").startswith("slice-")]
    assert slices == ["slice-guidelines", "slice-persona", "slice-memory_instructions", "slice-tools",
                      "slice-volatile_tail", "slice-durable_facts", "slice-evidence", "slice-recalled_history",
                      "slice-question"]


def test_another_tenant_cannot_inspect_acme(demo_target):
    window = assemble_window(demo_target)
    with pytest.raises(ManifestNotFound, match=f"no manifest '{window.manifest_id}' for tenant 'initech'"):
        inspect(demo_target, window.manifest_id, tenant="initech")
    assert inspect(demo_target, window.manifest_id).manifest["request_hash"] == window.manifest["request_hash"]
    result = cli(window.manifest_id, "--tenant", "initech")
    assert result.returncode == 1 and result.stdout == ""
    assert "manifest_not_found" in result.stderr and window.manifest_id in result.stderr
    assert "'initech'" in result.stderr
    assert "Helios" not in result.stderr


def test_diff_between_two_questions(demo_target):
    first = assemble_window(demo_target)
    second = assemble_window(demo_target, jane(question="What does the Letta paper say about memory eviction?"))
    diff = diff_of(inspect(demo_target, first.manifest_id), inspect(demo_target, second.manifest_id))
    assert not diff.request_hash_equal
    assert {c.what for c in diff.asked} >= {"question", "scn"}
    assert any(c.what == "fixed.question" for c in diff.allocation)
    text = describe_diff(diff)
    assert "request hash: differs" in text and "question: Good. For the retrieval side" in text

    result = cli(first.manifest_id, "--tenant", "acme", "--diff", second.manifest_id)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"== diff: {first.manifest_id} -> {second.manifest_id} ==")
    assert "-> What does the Letta paper say about memory eviction?" in result.stdout

    same = cli(first.manifest_id, "--tenant", "acme", "--diff", first.manifest_id)
    assert same.returncode == 0 and "request hash: equal" in same.stdout and "allocation changes (0)" in same.stdout


def test_diff_after_a_correction(demo_target):
    before = assemble_window(demo_target)
    owner_write(demo_target, lambda store: store.supersede("entity", "fact_helios_rag_beir_ndcg10", {
        "content": "Helios-RAG achieves 0.70 nDCG@10 on BEIR (second correction).", "confidence": 0.7,
        "valid_from": "2026-09-20T00:00:00Z"}))
    after = assemble_window(demo_target)
    diff = diff_of(inspect(demo_target, before.manifest_id), inspect(demo_target, after.manifest_id))
    assert [m["ref"] for m in diff.added] == [["entity", "fact_helios_rag_beir_ndcg10", 3]]
    assert [m["ref"] for m in diff.removed] == [["entity", "fact_helios_rag_beir_ndcg10", 2]]
    assert [(v.row_id, v.old_versions, v.new_versions) for v in diff.versions] == [
        ("fact_helios_rag_beir_ndcg10", (2,), (3,))]
    assert [(e["rule"], e["ref"]) for e in diff.excluded_added] == [
        ("lifecycle", ["entity", "fact_helios_rag_beir_ndcg10", 2])]
    assert {c.what for c in diff.asked} >= {"scn", "required_refs"}

    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"ctxasm-diff-{after.manifest_id}.html")
    result = cli(before.manifest_id, "--tenant", "acme", "--diff", after.manifest_id, "--html", out)
    assert result.returncode == 0, result.stderr
    elements = parsed(open(out, encoding="utf-8").read())
    diff_text = elements.of("diff")
    assert f"+ {FACT} / version 3" in diff_text and f"− {FACT} / version 2" in diff_text
    assert f"+ lifecycle: {FACT} / version 2" in diff_text and "Request hash: differs" in diff_text
    assert elements.of("diff-sentences").startswith(
        "durable_facts gained version 3 of fact_helios_rag_beir_ndcg10, replacing version 2; lost version 2 of "
        "fact_helios_rag_beir_ndcg10 to lifecycle (superseded).")
    os.unlink(out)


@pytest.mark.slow  # a ctxasm process (--open)
def test_cli_text_html_and_open(demo_target, tmp_path):
    window = assemble_window(demo_target)
    text = cli(window.manifest_id, "--tenant", "acme")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"== manifest {window.manifest_id} (tenant acme) ==")

    page = tmp_path / "sub" / "jane.html"
    written = cli(window.manifest_id, "--tenant", "acme", "--html", str(page))
    assert written.returncode == 0, written.stderr
    assert written.stdout.strip() == f"wrote {page}"
    assert window.manifest["request_hash"] in page.read_text(encoding="utf-8")

    env = dict(os.environ, CTXASM_PG_DATABASE=TEST_DATABASE, BROWSER="echo OPENED %s")
    opened = subprocess.run([sys.executable, "-m", "ctxasm.cli", "inspect", window.manifest_id, "--tenant", "acme",
                             "--html", str(page), "--open"], env=env, capture_output=True, text=True)
    assert opened.returncode == 0, opened.stderr
    assert f"OPENED {page.resolve().as_uri()}" in opened.stdout
    assert "opened in the default browser" in opened.stderr


def test_cli_unknown_manifest_and_bad_output(demo_target, tmp_path):
    missing = cli("manifest_does_not_exist", "--tenant", "acme")
    assert missing.returncode == 1 and missing.stdout == ""
    assert "manifest_not_found: no manifest 'manifest_does_not_exist' for tenant 'acme'" in missing.stderr
    unknown_tenant = cli("manifest_does_not_exist", "--tenant", "nobody")
    # the CLI minted the claim itself: the refusal names the tenant and what to do
    assert unknown_tenant.returncode == 1 and "invalid_claim:" in unknown_tenant.stderr
    assert "'nobody': no such tenant is registered" in unknown_tenant.stderr
    window = assemble_window(demo_target)
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    bad = cli(window.manifest_id, "--tenant", "acme", "--html", str(blocked / "page.html"))
    assert bad.returncode == 2 and "cannot write" in bad.stderr and "Traceback" not in bad.stderr
