"""Read a conversation file in either public format into the same samples: LongMemEval's (longmemeval.py) when
its first item is an instance with a haystack, else LoCoMo's (locomo.py)."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

from ctxasm_dev.evaluation import longmemeval
from ctxasm_dev.evaluation.locomo import ConversationFileError, ReadNotes, Sample, parse_samples


def read_samples(path: str | Path, sample_ids: Collection[str] | None = None) -> tuple[list[Sample], ReadNotes]:
    """Every sample of the file (or those `sample_ids` names, in the file's order), and what was tolerated on the
    way. An id that names no sample with turns is an error naming it and the file's samples."""
    name = str(path)
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConversationFileError(f"{name}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConversationFileError(f"{name}: not a JSON file ({exc})") from None
    parse = longmemeval.parse_instances if longmemeval.is_longmemeval(document) else parse_samples
    if sample_ids is None:
        return parse(document, name)
    held = [sample.sample_id for sample in parse(document, name)[0]]
    unknown = [sample_id for sample_id in sample_ids if sample_id not in held]
    if unknown:
        shown = ", ".join(held[:12]) + (f", ... ({len(held)} in all)" if len(held) > 12 else "")
        raise ConversationFileError(f"{name}: --samples: no sample with turns named {', '.join(unknown)} "
                                    f"(the file holds {shown or 'none'})")
    return parse(document, name, set(sample_ids))
