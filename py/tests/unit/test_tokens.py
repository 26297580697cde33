"""tokens: o200k_base offline, counts identical to tiktoken's own construction."""

from __future__ import annotations

import gzip
import hashlib
import threading
import time
from pathlib import Path

import pytest
import tiktoken
import tiktoken.load

from ctxasm import errors
from ctxasm.core import tokens

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"

SAMPLES = [
    "",
    "hello world",
    "Helios-RAG achieves 0.92 nDCG@10 on the BEIR benchmark.",
    "  leading and trailing spaces  \n\n\ttabs\r\n",
    "1234567890 3.14159 -42",
    "日本語のテキストと emoji 🎉🚀 and ünïcödé",
    "def f(x):\n    return {'a': [1, 2, 3]}  # comment\n",
    "<|endoftext|> and <|endofprompt|> inside ordinary text",
    "Don't they're we've I'm you'll he'd IT'S",
    "x" * 5000,
]


def _plain_ranks() -> bytes:
    return gzip.decompress(tokens.default_ranks_path().read_bytes())


@pytest.fixture(scope="module")
def reference() -> tiktoken.Encoding:
    """tiktoken's own get_encoding, fed from a private cache dir, with the network made unreachable."""
    import tempfile

    with tempfile.TemporaryDirectory() as cache, pytest.MonkeyPatch.context() as patch:
        cache_key = hashlib.sha1(O200K_URL.encode()).hexdigest()
        (Path(cache) / cache_key).write_bytes(_plain_ranks())
        patch.setenv("TIKTOKEN_CACHE_DIR", cache)

        def no_network(path: str) -> bytes:
            raise AssertionError(f"network access attempted: {path}")

        patch.setattr(tiktoken.load, "read_file", no_network)
        built = tiktoken.get_encoding("o200k_base")
    return built


@pytest.mark.parametrize("text", SAMPLES)
def test_counts_match_tiktoken_reference(reference: tiktoken.Encoding, text: str) -> None:
    assert tokens.encoding().encode_ordinary(text) == reference.encode_ordinary(text)
    assert tokens.count_tokens(text) == len(reference.encode_ordinary(text))


def test_special_tokens_match_reference(reference: tiktoken.Encoding) -> None:
    ours = tokens.encoding()
    assert ours.name == tokens.ENCODING_NAME == reference.name
    assert ours._special_tokens == reference._special_tokens
    assert ours.n_vocab == reference.n_vocab
    text = "a<|endoftext|>b<|endofprompt|>"
    assert ours.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all")


def test_ranks_equal_load_tiktoken_bpe_with_expected_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "o200k_base.tiktoken"
    plain.write_bytes(_plain_ranks())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken: "" disables its cache copy
    expected = tiktoken.load.load_tiktoken_bpe(str(plain), expected_hash=tokens.O200K_SHA256)
    assert tokens.read_ranks(tokens.default_ranks_path()) == expected
    assert len(expected) == 199_998


def test_known_facts() -> None:
    # Published o200k_base ids for "hello world".
    assert tokens.encoding().encode_ordinary("hello world") == [24912, 2375]
    assert tokens.count_tokens("hello world") == 2
    # Digits are split in groups of at most three by the pattern.
    assert tokens.count_tokens("1234567") == 3
    assert tokens.encoding().encode("<|endoftext|>", allowed_special="all") == [199999]


def test_special_token_text_is_counted_as_ordinary_text() -> None:
    # encode() would raise on disallowed special text; the counter must not, and must not count it as 1.
    assert tokens.count_tokens("<|endoftext|>") > 1


def test_encoding_is_cached() -> None:
    assert tokens.encoding() is tokens.encoding()


def test_lazy_encoding_is_built_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[object] = []
    sentinel = object()

    def slow_build() -> object:
        time.sleep(0.05)  # widen the race window
        built.append(sentinel)
        return sentinel

    monkeypatch.setattr(tokens, "_cached", None)
    monkeypatch.setattr(tokens, "load_encoding", slow_build)
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(tokens.encoding())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert built == [sentinel]
    assert results == [sentinel] * 8


def test_loads_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_io(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("tiktoken's file or network loader was used")

    monkeypatch.setattr(tiktoken.load, "read_file", no_io)
    monkeypatch.setattr(tiktoken.load, "read_file_cached", no_io)
    assert tokens.load_encoding().encode_ordinary("hello world") == [24912, 2375]


def test_corrupted_copy_is_rejected_naming_the_file(tmp_path: Path) -> None:
    data = bytearray(_plain_ranks())
    data[100] ^= 0x01  # one flipped bit
    corrupted = tmp_path / "o200k_base.tiktoken.gz"
    corrupted.write_bytes(gzip.compress(bytes(data)))
    with pytest.raises(tokens.TokenizerDataInvalid) as caught:
        tokens.load_encoding(corrupted)
    assert isinstance(caught.value, errors.CtxasmError)
    assert caught.value.code == "tokenizer_data_invalid"
    assert str(corrupted) in str(caught.value)
    assert tokens.O200K_SHA256 in str(caught.value)


def test_plain_uncorrupted_copy_loads(tmp_path: Path) -> None:
    plain = tmp_path / "o200k_base.tiktoken"
    plain.write_bytes(_plain_ranks())
    assert tokens.load_encoding(plain).encode_ordinary("hello world") == [24912, 2375]


@pytest.mark.parametrize("content", [None, b"\x1f\x8bnot really gzip", b""])
def test_missing_or_unreadable_file_is_rejected(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "ranks.gz"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(tokens.TokenizerDataInvalid, match=str(path)):
        tokens.load_encoding(path)


def test_a_changed_tiktoken_hash_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # If tiktoken started expecting another file, we must not silently pair its pattern with our ranks.
    monkeypatch.setattr(tokens, "O200K_SHA256", "0" * 64)
    with pytest.raises(tokens.TokenizerDataInvalid, match="tiktoken now expects"):
        tokens.load_encoding()


#: Characters that test where the pre-tokenizer splits: letters of every case and script, marks, apostrophes and
#: the contraction suffixes, digits, whitespace of every kind, punctuation, JSON escapes and record framing.
_SPLIT_ALPHABET = (list("abcnxyz ABCMNZ0123456789'\"\\<>/&;:.,!?-_#@()[]{}\t\r\n  ")
                   + list("éñüßİıǅʰ中文日本語ا한😀🎉\u0301\u0308\u00a0\u2028\u3000٣")
                   + ["'s", "'ll", "'T", "\\n", "\\\\n", "n'", "</memory>\\n", '<memory id=\\"M1\\">'])


def _random_texts(count: int, seed: int) -> list[str]:
    import random

    rng = random.Random(seed)
    return ["".join(rng.choice(_SPLIT_ALPHABET) for _ in range(rng.randint(1, 40))) for _ in range(count)]


def test_counts_add_up_where_the_pretokenizer_always_splits() -> None:
    """Cut a text at any of the spots splits_after names and the pieces' counts add up to the whole's."""
    import random

    rng = random.Random(5)
    cuts = 0
    for text in _random_texts(20_000, seed=3):
        spots = [i for i in range(1, len(text)) if tokens.splits_after(text[i - 1], text[i])]
        if not spots:
            continue
        chosen = sorted(rng.sample(spots, rng.randint(1, len(spots))))
        pieces = [text[a:b] for a, b in zip([0, *chosen], [*chosen, len(text)])]
        assert sum(map(tokens.count_tokens, pieces)) == tokens.count_tokens(text), (text, chosen)
        cuts += len(chosen)
    assert cuts > 10_000


def test_counts_do_not_add_up_at_other_spots() -> None:
    """The check above has teeth: after a lower-case letter followed by anything else, some cuts miscount."""
    wrong = 0
    for text in _random_texts(2_000, seed=4):
        for i in range(1, len(text)):
            if "a" <= text[i - 1] <= "z" and not tokens.splits_after(text[i - 1], text[i]):
                wrong += tokens.count_tokens(text[:i]) + tokens.count_tokens(text[i:]) != tokens.count_tokens(text)
    assert wrong > 100


def test_count_split_is_count_tokens_and_remembers_pieces() -> None:
    known: dict[str, int] = {}
    for text in _random_texts(3_000, seed=6) + SAMPLES + ['{"content":"<a>x</a>\\n<b>y</b>\\n\\nWhy?"}']:
        assert tokens.count_split(text, known) == tokens.count_tokens(text), text
    line = "<memory id=\\\"M1\\\">text</memory>\\n"
    request = f'{{"content":"<memory_context>\\n{line}{line}</memory_context>"}}'
    known = {}
    assert tokens.count_split(request, known) == tokens.count_tokens(request)
    assert known[line] == tokens.count_tokens(line)
    known[line] = 1000  # a remembered piece is not encoded again
    assert tokens.count_split(request, known) == tokens.count_tokens(request) - 2 * tokens.count_tokens(line) + 2000


def test_joined_count_is_exact_given_the_texts_own_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever wraps a text and whatever the text holds, the joined count is the count of the whole."""
    import random

    monkeypatch.setattr(tokens, "JOIN_MIN_CHARS", 0)
    rng = random.Random(7)
    wrappers = ['<memory id=\\"M12\\" type=\\"entity\\" status=\\"current\\">', "M7 user: ", "", "x", "'", " ", "\\n",
                "</memory>\\n", "&amp;", "日本"]
    for text in _random_texts(5_000, seed=8):
        prefix, suffix = rng.choice(wrappers), rng.choice(wrappers)
        joined = tokens.count_joined(prefix, text, suffix, tokens.count_tokens(text))
        assert joined == tokens.count_tokens(prefix + text + suffix), (prefix, text, suffix)
