"""Okapi BM25 over a small in-memory corpus: the lexical baseline of the conversation evaluation.

score(q, d) = sum over query terms t of idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
with idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5)) (the non-negative form), k1 = 1.2, b = 0.75.
Tokens: lower-cased runs of letters and digits (an apostrophe splits a word: "Maya's" -> "maya", "s"), English
stop words removed, including the pieces contractions and possessives leave ("s", "t", "ll", ...). A query term
counts once per distinct term (repeats in the question add nothing).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

K1 = 1.2
B = 0.75

_WORD = re.compile(r"[a-z0-9]+")

#: A common English stop-word list: function words, pronouns, auxiliaries, question words, and the pieces an
#: apostrophe leaves behind.
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can cannot could did do does doing down during each few for from further had has have having he her here
hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off
on once only or other ought our ours ourselves out over own same she should so some such than that the their
theirs them themselves then there these they this those through to too under until up very was we were what
when where which while who whom why will with would you your yours yourself yourselves
s t d ll m o re ve y don didn doesn isn aren wasn weren hasn haven hadn wouldn couldn shouldn mustn
""".split())


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without stop words."""
    return [word for word in _WORD.findall(text.lower()) if word not in STOP_WORDS]


class BM25:
    """An index over `documents` (texts); `scores(query)` gives one score per document, in order."""

    def __init__(self, documents: Sequence[str], k1: float = K1, b: float = B):
        self.k1, self.b = k1, b
        self.terms = [Counter(tokenize(text)) for text in documents]
        self.lengths = [sum(counts.values()) for counts in self.terms]
        self.count = len(documents)
        self.average_length = (sum(self.lengths) / self.count) if self.count else 0.0
        frequency: Counter[str] = Counter()
        for counts in self.terms:
            frequency.update(counts.keys())
        self.idf = {term: math.log(1 + (self.count - df + 0.5) / (df + 0.5)) for term, df in frequency.items()}

    def scores(self, query: str) -> list[float]:
        terms = set(tokenize(query))
        result = []
        for counts, length in zip(self.terms, self.lengths):
            norm = self.k1 * (1 - self.b + self.b * length / self.average_length) if self.average_length else self.k1
            score = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    score += self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
            result.append(score)
        return result
