"""The offline extractive summarizer: the summary tier when no model is configured. Pure.

No model runs here: a summary is the leading sentences of the text that fit in `max_words`. It is recorded in
context_compression as generating_model `extractive-lead-1` with prompt_version `extractive-1`, so nobody
mistakes it for a model-written summary. ctxasm.ml.summarizer offers it, and a model-written summarizer, behind
one interface.

`source_hash` is the hash the database compares to decide whether a compression is stale:
`encode(sha256(convert_to(content, 'UTF8')), 'hex')` on PostgreSQL, the same bytes on Oracle.
"""

from __future__ import annotations

import hashlib
import re

GENERATING_MODEL = "extractive-lead-1"
PROMPT_VERSION = "extractive-1"
ELLIPSIS = "..."

# A sentence ends at . ! or ? (optionally followed by closing quotes or brackets) before white space, or at a
# blank line (headings and list items rarely end in a full stop). Abbreviations such as "e.g." do split
# early; for a lead summary that only costs a shorter summary, never a wrong one.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n\s*\n")
# Punctuation that reads badly right before the ellipsis of a cut sentence.
_TRAILING_PUNCT = ",;:-–—"


def source_hash(text: str) -> str:
    """Lower-case hex sha256 of the UTF-8 bytes of `text` (what the database compares)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sentences(text: str) -> list[str]:
    """The sentences of `text`, white space inside each collapsed to single spaces, empty ones dropped."""
    parts = (" ".join(part.split()) for part in _SENTENCE_END.split(text))
    return [part for part in parts if part]


def summarize(text: str, *, max_words: int = 40) -> str:
    """The leading sentences of `text` that fit in `max_words` words.

    If even the first sentence is longer, it is cut at a word boundary and ends in '...'. The result is never
    longer (in characters) than `text` and depends on nothing but its arguments.
    """
    if max_words < 1:
        raise ValueError(f"max_words must be at least 1, got {max_words}")
    picked: list[str] = []
    used = 0
    for sentence in sentences(text):
        words = len(sentence.split())
        if used + words > max_words:
            break
        picked.append(sentence)
        used += words
    if picked:
        return " ".join(picked)
    first = sentences(text)
    if not first:
        return ""
    return _cut(first[0], max_words, limit=len(text))


def _cut(sentence: str, max_words: int, *, limit: int) -> str:
    """The first `max_words` words of `sentence` plus '...', dropping words until it is at most `limit` long."""
    words = sentence.split()[:max_words]
    while words:
        head = " ".join(words).rstrip(_TRAILING_PUNCT).rstrip()
        if head and len(head) + len(ELLIPSIS) <= limit:
            return head + ELLIPSIS
        words.pop()
    # Only a text of a few characters gets here ("a b" with max_words=1): no room for the ellipsis, so the
    # words alone, which are never longer than the text.
    return " ".join(sentence.split()[:max_words])
