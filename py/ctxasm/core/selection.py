"""The selection document as typed classes: what `CTX_ASSEMBLY.select_window` returns on both engines
(contract/schemas/selection.schema.json), parsed once where an engine adapter hands it over. Pure.

`Selection.parse` checks the document against the schema (the compiled checker; jsonschema only to name the
fault) and builds frozen dataclasses; a malformed document raises InvalidSelection naming the JSON path. Past
that point nothing reads the document by key: the fitting, the renderer and the manifest read attributes.

Parts the window only records (the retrieval sources, the selection's exclusions, the candidate cuts, the
budget's content, a tool's schema) stay the JSON values the engine gave: they go into the manifest, or back to
select_window on a replay, as they came. The classes are plain dataclasses: a selection holds tens to a few
hundred candidates, and parsing one costs a fraction of a millisecond next to the schema check (docs/
architecture.md, "The typed selection document").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ctxasm.core import schemas
from ctxasm.core.refs import Ref
from ctxasm.errors import InvalidSelection

#: A JSON object handed on as the engine gave it.
JsonObject = Mapping[str, Any]
Built = TypeVar("Built")


def selection_problems(document: Any) -> list[tuple[str, str]]:
    """(JSON path, problem) of every place `document` breaks the selection schema, the most specific first."""
    return schemas.problems(schemas.SELECTION, document)


def _built(cls: type[Built], **fields: Any) -> Built:
    """An instance of the frozen dataclass `cls` from a value for each of its fields, without its __init__: that
    sets one field at a time through object.__setattr__ (what frozen takes), which for a candidate's two dozen
    fields was half the time of parsing a selection document. The instance is as frozen as any other."""
    instance = object.__new__(cls)
    instance.__dict__.update(fields)
    return instance


def _ref(value: Any) -> Ref | None:
    return None if value is None else Ref.of(value)


@dataclass(frozen=True)
class SelectedBudget:
    """The context_budget guideline row in effect, and its content (ctxasm.core.budget parses it)."""

    ref: Ref
    content_json: JsonObject


@dataclass(frozen=True)
class ToolExtra:
    """A tool row's definition (the toolbox columns beyond the content)."""

    usage_notes: str
    tool_schema: JsonObject
    tool_handler: str | None = None
    access_policy: JsonObject | None = None


@dataclass(frozen=True)
class FixedRow:
    """A guideline, persona or tool row in effect (the narrowest scope of its key won)."""

    ref: Ref
    type: str
    slice: str
    content: str
    key: str | None = None
    extra: ToolExtra | None = None

    @classmethod
    def of(cls, data: JsonObject) -> FixedRow:
        extra = data.get("extra")
        return cls(ref=Ref.of(data["ref"]), type=data["type"], slice=data["slice"], content=data["content"],
                   key=data.get("key"), extra=None if extra is None else ToolExtra(**extra))


@dataclass(frozen=True)
class Tiers:
    """The texts a candidate may be seated at, best first: full always; summary and pointer when there are."""

    full: str
    summary: str | None = None
    pointer: str | None = None

    def text(self, tier: str | None) -> str | None:
        """The text of tier `tier` ("full", "summary", "pointer"); None for a tier it lacks or does not know."""
        return {"full": self.full, "summary": self.summary, "pointer": self.pointer}.get(tier or "")


@dataclass(frozen=True)
class Authorship:
    """What wrote a derived text: the model and the prompt's version."""

    model: str
    prompt_version: str

    def as_json(self) -> dict[str, str]:
        return {"model": self.model, "prompt_version": self.prompt_version}


@dataclass(frozen=True)
class Annotation:
    """An earlier fact version the candidate used (source) and the current one with its text (None: withdrawn)."""

    source: Ref
    current: Ref | None = None
    current_content: str | None = None


@dataclass(frozen=True)
class CandidateRow:
    """One row competing for a dynamic slice, in selection order within its slice."""

    ref: Ref
    type: str
    slice: str
    status: str
    selection_rank: int
    scores: JsonObject
    tiers: Tiers
    origin: str | None = None
    required: bool = False
    role: str | None = None
    #: a conversation turn's speaker by name, when the row names one
    speaker: str | None = None
    turn_index: int | None = None
    thread_id: str | None = None
    title: str | None = None
    valid_from: str | None = None
    summary_ref: Ref | None = None
    summary_by: Authorship | None = None
    generated_by: Authorship | None = None
    content_tokens: int | None = None
    summary_tokens: int | None = None
    annotations: tuple[Annotation, ...] = ()
    #: not from the engine: the summary tier is a compression written during this window (ctxasm.core.compression)
    summary_written: bool = False

    @property
    def priority(self) -> float | None:
        """The priority it was ranked by (None when the scores do not carry one)."""
        value = self.scores.get("priority")
        return None if value is None else float(value)

    @classmethod
    def of(cls, data: JsonObject) -> CandidateRow:
        summary_by, generated_by = data.get("summary_by"), data.get("generated_by")
        tiers, notes = data["tiers"], data.get("annotations")
        return _built(
            cls, ref=Ref.of(data["ref"]), type=data["type"], slice=data["slice"], status=data["status"],
            selection_rank=data["selection_rank"], scores=data["scores"],
            tiers=_built(Tiers, full=tiers["full"], summary=tiers.get("summary"), pointer=tiers.get("pointer")),
            origin=data.get("origin"), required=bool(data.get("required")), role=data.get("role"),
            speaker=data.get("speaker"), turn_index=data.get("turn_index"), thread_id=data.get("thread_id"),
            title=data.get("title"), valid_from=data.get("valid_from"), summary_ref=_ref(data.get("summary_ref")),
            summary_by=None if summary_by is None else Authorship(**summary_by),
            generated_by=None if generated_by is None else Authorship(**generated_by),
            content_tokens=data.get("content_tokens"), summary_tokens=data.get("summary_tokens"),
            annotations=tuple([Annotation(Ref.of(note["source"]), _ref(note.get("current")), note.get("current_content"))
                               for note in notes]) if notes else (),
            summary_written=False)


@dataclass(frozen=True)
class Retrieval:
    """How the candidates were found; `items` are the sources as a replay passes them back to select_window."""

    method: str
    depth: int
    items: tuple[JsonObject, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"method": self.method, "depth": self.depth, "items": list(self.items)}


@dataclass(frozen=True)
class Selection:
    """One select_window document (contract/schemas/selection.schema.json)."""

    engine: str
    snapshot: str
    tenant_id: str
    evaluation_time: str
    selection_version: str
    scorer: str
    budget: SelectedBudget
    fixed: tuple[FixedRow, ...]
    candidates: tuple[CandidateRow, ...]
    required_refs: tuple[Ref, ...]
    retrieval: Retrieval
    #: what the selection steps left out (lifecycle, dedup, conflict), recorded in the manifest as given
    excluded: tuple[JsonObject, ...] = ()
    candidate_limits: JsonObject = field(default_factory=dict)
    candidate_cuts: tuple[JsonObject, ...] = ()

    @classmethod
    def parse(cls, document: Any) -> Selection:
        """The typed selection of an engine's document; InvalidSelection names the first bad field's JSON path."""
        problems = selection_problems(document)
        if problems:
            path, problem = problems[0]
            more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
            raise InvalidSelection(f"invalid_selection: {path}: {problem}{more}", field=path, problem=problem)
        budget, retrieval = document["budget"], document["retrieval"]
        return cls(
            engine=document["engine"], snapshot=document["snapshot"], tenant_id=document["tenant_id"],
            evaluation_time=document["evaluation_time"], selection_version=document["selection_version"],
            scorer=document["scorer"],
            budget=SelectedBudget(Ref.of(budget["ref"]), budget["content_json"]),
            fixed=tuple(FixedRow.of(row) for row in document["fixed"]),
            candidates=tuple(CandidateRow.of(row) for row in document["candidates"]),
            required_refs=tuple(Ref.of(ref) for ref in document["required_refs"]),
            retrieval=Retrieval(retrieval["method"], retrieval["depth"], tuple(retrieval["items"])),
            excluded=tuple(document["excluded"]),
            candidate_limits=document.get("candidate_limits") or {},
            candidate_cuts=tuple(document.get("candidate_cuts") or ()))


def refs_json(refs: Sequence[Ref]) -> list[list[Any]]:
    """Row references as the manifest carries them: `[type, id, version]` lists."""
    return [ref.as_json() for ref in refs]
