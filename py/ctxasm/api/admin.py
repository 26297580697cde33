"""What the command line needs of the engines and services besides a Session: the engines it may name, the time
arguments it parses, the erasure report and vacuum, the budget a new tenant gets and the thresholds of episode
summaries. The CLI reaches them only through ctxasm.api (tests/unit/test_layers.py).

The engine names are imported at once (the argument parser lists them); the rest loads on first use, so that
`ctxasm --help` and commands that need none of it do not pay for the services' imports.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ctxasm.engines.registry import ENGINES, POSTGRESQL, Engine, open_engine

if TYPE_CHECKING:
    from ctxasm.services.assemble import AssembledWindow, parse_time
    from ctxasm.services.episodes import Thresholds
    from ctxasm.services.erase import describe_erasure, vacuum_tables
    from ctxasm.services.tenants import DEFAULT_BUDGET

__all__ = ["DEFAULT_BUDGET", "ENGINES", "POSTGRESQL", "AssembledWindow", "Engine", "Thresholds", "describe_erasure",
           "open_engine", "parse_time", "vacuum_tables"]

_HOMES = {"AssembledWindow": "ctxasm.services.assemble", "parse_time": "ctxasm.services.assemble",
          "Thresholds": "ctxasm.services.episodes", "describe_erasure": "ctxasm.services.erase",
          "vacuum_tables": "ctxasm.services.erase", "DEFAULT_BUDGET": "ctxasm.services.tenants"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'ctxasm.api.admin' has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
