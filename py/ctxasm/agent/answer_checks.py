"""Checks of a model's answer, each its own function: the corrected value, citations, and their provenance.

A citation is a memory id in square brackets ([M17], or a tool result's [M012345678901]). It is traceable
when one of the run's manifests issued it (a rendered memory, or an item of a tool result) and its source
row can still be read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxasm.core.manifest import issued
from ctxasm.core.refs import Ref
from ctxasm.engines.store import MemoryStore

#: A window's id (M1, M17) or a row version's stable id (M + 12 digits, as tool results name rows).
CITATION = re.compile(r"\[(M[0-9]{1,12})\]")


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    detail: str

    def as_json(self) -> dict[str, Any]:
        return {"check": self.name, "passed": self.passed, "detail": self.detail}


def citations(answer: str) -> list[str]:
    """The memory ids an answer cites, in order, without repeats."""
    return list(dict.fromkeys(CITATION.findall(answer or "")))


def corrected_value_present(answer: str, value: str, stale: Iterable[str] = ()) -> CheckResult:
    """The current value is stated; a stale value, if it appears, is not the only value stated."""
    text = answer or ""
    has_value = value in text
    stale_only = [old for old in stale if old in text and not has_value]
    passed = has_value and not stale_only
    detail = f"{value!r} {'is' if has_value else 'is not'} in the answer"
    if stale_only:
        detail += f"; it states only the stale {', '.join(map(repr, stale_only))}"
    return CheckResult("corrected_value_present", passed, detail)


def citations_present(answer: str) -> CheckResult:
    cited = citations(answer)
    return CheckResult("citations_present", bool(cited), f"cites {', '.join(cited)}" if cited else "cites no memory id")


def issued_ids(manifests: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Every id the run's manifests issued -> the row reference behind it."""
    return {memory_id: list(ref) for manifest in manifests for memory_id, ref in issued(manifest)}


def citations_traceable(answer: str, manifests: Sequence[Mapping[str, Any]], store: MemoryStore,
                        tenant_id: str) -> CheckResult:
    """Each cited id was issued by a manifest of this run and its row exists for the tenant."""
    cited = citations(answer)
    if not cited:
        return CheckResult("citations_traceable", False, "nothing to trace: no citation")
    issued = issued_ids(manifests)
    unknown = [mid for mid in cited if mid not in issued]
    refs = [issued[mid] for mid in cited if mid in issued]
    snapshot = store.capture_snapshot()
    states = store.row_states(tenant_id, refs, snapshot) if refs else {}
    store.rollback()
    missing = [mid for mid in cited if mid in issued and Ref.of(issued[mid]).key not in states]
    problems = ([f"{mid} was not issued by the run's manifests" for mid in unknown]
                + [f"{mid} ({Ref.of(issued[mid]).key}) has no stored row" for mid in missing])
    if problems:
        return CheckResult("citations_traceable", False, "; ".join(problems))
    return CheckResult("citations_traceable", True,
                       "; ".join(f"{mid} -> {Ref.of(issued[mid]).key}" for mid in cited))



def cited_as_expected(answer: str, expected: Sequence[str]) -> CheckResult:
    cited = citations(answer)
    return CheckResult("citations_expected", cited == list(expected),
                       f"cites {', '.join(cited) or 'nothing'}; expected {', '.join(expected) or 'nothing'}")


def transcript_checks(checks: Mapping[str, Any], answer: str | None, manifests: Sequence[Mapping[str, Any]],
                      store: MemoryStore, tenant_id: str) -> list[CheckResult]:
    """The checks a recorded transcript names ("value", "stale", "cites"), run on the answer of a run."""
    text = answer or ""
    results = []
    if "value" in checks:
        results.append(corrected_value_present(text, checks["value"], checks.get("stale", ())))
    results.append(citations_present(text))
    if "cites" in checks:
        results.append(cited_as_expected(text, checks["cites"]))
    results.append(citations_traceable(text, manifests, store, tenant_id))
    return results
