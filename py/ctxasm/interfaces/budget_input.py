"""`ctxasm budget set`'s input: a budget from a file (or standard input), else from the one in effect, with
`--field NAME=JSON` changes applied. Usage errors are ConfigError (exit 2) naming the file or the field."""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ctxasm.errors import ConfigError


def read_budget(path: str) -> dict[str, Any]:
    """The budget object of a file ('-': standard input)."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"config_error: cannot read the budget file {path}: {exc.strerror}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"config_error: {path}: line {exc.lineno} column {exc.colno}: not valid JSON: "
                          f"{exc.msg}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"config_error: {path}: a budget is a JSON object, got {type(value).__name__}")
    return value


def apply_field(budget: dict[str, Any], change: str) -> None:
    """`NAME=JSON` (a dotted NAME reaches into objects: shares.fact_check.evidence=0.3); a value that is not JSON
    is taken as a string."""
    name, equals, text = change.partition("=")
    if not equals or not name.strip():
        raise ConfigError(f"config_error: --field {change!r} must read NAME=VALUE, e.g. usable_context=2000")
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = text
    keys = name.strip().split(".")
    target = budget
    for key in keys[:-1]:
        nested = target.setdefault(key, {})
        if not isinstance(nested, dict):
            raise ConfigError(f"config_error: --field {name}: {key} is not an object")
        target = nested
    target[keys[-1]] = value


def budget_from_arguments(path: str | None, changes: Sequence[str],
                          in_effect: Mapping[str, Any] | None) -> dict[str, Any]:
    """The budget to write: the file's, else the one in effect now, else the default a new tenant gets; then each
    --field change in order."""
    from ctxasm.api.admin import DEFAULT_BUDGET

    if path is not None:
        budget = read_budget(path)
    else:
        budget = copy.deepcopy(dict(in_effect) if in_effect else DEFAULT_BUDGET)
    for change in changes:
        apply_field(budget, change)
    return budget
