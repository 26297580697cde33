"""Read a conversation file in either public format into the same samples: LongMemEval's (longmemeval.py) when
its first item is an instance with a haystack, else LoCoMo's (locomo.py)."""

from __future__ import annotations

import json
from pathlib import Path

from ctxasm_dev.evaluation import longmemeval
from ctxasm_dev.evaluation.locomo import ConversationFileError, ReadNotes, Sample, parse_samples


def read_samples(path: str | Path) -> tuple[list[Sample], ReadNotes]:
    """Every sample of the file, and what was tolerated on the way."""
    name = str(path)
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConversationFileError(f"{name}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConversationFileError(f"{name}: not a JSON file ({exc})") from None
    if longmemeval.is_longmemeval(document):
        return longmemeval.parse_instances(document, name)
    return parse_samples(document, name)
