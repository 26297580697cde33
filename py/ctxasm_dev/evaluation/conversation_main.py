"""scripts/eval-conversations: evidence recall of ctxasm and four baselines on a LoCoMo-format file.

    python -m ctxasm_dev.evaluation.conversation_main PATH [--budgets 1000,2000,4000] [--weights relevance,default]
        [--samples ID,ID] [--limit-questions N] [--misses BASELINE] [--json]

PATH is a LoCoMo-format file or a LongMemEval-format one (the reader tells them apart).

The database (CTXASM_PG_DATABASE, ctxasm_evalconv from the script) is dropped and deployed again on every
run. Figures go to stdout, progress and logs to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence

from ctxasm.errors import CtxasmError
from ctxasm_dev.evaluation.baselines import BASELINES
from ctxasm_dev.evaluation.conversations import DEFAULT_BUDGETS


def _budgets(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--budgets: {text!r} is not a comma-separated list of whole numbers") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"--budgets: {text!r}: every budget must be a whole number >= 1")
    return values


def _weightings(text: str) -> tuple[str, ...]:
    from ctxasm_dev.evaluation.conversation_tenants import RELEVANCE, WEIGHTINGS

    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [name for name in names if name not in WEIGHTINGS]
    if unknown or RELEVANCE not in names:
        raise argparse.ArgumentTypeError(f"--weights: {text!r}: a comma-separated list of {', '.join(WEIGHTINGS)} "
                                         f"that includes {RELEVANCE} (the baselines pack its allowance)")
    return names


def _sample_ids(text: str) -> tuple[str, ...]:
    ids = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not ids:
        raise argparse.ArgumentTypeError(f"--samples: {text!r} names no sample (comma-separated sample ids)")
    return ids


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--limit-questions: {text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--limit-questions: must be >= 1, got {value}")
    return value


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(
        prog="eval-conversations",
        description="Evidence recall of ctxasm's windows on long conversations (LoCoMo or LongMemEval format), against "
                    "recency, BM25, dense and hybrid baselines at the same token allowance; assembly latency. "
                    "A benchmark: it prints figures, it asserts nothing. See docs/conversation-eval.md.",
        epilog="example: scripts/eval-conversations db/tests/conversations/ctxasm_conversations.json --budgets 1000,2000")
    result.add_argument("path", help="a LoCoMo-format JSON file (a list of samples) or a LongMemEval-format one (a "
                                     "list of instances with haystack_sessions)")
    result.add_argument("--budgets", type=_budgets, default=DEFAULT_BUDGETS,
                        help="recalled-history token budgets, comma-separated (default 1000,2000,4000)")
    result.add_argument("--weights", type=_weightings, default=("relevance", "default"),
                        help="the weightings each question is asked with: relevance (rerank 1, confidence 0, "
                             "recency 0) and default (the default budget a new tenant gets); default both")
    result.add_argument("--samples", type=_sample_ids, metavar="ID,ID",
                        help="evaluate only these samples of the file, comma-separated (LoCoMo's sample_id, "
                             "LongMemEval's question_id); default all")
    result.add_argument("--limit-questions", type=_positive, metavar="N",
                        help="evaluate at most N questions of each sample (the first N that are not adversarial)")
    result.add_argument("--misses", choices=BASELINES, metavar="BASELINE",
                        help="also list, per budget, the questions where this baseline's window held an evidence "
                             "turn ctxasm's did not, with what became of each such turn in ctxasm's selection "
                             f"and its text (one of {', '.join(BASELINES)})")
    result.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    result.add_argument("--database", help="database name (default CTXASM_PG_DATABASE); dropped and rebuilt")
    return result


def _log(message: str) -> None:
    print(f"eval-conversations: {message}", file=sys.stderr, flush=True)


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _bulk_embedding_threads() -> str:
    """The run embeds every turn of the file before it asks anything, and nothing else runs meanwhile: unless
    CTXASM_EMBEDDING_THREADS says otherwise, the model gets every core this process may use (ctxasm's default,
    one thread a call, is for a server's many concurrent calls; on two cores a file's turns embed 1.9 times as
    fast with two). The question embedding is outside the latency figures, so they do not change."""
    from ctxasm.ml.onnx_embedding import THREADS_ENV

    if not os.environ.get(THREADS_ENV, "").strip():
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        os.environ[THREADS_ENV] = str(cores or 1)
    return os.environ[THREADS_ENV]


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from ctxasm.local import deploy, pgconn
    from ctxasm_dev.evaluation.conversation_report import format_report, summarize
    from ctxasm_dev.evaluation.conversations import evaluate_file
    from ctxasm_dev.evaluation.conversation_files import read_samples

    try:
        samples, _ = read_samples(args.path, args.samples)  # a bad file or sample id fails before the rebuild
        if not samples:
            _log(f"{args.path}: no samples with turns")
            return 4
        target = pgconn.resolve_target(args.database, start=True)
        _log(f"deploying a fresh database to {target.describe()} ...")
        _log(f"embedding with {_bulk_embedding_threads()} onnxruntime threads (CTXASM_EMBEDDING_THREADS)")
        deploy.deploy_postgres(target, fresh=True)
        evaluation = evaluate_file(target, args.path, args.budgets, args.limit_questions, log=_log,
                                   weightings=args.weights, sample_ids=args.samples)
    except CtxasmError as exc:
        _log(f"error: {exc}")
        return exc.exit_code
    summary = summarize(evaluation, args.misses)
    if args.json:
        print(json.dumps(_json_safe(summary), indent=2, ensure_ascii=False))
    else:
        print(format_report(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
