"""The README is the entry point a new user reads first: what ctxasm is, the two commands, the recipe for one's
own tenant and a map of the documents by reader, short enough to read; docs/index.md lists every document."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
#: The README stays an entry point: the benchmark method and the reference live in docs/.
README_MAX_LINES = 120
READERS = ("Agent developer", "DBA / Oracle", "Operator / security", "Contributor")


def test_docs_index_lists_every_document() -> None:
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w.-]+\.md)\)", index))
    documents = {p.name for p in (REPO / "docs").glob("*.md")} - {"index.md"}
    assert documents - linked == set(), "docs/index.md does not list these documents"
    assert linked - documents - {"README.md"} == set(), "docs/index.md links documents that do not exist"


def test_readme_has_the_two_commands_the_recipe_and_the_documents_by_reader() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    headings = re.findall(r"^#{2,3} (.+)$", readme, flags=re.M)
    assert {"The two commands", "Your own tenant in five commands", "Documents, by reader"} <= set(headings)
    by_reader = readme.split("## Documents, by reader", 1)[1]
    for reader in READERS:
        assert f"**{reader}**" in by_reader, reader
    for document in re.findall(r"\]\((docs/[\w.-]+\.md)\)", readme):
        assert (REPO / document).is_file(), document
