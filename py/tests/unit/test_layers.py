"""Imports point down the layers: the command line and the inspector (ctxasm/cli.py, ctxasm/interfaces/) reach the
engines and the services only through ctxasm.api, and the pure core imports neither. Read from the source (ast),
every import statement, at module level or inside a function or a TYPE_CHECKING block."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "ctxasm"

#: layer -> the packages it must not import directly
RULES = {
    "interfaces": ("ctxasm.services", "ctxasm.engines"),
    "core": ("ctxasm.services", "ctxasm.engines", "ctxasm.api", "ctxasm.interfaces", "ctxasm.local", "ctxasm.agent"),
}


def imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import in `source`: `import a.b` gives a.b, `from a import b` gives a.b and a
    (b may be a module or a name in a)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def breaches(path: Path, forbidden: tuple[str, ...]) -> list[str]:
    return [f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
            for line, module in imported_modules(path.read_text(encoding="utf-8"))
            if any(module == f or module.startswith(f + ".") for f in forbidden)]


def layer_files(layer: str) -> list[Path]:
    files = sorted((PACKAGE / layer).rglob("*.py"))
    return files + [PACKAGE / "cli.py"] if layer == "interfaces" else files


@pytest.mark.parametrize("layer", sorted(RULES))
def test_a_layer_imports_only_what_is_below_it(layer):
    files = layer_files(layer)
    assert files
    found = [breach for path in files for breach in breaches(path, RULES[layer])]
    assert found == [], "reach these through ctxasm.api (api/admin.py, api/inspection.py):\n" + "\n".join(found)


@pytest.mark.parametrize("source, expected", [
    ("import ctxasm.services.erase", ["ctxasm.services.erase"]),
    ("from ctxasm.services import budgets", ["ctxasm.services", "ctxasm.services.budgets"]),
    ("def f():\n    from ctxasm.engines.registry import open_engine\n",
     ["ctxasm.engines.registry", "ctxasm.engines.registry.open_engine"]),
    ("if TYPE_CHECKING:\n    from ctxasm.services.assemble import AssembledWindow\n",
     ["ctxasm.services.assemble", "ctxasm.services.assemble.AssembledWindow"]),
    ("from ctxasm.api.admin import parse_time", ["ctxasm.api.admin", "ctxasm.api.admin.parse_time"]),
])
def test_every_kind_of_import_is_seen(source, expected):
    assert [module for _, module in imported_modules(source)] == expected
    forbidden = RULES["interfaces"]
    assert any(m.startswith(f) for m in expected for f in forbidden) == ("ctxasm.api" not in expected[0])
