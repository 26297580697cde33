"""Plain-text tables of the benchmark figures (Markdown, so they paste into a note), and the scaling goals
the figures are compared with."""

from __future__ import annotations

from typing import Any

from ctxasm.core import tokens
from ctxasm_dev.bench.generate import size_label
from ctxasm_dev.bench.runner import PHASES

#: today's load throughput at N = 8 before selection was made to scale (assemblies per second)
BASELINE_THROUGHPUT_N8 = 3.1


def _ms(value: float | None) -> str:
    if value is None or value != value:  # None or NaN
        return "-"
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _kind(entries: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in entries if e["kind"] == kind]


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def build_table(builds: list[dict[str, Any]]) -> str:
    return _table(["rows", "tenant", "database", "rows written", "history rows", "seconds", "of it index build s"],
                  [[size_label(b["size"]), b["tenant"], b["database"], str(b["rows"]), str(b["history_rows"]),
                    f"{b['seconds']:.0f}", f"{b['index_seconds']:.0f}"] for b in builds])


def text_table(sizes: list[dict[str, Any]]) -> str:
    rows = []
    for s in sizes:
        t = s["text"]
        share = t.get("question_match_share")
        low, high = t.get("question_matches_range") or (None, None)
        rows.append([size_label(s["size"]), _num(t["chunk_words"]), _num(t["turn_words"]), _num(t["fact_words"]),
                     str(t["chunks"]), _num(t["question_matches"]),
                     "-" if share is None else f"{100 * share:.1f}%", f"{_num(low)}..{_num(high)}"])
    return _table(["rows", "chunk words p50", "turn words p50", "fact words p50", "chunks",
                   "chunks matching a question p50", "share", "range"], rows)


def _phases(sizes: list[dict[str, Any]]) -> list[str]:
    seen = {p for s in sizes for r in (s, s.get("naive") or {}) for p in r.get("phases_ms", {})}
    return [p for p in PHASES if p in seen] + sorted(seen - set(PHASES))


def scale_table(sizes: list[dict[str, Any]]) -> str:
    phases = _phases(sizes)
    head = (["rows", "assembler", "n", "p50 ms", "p95 ms", "p99 ms", "round trips", "candidates",
             "vector-ranked / retrieved"] + [f"{p} p50 ms" for p in phases]
            + ["peak MiB", "warm-up n", "warm-up first ms", "warm-up p50 ms"])
    rows = []
    for s in sizes:
        for name, r in (("assembler", s), ("naive", s.get("naive"))):
            if r is None:
                continue
            ranked = (f"{r['vector_ranked']:.0f} / {r['retrieved']:.0f}" if r.get("retrieved") is not None
                      and name == "assembler" else "-")
            rows.append([size_label(s["size"]), name, str(r["assemblies"]), _ms(r["p50_ms"]), _ms(r["p95_ms"]),
                         _ms(r["p99_ms"]), _num(r["round_trips"]), _num(r["candidates"]), ranked]
                        + [_ms(r["phases_ms"].get(p)) for p in phases]
                        + [_num(r.get("peak_mib"), 1)] + _warm_up(r.get("warm_up")))
    return _table(head, rows)


def _warm_up(figures: dict[str, Any] | None) -> list[str]:
    """The warm-up columns: how many, the first (cold for its connection), the median; "-" when none ran."""
    if not figures or not figures.get("assemblies"):
        return ["-", "-", "-"]
    return [str(figures["assemblies"]), _ms(figures["first_ms"]), _ms(figures["p50_ms"])]


def ratio_table(sizes: list[dict[str, Any]]) -> str:
    rows = []
    previous = None
    for s in sizes:
        n = s.get("naive")
        growth = ["-", "-", "-"]
        if previous is not None:
            growth[0] = f"{s['p50_ms'] / previous['p50_ms']:.2f}x"
            if n and previous.get("naive"):
                growth[1] = f"{n['p50_ms'] / previous['naive']['p50_ms']:.2f}x"
            growth[2] = f"{(s['candidates'] or 0) / max(previous['candidates'] or 0, 1):.2f}x"
        ratio = f"{s['naive_over_assembler']:.1f}x" if s.get("naive_over_assembler") else "-"
        rows.append([size_label(s["size"]), ratio] + growth)
        previous = s
    return _table(["rows", "naive / assembler (p50)", "assembler growth", "naive growth", "candidates growth"], rows)


def neighbour_table(entries: list[dict[str, Any]]) -> str:
    rows = []
    for e in entries:
        a, b = e["alone"], e["beside"]
        rows.append([e["tenant"], size_label(e["neighbour_size"]), _ms(a["p50_ms"]), _ms(a["p95_ms"]),
                     _ms(b["p50_ms"]), _ms(b["p95_ms"]), f"{e['p50_ratio']:.2f}x", f"{e['p95_ratio']:.2f}x",
                     _ms(a["phases_ms"].get("database_selection")), _ms(b["phases_ms"].get("database_selection")),
                     f"{_num(a['vector_ranked'])} / {_num(b['vector_ranked'])}"])
    return _table(["tenant", "neighbour", "alone p50 ms", "alone p95 ms", "beside p50 ms", "beside p95 ms",
                   "p50 ratio", "p95 ratio", "selection p50 alone", "beside", "vector-ranked alone / beside"], rows)


def token_table(gains: list[dict[str, Any]]) -> str:
    return _table(["rows", "windows", "candidates", f"of them >= {tokens.JOIN_MIN_CHARS} chars",
                   "token counting ms (stored)", "(counted)",
                   "compose ms (stored)", "(counted)", "identical requests"],
                  [[size_label(g["size"]), str(g["windows"]), f"{g['candidates']:.0f}",
                    f"{g.get('long_candidates', float('nan')):.0f}", _ms(g["stored"]["token_counting_ms"]),
                    _ms(g["counted"]["token_counting_ms"]), _ms(g["stored"]["compose_ms"]),
                    _ms(g["counted"]["compose_ms"]), "yes" if g["identical_requests"] else "NO"] for g in gains])


def load_table(rows: list[dict[str, Any]]) -> str:
    return _table(["workload", "concurrency", "warm-up per worker", "assemblies", "failed", "throughput /s",
                   "p50 ms", "p95 ms", "question embedding p50 ms", "manifests counted", "lost", "duplicated"],
                  [[r["workload"], str(r["concurrency"]), str(r.get("warm_up", "-")), str(r["assemblies"]),
                    str(r["failed"]), f"{r['throughput']:.1f}", _ms(r["p50_ms"]), _ms(r["p95_ms"]),
                    _ms(r["question_embedding_ms"]), str(r["manifests_counted"]), str(r["lost"]),
                    str(r["duplicated"])] for r in rows])


def targets(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scaling goals, each with the figure this run measured (none for a figure it did not measure)."""
    found: list[dict[str, Any]] = []

    def goal(figure: str, measured: float, wanted: str, met: bool) -> None:
        found.append({"kind": "target", "figure": figure, "measured": measured, "goal": wanted, "met": met})

    sizes = _kind(entries, "size")
    if sizes:
        small, large = sizes[0], sizes[-1]
        label = size_label(large["size"])
        if large is not small:
            growth = large["p50_ms"] / small["p50_ms"]
            goal(f"p50 at {label} / p50 at {size_label(small['size'])}", growth, "<= 1.5", growth <= 1.5)
        goal(f"p50 at {label} without the question embedding, ms", large["p50_ms"], "<= 60 (aim 30)",
             large["p50_ms"] <= 60)
        if large.get("naive_over_assembler"):
            goal(f"naive / assembler p50 at {label}", large["naive_over_assembler"], ">= 50",
                 large["naive_over_assembler"] >= 50)
        worst = max(s["phases_ms"].get("manifest_write", float("nan")) for s in sizes)
        goal("manifest write p50, worst size, ms", worst, "< 20", worst < 20)
    for e in _kind(entries, "neighbour"):
        goal(f"{e['tenant']} beside {size_label(e['neighbour_size'])} / alone, p50", e["p50_ratio"], "<= 1.3",
             e["p50_ratio"] <= 1.3)
    for e in _kind(entries, "load"):
        if e["concurrency"] == 8:
            wanted = 10 * BASELINE_THROUGHPUT_N8
            goal(f"throughput at N = 8 ({e['workload']}), assemblies/s", e["throughput"], f">= {wanted:g}",
                 e["throughput"] >= wanted)
    return found


def targets_table(rows: list[dict[str, Any]]) -> str:
    return _table(["figure", "measured", "goal", "met"],
                  [[r["figure"], f"{r['measured']:.2f}", r["goal"], "yes" if r["met"] else "no"] for r in rows])


def functions_table(entry: dict[str, Any]) -> str:
    """One size's routines by their own time per window (the tracking's own cost included), or why none."""
    if entry.get("unavailable"):
        return f"unavailable: {entry['unavailable']}"
    return _table(["routine", "calls per window", "own ms per window", "with what it calls, ms per window"],
                  [[r["routine"], _num(r["calls"], 1), f"{r['self_ms']:.2f}", f"{r['total_ms']:.2f}"]
                   for r in entry["routines"]])


def text(figures: dict[str, Any]) -> str:
    """Every table the figures have, in reading order."""
    entries = figures["entries"]
    parts = []
    if figures.get("warm_up"):
        parts.append("Warm-up: " + figures["warm_up"]["method"])
    if _kind(entries, "build"):
        parts.append("## Tenants built\n\n" + build_table(_kind(entries, "build")))
    sizes = _kind(entries, "size")
    if sizes:
        parts.append("## Generated text (words per row, lexical matches of the benchmark questions)\n\n"
                     + text_table(sizes))
        parts.append("## Assembly per tenant size (latency without the question embedding)\n\n" + scale_table(sizes))
        parts.append("## Ratio and growth (p50)\n\n" + ratio_table(sizes))
    for e in _kind(entries, "question_embedding"):
        parts.append(f"## Question embedding ({e['model']}, apart from assembly)\n\n"
                     f"p50 {_ms(e['p50_ms'])} ms, p95 {_ms(e['p95_ms'])} ms over {e['n']} questions")
    if _kind(entries, "neighbour"):
        parts.append("## Noisy neighbour (the smallest tenant alone, then beside the largest)\n\n"
                     + neighbour_table(_kind(entries, "neighbour")) + "\n\n"
                     + "\n".join(e["method"] for e in _kind(entries, "neighbour")))
    for e in _kind(entries, "functions"):
        parts.append(f"## Database routines, {size_label(e['size'])} ({e['assemblies']} assemblies apart from the "
                     "timed ones, function statistics on)\n\n" + functions_table(e))
    if _kind(entries, "token_counts"):
        parts.append("## Stored token counts (compose on identical selections)\n\n"
                     + token_table(_kind(entries, "token_counts")))
    if _kind(entries, "load"):
        parts.append("## Load (concurrent assemblies over a pool; latency includes the question embedding)\n\n"
                     + load_table(_kind(entries, "load")))
    if _kind(entries, "target"):
        parts.append("## Against the scaling goals\n\n" + targets_table(_kind(entries, "target")))
    parts.append(f"process peak RSS {figures['max_rss_mib']:.0f} MiB (getrusage)")
    return "\n\n".join(parts)
