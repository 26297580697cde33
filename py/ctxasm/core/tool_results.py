"""The tool-results slice: what a tool returned, rendered like any other memory and paid from the tool reserve.

Pure. A tool's output is a list of items (rows it read, each with its citation id and provenance) plus
notes; it is rendered as one <tool_result> record whose items are ordinary <memory> records, so retrieved
text stays escaped inside <content> exactly as in the window. A result may take at most
`max_tool_result_tokens`, and all results of a conversation together at most `tool_reserve` (the reserve is
cumulative across rounds, not per round). A result that is too large degrades before it is dropped: its
lowest-ranked items go first, then it is replaced by a one-line notice that says what was left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from ctxasm.core import render
from ctxasm.core.refs import Ref
from ctxasm.core.tokens import count_tokens

TOOL_RESULTS = "tool_results"


@dataclass(frozen=True)
class ToolItem:
    """One row a tool read, as it enters the window."""

    ref: Ref
    type: str
    status: str
    text: str
    tier: str = "full"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ref", Ref.of(self.ref))  # a [type, id, version] from JSON, or a tuple

    @property
    def memory_id(self) -> str:
        return render.memory_id(self.ref)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.memory_id, "ref": self.ref.as_json(), "type": self.type, "status": self.status,
                "tier": self.tier, "text": self.text, **self.extra}


@dataclass(frozen=True)
class ToolOutput:
    """What a Memory Manager tool returns: items in rank order, and notes written by ctxasm (not stored text)."""

    tool: str
    items: tuple[ToolItem, ...] = ()
    notes: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "items": [item.as_json() for item in self.items], "notes": list(self.notes)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolOutput:
        items = tuple(ToolItem(ref=i["ref"], type=i["type"], status=i["status"],
                               text=i["text"], tier=i.get("tier", "full"),
                               extra={k: v for k, v in i.items()
                                      if k not in {"id", "ref", "type", "status", "tier", "text"}})
                      for i in data.get("items", ()))
        return cls(tool=data["tool"], items=items, notes=tuple(data.get("notes", ())))


def render_output(output: ToolOutput) -> str:
    """The <tool_result> record: notes first (ctxasm's words), then each item as a <memory> record."""
    lines = [f"<tool_result tool={quoteattr(output.tool)}>"]
    lines += [f"  <note>{escape(note)}</note>" for note in output.notes]
    lines += [render.render_memory(item.memory_id, item.type, item.status, item.tier, item.text)
              for item in output.items]
    lines.append("</tool_result>")
    return "\n".join(lines)


class ToolBudgetExhausted(Exception):
    """Not even the notice that a result was left out fits what is left of the tool reserve."""


@dataclass
class ToolLedger:
    """The tool reserve of one conversation: what each result may take and what all have taken so far."""

    reserve: int
    per_result: int
    used: int = 0

    @property
    def left(self) -> int:
        return self.reserve - self.used

    def allowance(self) -> int:
        return max(0, min(self.per_result, self.left))

    def charge(self, tokens: int) -> None:
        if tokens > self.left:
            raise ToolBudgetExhausted(f"{tokens} tokens exceed the {self.left} left of the tool reserve")
        self.used += tokens


@dataclass(frozen=True)
class FittedResult:
    content: str
    tokens: int
    kept: tuple[ToolItem, ...]
    dropped: tuple[ToolItem, ...]
    #: "full", "truncated" (lowest-ranked items left out) or "notice" (the whole result left out).
    tier: str


def fit_output(output: ToolOutput, allowance: int, count: Callable[[str], int] = count_tokens) -> FittedResult:
    """The largest prefix of the output's items whose rendered record fits `allowance` tokens."""
    items = list(output.items)
    for keep in range(len(items), -1, -1):
        if keep == 0 and items:
            break
        content = render_output(ToolOutput(output.tool, tuple(items[:keep]), output.notes
                                           + left_out(items[keep:])))
        tokens = count(content)
        if tokens <= allowance:
            return FittedResult(content, tokens, tuple(items[:keep]), tuple(items[keep:]),
                                "full" if keep == len(items) else "truncated")
    full_cost = count(render_output(output))
    notice = render_output(ToolOutput(output.tool, (), (
        f"result left out: {full_cost} tokens, {allowance} allowed for this result; "
        "ask a narrower question or expand one memory id",)))
    tokens = count(notice)
    if tokens > allowance:
        raise ToolBudgetExhausted(f"{output.tool}: the tool reserve has {allowance} tokens left, "
                                  f"not enough for the {tokens}-token notice")
    return FittedResult(notice, tokens, (), tuple(items), "notice")


def fit_and_charge(output: ToolOutput, ledger: ToolLedger,
                   count: Callable[[str], int] = count_tokens) -> tuple[FittedResult, bool]:
    """Fit `output` into what the ledger allows and charge it. When not even the notice fits, the result is a
    minimal "tool reserve exhausted" record, the reserve counts as spent, and the flag is True: offer no more
    tools."""
    try:
        fitted = fit_output(output, ledger.allowance(), count)
        ledger.charge(fitted.tokens)
        return fitted, False
    except ToolBudgetExhausted:
        content = render_output(ToolOutput(output.tool, (), ("tool reserve exhausted",)))
        ledger.used = ledger.reserve
        return FittedResult(content, count(content), (), output.items, "notice"), True


def left_out(items: Sequence[ToolItem]) -> tuple[str, ...]:
    if not items:
        return ()
    ids = ", ".join(item.memory_id for item in items)
    return (f"{len(items)} lower-ranked result(s) left out for the token budget: {ids}",)
