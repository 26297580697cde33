"""The catalogue's constants: their values written into the packages' co_<name> declarations, and
py/ctxasm/contract_constants.py."""

from __future__ import annotations

import re

from ctxasm_dev.contract.catalogue import CONSTANTS_FILE, CatalogueError, Constant

HEADER = (f"generated from {CONSTANTS_FILE}; edit the catalogue, then regenerate "
          "(python -m ctxasm_dev.contract.generate)")


def declaration_pattern(declaration: str) -> re.Pattern[str]:
    """`<declaration> constant <type> := <value>;` on a line of its own (PL/SQL and PL/pgSQL alike)."""
    return re.compile(rf"(?im)^(\s*{re.escape(declaration)}\s+constant\s+[^:;\n]*?:=\s*)([^;\n]+?)(\s*;)")


def bind(text: str, path: str, constant: Constant, declaration: str) -> str:
    """`text` with the value of `declaration` set to the constant's; the declaration must occur exactly once."""
    pattern = declaration_pattern(declaration)
    found = pattern.findall(text)
    if len(found) != 1:
        raise CatalogueError(f"{CONSTANTS_FILE}: constant {constant.name}: {path} declares {declaration} "
                             f"{len(found)} times, expected once")
    return pattern.sub(lambda m: f"{m.group(1)}{constant.value!r}{m.group(3)}", text)


def python(constants: tuple[Constant, ...], steps: tuple[str, ...]) -> str:
    lines = [f'"""The numbers both engines and Python agree on: {HEADER}."""', "", "from __future__ import annotations",
             ""]
    for c in constants:
        lines.append(f"#: {c.meaning}")
        lines.append(f"{c.python} = {c.value!r}")
    lines.append("#: the selection steps in the order both engines run them (step_<name> in select_window; "
                 "contract/selection.toml)")
    lines.append(f"SELECTION_STEPS: tuple[str, ...] = ({', '.join(repr(s) for s in steps)})")
    return "\n".join(lines) + "\n"
