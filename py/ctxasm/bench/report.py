"""Plain-text tables of the benchmark figures (Markdown, so they paste into a note)."""

from __future__ import annotations

from typing import Any

from .generate import size_label
from .runner import PHASES


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def scale_table(results: list[dict[str, Any]]) -> str:
    phases = [p for p in PHASES if any(p in r["phases_ms"] for r in results)]
    head = (["rows", "assembler", "n", "p50 ms", "p95 ms", "p99 ms", "round trips", "candidates"]
            + [f"{p} ms" for p in phases] + ["peak MiB"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [size_label(r["size"]), r["assembler"], str(r["assemblies"]), _ms(r["p50_ms"]), _ms(r["p95_ms"]),
                 _ms(r["p99_ms"]), f"{r['round_trips']:.0f}", f"{r['candidates']:.0f}"]
        cells += [_ms(r["phases_ms"].get(p)) for p in phases]
        cells.append(f"{r['peak_mib']:.1f}" if r.get("peak_mib") is not None else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio_table(results: list[dict[str, Any]]) -> str:
    by = {(r["size"], r["assembler"]): r for r in results}
    sizes = sorted({r["size"] for r in results})
    lines = ["| rows | naive / assembler (p50) | assembler growth | naive growth | candidates growth |",
             "|---|---|---|---|---|"]
    previous = None
    for size in sizes:
        a, n = by.get((size, "assembler")), by.get((size, "naive"))
        ratio = f"{n['p50_ms'] / a['p50_ms']:.1f}x" if a and n else "-"
        growth = ["-", "-", "-"]
        if previous is not None:
            pa, pn = by.get((previous, "assembler")), by.get((previous, "naive"))
            if a and pa:
                growth[0] = f"{a['p50_ms'] / pa['p50_ms']:.2f}x"
                growth[2] = f"{a['candidates'] / max(pa['candidates'], 1):.2f}x"
            if n and pn:
                growth[1] = f"{n['p50_ms'] / pn['p50_ms']:.2f}x"
        lines.append(f"| {size_label(size)} | {ratio} | {growth[0]} | {growth[1]} | {growth[2]} |")
        previous = size
    return "\n".join(lines)


def token_table(gains: dict[int, dict[str, Any]]) -> str:
    lines = ["| rows | windows | candidates | of them >= 512 chars | token counting ms (stored) | (counted) "
             "| compose ms (stored) | (counted) | identical requests |", "|---|---|---|---|---|---|---|---|---|"]
    for size, g in sorted(gains.items()):
        lines.append(f"| {size_label(size)} | {g['windows']} | {g['candidates']:.0f} | "
                     f"{g.get('long_candidates', float('nan')):.0f} | "
                     f"{_ms(g['stored']['token_counting_ms'])} | {_ms(g['counted']['token_counting_ms'])} | "
                     f"{_ms(g['stored']['compose_ms'])} | {_ms(g['counted']['compose_ms'])} | "
                     f"{'yes' if g['identical_requests'] else 'NO'} |")
    return "\n".join(lines)


def build_table(builds: dict[int, dict[str, Any]]) -> str:
    lines = ["| rows | tenant | rows written | history rows | seconds |", "|---|---|---|---|---|"]
    for size, b in sorted(builds.items()):
        lines.append(f"| {size_label(size)} | {b['tenant_id']} | {b['total']} | {b['history_rows']} | "
                     f"{b['seconds']:.0f} |")
    return "\n".join(lines)


def load_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| concurrency | assemblies | failed | throughput /s | p50 ms | p95 ms | manifests counted | lost | "
             "duplicated |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['concurrency']} | {r['succeeded']} | {r['failed']} | {r['throughput']:.1f} | "
                     f"{_ms(r['p50_ms'])} | {_ms(r['p95_ms'])} | {r['manifests_counted']} | {r['lost']} | "
                     f"{r['duplicated']} |")
    return "\n".join(lines)
