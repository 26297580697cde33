"""The noisy-neighbour figure: the smallest tenant's assemblies alone, then beside the largest tenant.

"Alone" is measured in a database of its own (`<database>_alone` on the same server, same schema) that
holds only the small tenant: the same rows, made by the same seeded generator. "Beside" is the same tenant
in the benchmark database, where every requested size, the largest among them, shares the tables. Each
has its own connection and the same untimed warm-up questions (none of them timed); the timed assemblies
alternate between the two, question by question, so a change in the machine's load during the run hits both
alike. The ratio is beside / alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ctxasm_dev.bench import generate, runner

METHOD = ("alone: the tenant in a database of its own ({alone}); beside: the same tenant in {shared}, "
          "which also holds the {neighbour}-row tenant; same server, same questions, alternating")
_KEPT = ("assemblies", "p50_ms", "p95_ms", "p99_ms", "phases_ms", "question_embedding_ms", "candidates",
         "retrieved", "vector_ranked", "warm_up")


def alone_database(database: str) -> str:
    return f"{database}_alone"


def measure(alone: Any, shared: Any, size: int, neighbour: int, questions: list[str], max_seconds: float,
            log: Callable[[str], None], warm_up: list[str]) -> dict[str, Any]:
    """The `size` tenant measured in `alone` (a database holding only it), then in `shared`, each after one
    untimed assembly per `warm_up` question."""
    tenant = generate.plan(size).tenant_id
    log(f"{tenant}: alone (database {alone.database}) and beside the {generate.size_label(neighbour)} tenant "
        f"(database {shared.database}), alternating")
    with runner.assembler_session(alone, tenant, size, questions + warm_up) as first, \
            runner.assembler_session(shared, tenant, size, questions + warm_up) as second:
        for session in (first, second):
            session.warm_up(warm_up)
        by_itself, beside = (m.summary() for m in runner.timed([first, second], questions, max_seconds, log))

    def ratio(key: str) -> float:
        return beside[key] / by_itself[key] if by_itself[key] else float("nan")

    return {
        "kind": "neighbour", "size": size, "tenant": tenant, "neighbour_size": neighbour,
        "alone": {"database": alone.database, **{k: by_itself[k] for k in _KEPT}},
        "beside": {"database": shared.database, **{k: beside[k] for k in _KEPT}},
        "p50_ratio": ratio("p50_ms"), "p95_ratio": ratio("p95_ms"),
        "method": METHOD.format(alone=alone.database, shared=shared.database,
                                neighbour=generate.size_label(neighbour)),
    }
