"""extractive: the offline extractive summarizer (lead sentences) and the source hash the database compares."""

from __future__ import annotations

import hashlib

import pytest

from ctxasm.core import extractive as s

DOC = ("The Letta paper treats the context window as main memory. Older messages are evicted to recall "
       "storage when the window fills! Archival memory holds documents? A final, much longer sentence that "
       "goes on about paging policies, summaries, and the cost of recalling evicted messages later.")


def test_names_say_extractive():
    assert s.GENERATING_MODEL == "extractive-lead-1"
    assert s.PROMPT_VERSION == "extractive-1"


def test_leading_sentences_that_fit():
    assert s.summarize(DOC, max_words=10) == "The Letta paper treats the context window as main memory."
    assert s.summarize(DOC, max_words=21) == (
        "The Letta paper treats the context window as main memory. Older messages are evicted to recall "
        "storage when the window fills!")
    # 10 + 11 + 4 = 25 words: the third sentence ends in '?'; one word short and it is left out whole.
    assert s.summarize(DOC, max_words=25).endswith("window fills! Archival memory holds documents?")
    assert s.summarize(DOC, max_words=24).endswith("window fills!")


def test_a_text_that_fits_is_kept_whole_with_white_space_collapsed():
    assert s.summarize("  One short line.\n\n  Two.  ", max_words=40) == "One short line. Two."
    assert s.summarize(DOC, max_words=1000) == " ".join(DOC.split())


def test_a_long_first_sentence_is_cut_at_a_word_boundary():
    text = "Retention policies decide when agent memory events expire, which records are evicted, and why."
    out = s.summarize(text, max_words=8)
    assert out == "Retention policies decide when agent memory events expire..."
    assert len(out[:-3].split()) == 8
    # Punctuation before the cut is dropped, not left dangling before the ellipsis.
    assert s.summarize(text, max_words=9) == "Retention policies decide when agent memory events expire, which..."
    assert s.summarize("one two three, four five", max_words=3) == "one two three..."


def test_blank_lines_end_sentences():
    text = "Eviction\n\nThe window evicts old turns first. Then summaries."
    assert s.sentences(text) == ["Eviction", "The window evicts old turns first.", "Then summaries."]
    assert s.summarize(text, max_words=7) == "Eviction The window evicts old turns first."


@pytest.mark.parametrize("text", ["", "   \n\t ", "a b", "ab cd ef", "x" * 50, DOC, "Ünïcödé wörds — ünd mörë. 日本語のテキスト。"])
@pytest.mark.parametrize("max_words", [1, 2, 5, 40])
def test_never_longer_than_the_input_and_deterministic(text, max_words):
    out = s.summarize(text, max_words=max_words)
    assert len(out) <= len(text)
    body = out[:-3] if out.endswith(s.ELLIPSIS) and not text.rstrip().endswith(s.ELLIPSIS) else out
    assert len(body.split()) <= max_words
    assert s.summarize(text, max_words=max_words) == out


def test_bad_max_words():
    with pytest.raises(ValueError, match="max_words"):
        s.summarize(DOC, max_words=0)


def test_source_hash_is_hex_sha256_of_utf8():
    assert s.source_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert s.source_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    text = "Helios-RAG: 0.78 nDCG@10 — ünïcödé 日本"
    assert s.source_hash(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert s.source_hash(text) == s.source_hash(text).lower() and len(s.source_hash(text)) == 64
    assert s.source_hash(text) != s.source_hash(text + " ")
