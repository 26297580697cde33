"""Text for the benchmark tenants and questions: a seeded word-bigram (Markov) model of the research corpus.

Trained on every sentence of the research corpus and the demo scenario (`db/tests/corpus/research_corpus.json`,
`db/tests/scenarios/acme_demo.json`), it writes new sentences word by word, each next word drawn from the
words that follow the current one in the corpus, as often as they follow it there. The texts therefore keep
the corpus's word frequencies (a few function words everywhere, a long tail of rare terms), so lexical
retrieval sees realistic match counts: a question's common words match many rows, its rare ones few. Lengths
follow the corpus's shapes: chunks of about 60 to 200 words, conversation turns of 10 to 60, a fact one
sentence, a question 6 to 16 words. Everything is drawn from a `random.Random` the caller seeds, so a tenant
is the same on every run.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "db" / "tests" / "scenarios" / "acme_demo.json"
CORPUS = REPO / "db" / "tests" / "corpus" / "research_corpus.json"

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
#: the words of a text as the synthetic embedding and the naive baseline see them
WORD = re.compile(r"[^\W_]+")
_END = -1

#: words per text (low, median, high): lengths are log-normal around the median, clipped to [low, high]
LENGTHS = {
    "kb_chunk": (60, 95, 200),
    "kb_document": (40, 80, 160),
    "conversation": (10, 22, 60),
    "summary": (40, 70, 120),
    "workflow": (20, 35, 60),
    "question": (6, 10, 16),
    "title": (3, 6, 10),
}
#: a fact is one sentence of FACT_MIN_WORDS to FACT_WORDS words (shorter ones would repeat verbatim)
FACT_MIN_WORDS = 8
FACT_WORDS = 40
#: how a question starts; the rest is a generated clause
_QUESTION_STEMS = ("What do we know about", "Is it true that", "Which sources say", "Why does", "How does",
                   "Summarise what we have on", "Remind me whether", "What changed about")
#: words a question does not end on
_DANGLING = frozenset("a an and are as at by for from in is of on or that the to was were which with".split())


def words(text: str) -> list[str]:
    """Lower-cased words of a text (punctuation dropped), for embeddings and word overlap."""
    return WORD.findall(text.lower())


def training_sentences() -> list[str]:
    """Every sentence of the corpus and the demo (content and titles of every memory of every tenant)."""
    sentences: list[str] = []
    for path in (CORPUS, DEMO):
        document = json.loads(path.read_text())
        for tenant in document["tenants"]:
            for memory in tenant["memories"]:
                for text in (memory.get("content"), memory.get("title")):
                    if isinstance(text, str) and text.strip():
                        sentences.extend(s for s in _SENTENCE_END.split(text.strip()) if s)
    return sentences


class TextModel:
    """The bigram model. Tokens keep their case and punctuation ("0.92", "(corrected).", "nDCG@10"), so the
    generated text reads like the corpus; `words()` is what retrieval-like consumers see of it."""

    def __init__(self, sentences: list[str]):
        index: dict[str, int] = {}
        tokens: list[str] = []
        followers: dict[int, list[int]] = {}
        starts: list[int] = []
        document_frequency: Counter[str] = Counter()

        def token_id(token: str) -> int:
            if token not in index:
                index[token] = len(tokens)
                tokens.append(token)
            return index[token]

        for sentence in sentences:
            ids = [token_id(t) for t in sentence.split()]
            if not ids:
                continue
            starts.append(ids[0])
            for current, following in zip(ids, ids[1:] + [_END]):
                followers.setdefault(current, []).append(following)
            document_frequency.update(set(words(sentence)))
        self.tokens = tokens
        self.starts = tuple(starts)
        self.followers = [tuple(followers.get(i, (_END,))) for i in range(len(tokens))]
        self.sentences = len(sentences)
        self._lower_tokens = frozenset(t for t in tokens if t.islower())
        #: each word's weight in a text embedding: rare words say more about a text than common ones
        self.weights = {w: math.log(1 + self.sentences / df) for w, df in sorted(document_frequency.items())}

    @property
    def vocabulary(self) -> list[str]:
        return list(self.weights)

    def sentence(self, rng: random.Random, max_words: int = FACT_WORDS) -> list[str]:
        """One sentence, as tokens; cut at `max_words` (then ended with a full stop)."""
        current = rng.choice(self.starts)
        out = [self.tokens[current]]
        while len(out) < max_words:
            current = rng.choice(self.followers[current])
            if current == _END:
                return out
            out.append(self.tokens[current])
        return _ended(out)

    @staticmethod
    def length(rng: random.Random, kind: str) -> int:
        low, median, high = LENGTHS[kind]
        return max(low, min(high, int(round(rng.lognormvariate(math.log(median), 0.4)))))

    def text(self, rng: random.Random, kind: str) -> str:
        """A text of `kind` (a key of LENGTHS): sentences until the drawn length, the last one cut there."""
        target = self.length(rng, kind)
        out: list[str] = []
        while len(out) < target:
            out.extend(_ended(self.sentence(rng, max_words=target - len(out))))
        return " ".join(_ended(out) if kind != "title" else _unended(out))

    def fact(self, rng: random.Random) -> str:
        """One sentence: what an entity fact holds."""
        sentence = self.sentence(rng, FACT_WORDS)
        for _ in range(20):
            if len(sentence) >= FACT_MIN_WORDS:
                break
            sentence = self.sentence(rng, FACT_WORDS)
        return " ".join(_ended(sentence))

    def question(self, rng: random.Random) -> str:
        """A question: a stem and a generated clause, 6 to 16 words of the corpus's vocabulary."""
        clause = self.sentence(rng, max_words=self.length(rng, "question"))
        while len(clause) > 3 and clause[-1].lower().rstrip(".,;:!?") in _DANGLING:
            clause.pop()
        clause = _unended(clause)
        if clause[0].lower() in self._lower_tokens:  # a sentence start, not a name
            clause[0] = clause[0].lower()
        return f"{rng.choice(_QUESTION_STEMS)} {' '.join(clause)}?"


def _ended(tokens: list[str]) -> list[str]:
    if tokens and not tokens[-1].endswith((".", "!", "?")):
        return tokens[:-1] + [tokens[-1].rstrip(",;:") + "."]
    return tokens


def _unended(tokens: list[str]) -> list[str]:
    last = tokens[-1].rstrip(".,;:!?") if tokens else ""
    return tokens[:-1] + [last] if last else tokens[:-1]


@lru_cache(maxsize=1)
def corpus_model() -> TextModel:
    """The model of the research corpus and the demo (built once per process)."""
    return TextModel(training_sentences())


def questions(count: int, seed: int = 8) -> list[str]:
    """`count` different benchmark questions (seeded)."""
    rng = random.Random(f"questions:{seed}")
    model = corpus_model()
    seen: list[str] = []
    while len(seen) < count:
        question = model.question(rng)
        if question not in seen:
            seen.append(question)
    return seen
