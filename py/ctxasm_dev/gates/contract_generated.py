"""The generated-files gate: every file generated from the contract catalogue (contract/*.toml) is current.

It regenerates in memory (ctxasm_dev.contract.generate) and compares with the files on disk: a catalogue edit
without regeneration, a hand edit of a generated file or region, a changed constant declaration, and a change
of selection or renderer code that kept the old version (contract/selection.toml) all fail, each stale file
named.

    python -m ctxasm_dev.gates.contract_generated [--repo DIR]

Exit code 0 when every generated file is current, 1 otherwise. The fix is always the same: edit the catalogue
(not the generated file), then run python -m ctxasm_dev.contract.generate.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ctxasm_dev.contract.catalogue import CatalogueError
from ctxasm_dev.contract.generate import REPO, generate, stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxasm_dev.gates.contract_generated",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="repository root (default: this checkout)")
    repo = parser.parse_args(argv).repo.resolve()
    try:
        paths = stale(repo)
        total = len(generate(repo))
    except CatalogueError as error:
        print(f"contract_generated: FAIL: {error}")
        return 1
    for path in paths:
        print(f"{path}: stale: not what contract/ generates; edit the catalogue, then run "
              "python -m ctxasm_dev.contract.generate")
    print(f"contract_generated: {'FAIL' if paths else 'OK'}: {total} generated files; {len(paths)} stale")
    return 1 if paths else 0


if __name__ == "__main__":
    sys.exit(main())
