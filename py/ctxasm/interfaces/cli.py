"""The `ctxasm` command. Results go to stdout, logs and errors to stderr.

Exit codes: 0 success; 1 a ctxasm error (the message says which); 2 configuration or usage;
3 database unavailable; 4 invalid scenario file; 5 replay mismatch; 6 replay unavailable; 7 model provider error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ctxasm import __version__
from ctxasm.api.admin import ENGINES
from ctxasm.errors import CtxasmError

if TYPE_CHECKING:
    from ctxasm.api import Session


DATABASE_HELP = "PostgreSQL database name (default CTXASM_PG_DATABASE or ctxasm)"
ENGINE_HELP = ("postgresql (default) or oracle (default CTXASM_ENGINE); oracle connects with CTXASM_ORACLE_DSN "
               "(CTXASM_ORACLE_OWNER_DSN for load)")

EXIT_CODES = ("Exit codes: 0 ok; 1 ctxasm error (the message names it, e.g. manifest_not_found); "
              "2 configuration or usage; 3 database unavailable; 4 invalid scenario file; "
              "5 replay mismatch; 6 replay unavailable; 7 model provider error (unreachable, timed out or refused, "
              "after bounded retries).")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _claims(args: argparse.Namespace, *, scoped: bool = False):
    """The claim source of this invocation: --claim, else CTXASM_CLAIM, else a claim minted with the deployment's
    key for --tenant (scoped to --user and --agent when `scoped`). Fills in --tenant, --user and --agent from a
    given claim when they are not given; a claim for another tenant than --tenant is refused."""
    from ctxasm.claims import FixedClaim, launch_claims
    from ctxasm.errors import ConfigError

    source = launch_claims(getattr(args, "claim", None), user_id=getattr(args, "user", None) if scoped else None,
                           agent_id=getattr(args, "agent", None) if scoped else None)
    if isinstance(source, FixedClaim):
        given = source.claim
        args.tenant = args.tenant or given.tenant_id
        if scoped:
            args.user = getattr(args, "user", None) or given.user_id
            args.agent = getattr(args, "agent", None) or given.agent_id
    if not args.tenant:
        raise ConfigError("config_error: give --tenant (or a claim: --claim or CTXASM_CLAIM)")
    return source


def _engine(args: argparse.Namespace):
    """The engine of this invocation (ctxasm.engines.registry): --engine, else CTXASM_ENGINE, else postgresql;
    --database picks the PostgreSQL database."""
    from ctxasm.api.admin import open_engine

    return open_engine(getattr(args, "engine", None), database=getattr(args, "database", None))


@contextmanager
def _session(args: argparse.Namespace, *, scoped: bool = False, connections: int = 1) -> Iterator[Session]:
    """A session of the Python API (ctxasm.api) for this invocation: the engine of --engine / CTXASM_ENGINE, a pool
    of `connections` (opened as needed; the MCP server and the agent loop hold one for the whole run and the
    remember tool borrows another), and the caller's claim (--claim, CTXASM_CLAIM, else one minted with the
    deployment's key, scoped to --user and --agent when `scoped`)."""
    import os

    from ctxasm.api import Memory
    from ctxasm.claims import CLAIM_ENV

    _claims(args, scoped=scoped)  # fills in --tenant (--user, --agent) from a given claim, or says what is missing
    with Memory(_engine(args), pool_size=connections) as memory:
        yield memory.session(args.tenant, user_id=getattr(args, "user", None) if scoped else None,
                             agent_id=getattr(args, "agent", None) if scoped else None,
                             thread_id=getattr(args, "thread", None), roles=tuple(getattr(args, "role", None) or ()),
                             claim=getattr(args, "claim", None) or os.environ.get(CLAIM_ENV))


def _claim(args: argparse.Namespace) -> int:
    from ctxasm.claims import ClaimSigner, parse_ttl, read_key
    from ctxasm.errors import ConfigError

    key = read_key()
    if not key:
        from ctxasm.claims import CLAIM_KEY_ENV, key_path

        raise ConfigError(f"config_error: no claim key here ({CLAIM_KEY_ENV} or {key_path()}): only the trusted "
                          "side that deployed the database can mint claims")
    print(ClaimSigner(key).mint(args.tenant, args.user, args.agent, parse_ttl(args.ttl)))
    return 0


def _db_up(args: argparse.Namespace) -> int:
    from ctxasm.local import pgcluster

    from ctxasm.settings import Environment

    if Environment.read().pg_dsn:
        _log("CTXASM_PG_DSN is set: using that server, the embedded cluster is not started")
        return 0
    print(pgcluster.up().describe())
    return 0


def _db_down(args: argparse.Namespace) -> int:
    from ctxasm.local import pgcluster

    print(pgcluster.down().describe())
    return 0


def _db_status(args: argparse.Namespace) -> int:
    from ctxasm.local import pgcluster, pgconn
    from ctxasm.settings import Environment

    database = getattr(args, "database", None)  # the top-level --database, as every other command reads it
    if Environment.read().pg_dsn:
        target = pgconn.resolve_target(database)
        print(target.describe())
    else:
        status = pgcluster.status()
        print(status.describe())
        if not status.running:
            return 3
        target = pgconn.resolve_target(database)
    from ctxasm.local.schema_info import databases, deployment_summary

    print(deployment_summary(target))
    found = databases(target)
    deployed = [name for name, ok in found if ok]
    if found:
        print("databases on this server: " + ", ".join(f"{name}{'' if ok else ' (no ctxasm)'}" for name, ok in found)
              + "; CTXASM_PG_DATABASE or --database picks one")
    if target.database not in deployed and deployed:
        print(f"database {target.database} has no ctxasm deployment; e.g. CTXASM_PG_DATABASE={deployed[0]} "
              "(scripts/demo fills ctxasm_demo)")
    return 0


def _db_deploy(args: argparse.Namespace) -> int:
    from ctxasm.local import deploy, pgconn

    target = pgconn.resolve_target(args.database, start=True)
    _log(f"deploying to {target.describe()} with Liquibase ...")
    print(deploy.deploy_postgres(target, fresh=args.fresh, app_instances=tuple(args.app_login or ())))
    return 0


def _models_export(args: argparse.Namespace) -> int:
    from ctxasm.ml.embedding import _PACKAGE, MODEL_NAME, model_dir
    from ctxasm.ml.onnx_embedding import ensure_export

    print(ensure_export(model_dir(), MODEL_NAME, package=_PACKAGE, force=args.force).describe())
    return 0


def _load(args: argparse.Namespace) -> int:
    from ctxasm.api import Memory
    from ctxasm.api.admin import POSTGRESQL

    engine = _engine(args)
    if engine.name == POSTGRESQL:
        from ctxasm.local import pgconn

        pgconn.resolve_target(args.database, start=True)
    with Memory(engine, pool_size=1) as memory:
        report = memory.load(args.file, upsert=args.upsert)
    print(report.describe())
    return 0


def _tenant_create(args: argparse.Namespace) -> int:
    from ctxasm.api import Memory
    from ctxasm.api.admin import parse_time

    at = parse_time(args.at)
    with Memory(_engine(args), pool_size=1) as memory:
        report = memory.create_tenant(args.tenant_id, args.name, at=at)
    print(report.describe())
    print(f"tenant {args.tenant_id}: default context budget (5000 usable tokens, reclaim_unused on) and memory "
          f"instructions in effect from {at.isoformat() if at else 'now'}")
    return 0


def _inventory(args: argparse.Namespace) -> int:
    with _session(args) as session:
        rows = session.inventory()
        engine = session.engine
    print(f"tenant {args.tenant}, as the application role sees it ({engine.describe()}):")
    for kind, status, count in rows:
        print(f"  {kind:<24} {status:<11} {count:>6}")
    if not rows:
        print("  (no rows)")
    return 0


def _print_budget(args: argparse.Namespace, view) -> int:
    import json

    print(json.dumps(view.as_json(), indent=2, ensure_ascii=False) if args.json else view.describe())
    return 0 if view.chosen is not None else 1


def _budget_show(args: argparse.Namespace) -> int:
    with _session(args, scoped=True) as session:
        return _print_budget(args, session.budget(intent=args.intent, at=args.at))


def _budget_set(args: argparse.Namespace) -> int:
    from ctxasm.interfaces.budget_input import budget_from_arguments

    scope = [name for name in ("user", "agent", "thread") if getattr(args, name)] or "tenant"
    with _session(args, scoped=True) as session:
        start = None if args.file else session.budget(at=args.at)
        budget = budget_from_arguments(args.file, args.field, start.content if start else None)
        view = session.set_budget(budget, scope=scope, at=args.at)
    _log(f"ctxasm budget set: written for {', '.join(scope) if isinstance(scope, list) else 'the whole tenant'}")
    return _print_budget(args, view)


def _assemble(args: argparse.Namespace) -> int:
    import json

    from ctxasm.interfaces.presentation import describe_window
    from ctxasm.api.admin import parse_time

    at = parse_time(args.at)
    with _session(args, scoped=True) as session:
        window = session.assemble(args.question, intent=args.intent, at=at, model=args.model)
    if args.json:
        print(json.dumps(window.as_json(), indent=2, ensure_ascii=False))
    else:
        print(describe_window(window))
    return 0


def _mcp(args: argparse.Namespace) -> int:
    import anyio

    from ctxasm.agent.manager import MemoryManager
    from ctxasm.agent.mcp_server import build_server, serve_stdio
    from ctxasm.api.admin import parse_time
    from ctxasm.interfaces.heap import settle_startup_heap

    at = parse_time(args.at) if args.at else None
    with _session(args, scoped=True, connections=2) as session, MemoryManager.over(session, at=at) as manager:
        caller = session.caller
        # Without --manifest the current window is the thread's latest at each call: the client assembles
        # windows as it goes, and expand opens the ids of the newest.
        manager.manifest_id, manager.follow_thread = args.manifest, not args.manifest
        server = build_server(manager)
        frozen = settle_startup_heap()
        _log(f"ctxasm mcp: serving tenant {caller.tenant_id} on stdio; current window "
             f"{manager.current_window() or '(none yet)'}; start-up heap settled ({frozen} objects)")
        anyio.run(serve_stdio, server)
    return 0


def _ask(args: argparse.Namespace) -> int:
    import asyncio
    import json
    import os

    from ctxasm.agent import answer_checks
    from ctxasm.agent.loop import NO_MODEL, ROUNDS_EXHAUSTED, AgentLoop
    from ctxasm.agent.model_clients import OpenAIClient, RecordedClient, apply_setup, read_transcript
    from ctxasm.api.admin import parse_time

    transcript = read_transcript(args.transcript) if args.transcript else None
    client: RecordedClient | OpenAIClient | None
    if transcript:
        client = RecordedClient.load(args.transcript)
    elif os.environ.get("OPENAI_API_KEY"):
        client = OpenAIClient(base_url=args.base_url)
    else:
        client = None
    at = parse_time(args.at)
    with _session(args, scoped=True, connections=2) as session:
        if transcript and transcript.get("setup"):
            # Setup rows may be the tenant's (a budget for the thread): written with a claim for the tenant,
            # not the one scoped to the caller's user and agent.
            with session.store(shared=True) as store:
                apply_setup(store, args.tenant, transcript["setup"])
        with AgentLoop.over(session, args.question, at, client, intent=args.intent, model=args.model,
                            provider_count=os.environ.get("CONTEXT_PROVIDER_COUNT") == "1",
                            elicitation_handler=_clarify_answer(args.clarify_answer)) as loop:
            run = asyncio.run(loop.run())
            checks = answer_checks.transcript_checks(transcript["checks"], run.answer, run.manifests, loop.store,
                                                     session.tenant_id) if transcript and transcript.get("checks") \
                else []
    if run.status == NO_MODEL:
        _log("ctxasm ask: OPENAI_API_KEY is not set and no --transcript was given: the request was prepared and "
             f"recorded ({run.rounds[0].request_record}), no model was called")
    elif run.status == ROUNDS_EXHAUSTED:
        _log(f"ctxasm ask: rounds_exhausted: the model still asked for tools in round {len(run.rounds)}, the last "
             f"one (its request said tool_choice \"none\"), and gave no answer; its response is recorded "
             f"({run.rounds[-1].response_record}), those calls were not run")
    if args.json:
        print(json.dumps({**run.as_json(), "checks": [c.__dict__ for c in checks]}, indent=2, ensure_ascii=False))
    else:
        for r in run.rounds:
            calls = ", ".join(c["origin"].removeprefix("tool:") + f" ({c['tokens']} tokens, {c['tier']})"
                              for c in r.tool_calls) or ("tool calls not run: no round left"
                                                         if run.status == ROUNDS_EXHAUSTED and r is run.rounds[-1]
                                                         else "no tool call")
            print(f"round {r.number}: request {r.request_tokens}/{r.request_limit} tokens, manifest {r.manifest_id}; "
                  f"{calls}")
        print(f"tool reserve used: {run.tool_tokens_used} tokens")
        if run.turns:
            print(f"stored as turns {', '.join(str(t.turn_index) for t in run.turns)} of thread {args.thread}: "
                  "the question and the answer")
        print(run.answer if run.answer is not None else
              "(no model was called)" if run.status == NO_MODEL else "(no answer: the rounds ran out)")
        for check in checks:
            print(f"check {check.name}: {'passed' if check.passed else 'FAILED'} ({check.detail})")
    failed = [check.name for check in checks if not check.passed]
    if failed:
        _log(f"ctxasm ask: {len(failed)} of {len(checks)} checks of the transcript failed: {', '.join(failed)}")
        return 1
    return 1 if run.status == ROUNDS_EXHAUSTED else 0


def _add_turn(args: argparse.Namespace) -> int:
    with _session(args, scoped=True) as session:
        turn = session.add_turn(args.role, args.content, at=args.at, speaker=args.name)
    print(f"added {turn.role} turn {turn.id} to thread {args.thread} at turn_index {turn.turn_index}")
    return 0


def _remember(args: argparse.Namespace) -> int:
    import json
    import math

    from ctxasm.errors import ConfigError

    def finite(text: str) -> float:
        number = float(text)
        if math.isinf(number):
            raise ValueError(f"{text} is beyond the numbers JSON values here may hold")
        return number

    def refused(constant: str) -> float:  # NaN and Infinity: Python reads them, JSON and the database do not
        raise ValueError(f"{constant} is not a JSON number")

    try:
        value = (json.loads(args.value_json, parse_float=finite, parse_constant=refused)
                 if args.value_json is not None else None)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise ConfigError(f"config_error: --value-json is not JSON: {exc}") from None
    with _session(args, scoped=True) as session:
        memory_type, memory_id, version = session.remember(
            args.subject, args.predicate, args.content, content_json=value, confidence=args.confidence, at=args.at,
            personal=args.personal)
    how = "superseded by" if version > 1 else "written as"
    print(f"({args.subject}, {args.predicate}) {how} {memory_type} {memory_id} version {version}")
    return 0


def _seconds(text: str, flag: str) -> float:
    """Seconds from "90", "90s", "15m", "6h" or "2d"."""
    import re

    from ctxasm.errors import ConfigError

    match = re.fullmatch(r"\s*(\d+)\s*([smhd]?)\s*", text)
    if not match:
        raise ConfigError(f"config_error: {flag} {text[:40]!r} is not a duration like 90s, 15m, 6h or 2d")
    return int(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def at_least(smallest: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `smallest` (argparse names the flag in its error)."""

    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < smallest:
            raise argparse.ArgumentTypeError(f"must be at least {smallest}, got {value}")
        return value
    return whole


def _summarize_threads(args: argparse.Namespace) -> int:
    import json
    import time
    from datetime import timedelta

    from ctxasm.api.admin import Thresholds
    from ctxasm.interfaces.heap import settle_startup_heap

    thresholds = Thresholds(min_new_turns=args.min_turns, quiet_after=timedelta(seconds=_seconds(
        args.quiet_after, "--quiet-after")), min_quiet_turns=args.min_quiet_turns,
        summary_tokens=args.summary_tokens, max_threads=args.max_threads)
    every = _seconds(args.every, "--every") if args.every else None
    if every == 0:
        from ctxasm.errors import ConfigError

        raise ConfigError("config_error: --every must be longer than 0 seconds")
    failed = 0
    if every is not None:
        # A service manager stops a job with SIGTERM: it ends the loop as Ctrl-C does. A pass it interrupts
        # writes nothing (its transaction rolls back); the next run does that pass again. SIGINT gets the same
        # handler explicitly: a process started with SIGINT ignored (a background job of a script, some
        # supervisors) inherits that, and Python then leaves it ignored, so the loop could not be interrupted.
        import signal

        signal.signal(signal.SIGTERM, signal.default_int_handler)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    with _session(args, scoped=True) as session:
        try:
            settled = False
            while True:
                run = session.summarize_threads(thresholds=thresholds, at=args.at if every is None else None)
                failed = run.failed
                print(json.dumps(run.as_json(), indent=2) if args.json else run.describe(), flush=True)
                if every is None:
                    break
                if not settled:  # after the first pass, which loaded the summarizer and the embedding model
                    settle_startup_heap()
                    settled = True
                _log(f"ctxasm summarize-threads: next pass in {every:g} s (Ctrl-C stops)")
                time.sleep(every)
        except KeyboardInterrupt:
            if every is None:
                raise
            _log("ctxasm summarize-threads: stopped")
    return 1 if failed else 0


def _clarify_answer(text: str | None):
    """The MCP elicitation handler that answers the clarify tool with `text` (None: the client cannot ask)."""
    if text is None:
        return None

    async def answer(message, response_type, params, context):
        _log(f"ctxasm ask: clarify asked {message!r}; answering {text!r} (--clarify-answer)")
        return {"value": text}

    return answer


def _replay(args: argparse.Namespace) -> int:
    import json

    with _session(args) as session:
        result = session.replay(args.manifest_id)
    print(json.dumps(result.as_json(), indent=2) if args.json else result.describe())
    return result.exit_code


def _erase(args: argparse.Namespace) -> int:
    import json

    from ctxasm.api.admin import POSTGRESQL
    from ctxasm.errors import ConfigError
    from ctxasm.api.admin import describe_erasure, vacuum_tables

    with _session(args) as session:
        if args.vacuum and session.engine.name != POSTGRESQL:
            raise ConfigError("config_error: --vacuum is for PostgreSQL; on Oracle the undo retention decides how "
                              "long pre-erasure images stay (docs/security.md)")
        report = session.forget(args.memory_type, args.memory_id)
        if args.vacuum:
            report.update(vacuum_tables(session.engine.target,  # type: ignore[attr-defined]  # PostgreSQL
                                        args.tenant, list(report["tables"]),
                                        report.get("erased_xid")).as_json())
    print(json.dumps(report, indent=2) if args.json else describe_erasure(args.memory_type, args.memory_id, report))
    if not report.get("complete", True):
        _log("ctxasm: error: vacuum_incomplete: erased row versions or index entries remain (an older open "
             "transaction may still see them); run `ctxasm erase ... --vacuum` again when it has ended")
        return 1
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from ctxasm.errors import ConfigError
    from ctxasm.interfaces import inspector

    rows_then: list = []
    with _session(args) as session:
        found = session.show(args.manifest_id)
        if isinstance(found, inspector.Record):
            if args.diff or args.why or args.request:
                raise ConfigError(f"config_error: {args.manifest_id} is a {found.event_type}: --diff, --why and "
                                  "--request take a manifest (or a provider request)")
            return _show_record(args, found)
        inspection = found
        other = session.inspect(args.diff, with_request=False) if args.diff else None
        if args.why:
            kind = inspector.exclusions.parse_query(args.why)[0]
            if kind and inspection.manifest.get("scn"):
                rows_then = session.rows_at(kind, str(inspection.manifest["scn"]))
    diff = inspector.diff_of(inspection, other) if other is not None else None
    if args.why:
        print("\n".join(inspector.why_not(inspection, args.why, rows_then)))
        return 0
    if args.request:
        print(inspector.describe_request(inspection))
        return 0
    if args.html is None and not args.open:
        print(inspector.describe_diff(diff) if diff else inspector.describe_manifest(inspection))
        return 0
    return _write_and_open(args, inspector.write_page(args.html or inspector.default_page_path(args.manifest_id),
                                                      inspection, diff))


def _show(args: argparse.Namespace) -> int:
    from ctxasm.interfaces import inspector

    with _session(args) as session:
        found = session.show(args.id)
    if isinstance(found, inspector.Record):
        print(inspector.describe_record(found))
    elif args.id == found.manifest_id:
        print(inspector.describe_manifest(found))
    else:  # a provider request: the request as it was sent, message by message
        print(inspector.describe_request(found))
    return 0


def _show_record(args: argparse.Namespace, record) -> int:
    from ctxasm.interfaces import inspector

    if args.html is None and not args.open:
        print(inspector.describe_record(record))
        return 0
    return _write_and_open(args, inspector.write_text(args.html or inspector.default_page_path(args.manifest_id),
                                                      inspector.record_page(record)))


def _write_and_open(args: argparse.Namespace, path) -> int:
    from ctxasm.interfaces import inspector

    print(f"wrote {path}")
    if args.open:
        if inspector.open_page(path):
            _log("opened in the default browser")
        else:
            _log(f"no browser available here: open {path.resolve().as_uri()}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with a pointer to the help in every usage error (exit code 2)."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n`{self.prog} --help` lists what it takes; `ctxasm COMMAND "
                     "--help` shows a command's options with an example.\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ctxasm",
        description="Context assembly for multi-tenant agent memory.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n  ctxasm db up && ctxasm db deploy\n  ctxasm load db/tests/scenarios/acme_demo.json\n"
        "  ctxasm inspect MANIFEST_ID --tenant acme --html window.html --open\n"
        "`ctxasm COMMAND --help` shows each command's options and an example.\n\n" + EXIT_CODES,
    )
    parser.add_argument("--version", action="version", version=f"ctxasm {__version__}")
    # Before the command (`ctxasm --engine oracle inventory ...`) or after it: the command's own flag wins.
    parser.add_argument("--engine", dest="global_engine", choices=ENGINES, help=ENGINE_HELP)
    parser.add_argument("--database", dest="global_database", metavar="NAME", help=DATABASE_HELP)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add_parser(sub, name: str, help_text: str, example: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text, description=help_text, epilog=f"Example: {example}\n\n{EXIT_CODES}",
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    def add(sub, name: str, handler: Callable[[argparse.Namespace], int], help_text: str, example: str):
        cmd = add_parser(sub, name, help_text, example)
        cmd.set_defaults(handler=handler)
        return cmd

    def add_group(name: str, help_text: str, example: str):
        """A command whose ACTION is a subcommand (`ctxasm db up`): its subparsers."""
        return add_parser(commands, name, help_text, example).add_subparsers(
            dest=f"{name}_command", required=True, metavar="ACTION")

    db_commands = add_group("db", "the PostgreSQL server: embedded cluster or CTXASM_PG_DSN",
                            "ctxasm db up && ctxasm db deploy && ctxasm db status")

    def tenant_arguments(cmd, note: str = "") -> None:
        cmd.add_argument("--tenant", help="tenant id (trusted launch configuration" + note + "); a claim for it is "
                         "minted with the deployment's claim key, or give one with --claim")
        cmd.add_argument("--claim", help="a signed tenant claim (`ctxasm claim`; default CTXASM_CLAIM): this process "
                         "then acts for that claim's tenant (and user and agent) only")

    add(db_commands, "up", _db_up, "initialise (first time) and start the embedded cluster", "ctxasm db up")
    add(db_commands, "down", _db_down, "stop the embedded cluster", "ctxasm db down")
    add(db_commands, "status", _db_status, "show the server and what is deployed", "ctxasm db status")
    deploy_cmd = add(db_commands, "deploy", _db_deploy, "create roles and database, then liquibase update",
                     "ctxasm db deploy")
    deploy_cmd.add_argument("--database", help=DATABASE_HELP)
    deploy_cmd.add_argument("--fresh", action="store_true", help="drop the database first (all its data)")
    deploy_cmd.add_argument("--app-login", action="append", metavar="NAME",
                            help="also a login role ctxasm_app_NAME for one more application instance (repeatable; "
                                 "the instance then runs with CTXASM_APP_LOGIN=NAME); every deployment keeps and "
                                 "resets the ones made before")

    models_commands = add_group("models", "the embedding model: its ONNX export for onnxruntime",
                                "ctxasm models export")
    export_cmd = add(models_commands, "export", _models_export,
                     "export the shipped all-MiniLM-L6-v2 weights to ONNX under CTXASM_HOME/models (once; "
                     "again only when the weights or the exporter change); needs no torch",
                     "ctxasm models export")
    export_cmd.add_argument("--force", action="store_true", help="export again even when the cache is up to date")

    claim_cmd = add(commands, "claim", _claim,
                    "mint a signed tenant claim (HS256 JWT) with the deployment's claim key and print it; the "
                    "database verifies it in ctx_session.set_tenant",
                    "ctxasm claim --tenant acme --user jane --agent research-assistant --ttl 15m")
    claim_cmd.add_argument("--tenant", required=True, help="the tenant the claim names")
    claim_cmd.add_argument("--user", help="the user it names: routines then refuse any other user scope")
    claim_cmd.add_argument("--agent", help="the agent it names: routines then refuse any other agent scope")
    claim_cmd.add_argument("--ttl", default="15m", help="lifetime, e.g. 900s, 15m, 2h (at most 24h; default 15m)")

    load = add(commands, "load", _load, "load a scenario file through the write API, in one transaction",
               "ctxasm load db/tests/scenarios/acme_demo.json")
    load.add_argument("file", help="scenario JSON file (docs/scenario-format.md)")
    load.add_argument("--upsert", action="store_true",
                      help="write only what differs from what is stored: a changed memory gets a new version, an "
                           "unchanged one nothing (loading a file twice writes nothing the second time); a memory "
                           "of the file that was erased is refused, naming it and its tenant")
    load.add_argument("--database", help=DATABASE_HELP)
    load.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)
    tenant_commands = add_group("tenant", "tenants: create one that works at once",
                                'ctxasm tenant create newco --name "NewCo Research"')
    create_cmd = add(tenant_commands, "create", _tenant_create,
                     "register a tenant (as the schema owner) with a default context budget guideline (the "
                     "article's numbers: 5000 usable tokens, reserves 400/1000/500, reclaim_unused on) and the "
                     "default memory instructions, so its first window assembles at once",
                     'ctxasm tenant create newco --name "NewCo Research"')
    create_cmd.add_argument("tenant_id", metavar="TENANT", help="the new tenant's id")
    create_cmd.add_argument("--name", help="its display name (default: the id)")
    create_cmd.add_argument("--at", help="when the default rows start to apply, ISO 8601 (default now)")
    create_cmd.add_argument("--database", help=DATABASE_HELP)
    create_cmd.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)

    budget_commands = add_group("budget", "the context budget: the one in effect for a scope, and setting one",
                                "ctxasm budget show --tenant acme --user jane --agent research-assistant")
    show_budget = add(budget_commands, "show", _budget_show,
                      "the budget the database picks for a user, agent and thread now (or --at), and why every other "
                      "budget row of the tenant is not the one", "ctxasm budget show --tenant acme --agent helper")
    set_budget = add(budget_commands, "set", _budget_set,
                     "write a context budget (a new version of the one of the same scope, else a new row), checked "
                     "first with every problem named, then show the budget now in effect. Its scope is the --user, "
                     "--agent and --thread given (none: the whole tenant); the narrowest budget in effect wins",
                     "ctxasm budget set --tenant newco --agent helper --field usable_context=2000")
    set_budget.add_argument("file", nargs="?", metavar="FILE.json",
                            help="the budget: a JSON object with the fields of docs/scenario-format.md, 'The budget "
                                 "guideline' ('-' reads standard input); without it the budget in effect for the "
                                 "scope now is the starting point")
    set_budget.add_argument("--field", action="append", default=[], metavar="NAME=JSON",
                            help="change one field, e.g. usable_context=2000, reclaim_unused=true, "
                                 "shares.fact_check.evidence=0.3 (repeatable)")
    for cmd in (show_budget, set_budget):
        tenant_arguments(cmd)
        cmd.add_argument("--user", help="user scope")
        cmd.add_argument("--agent", help="agent scope")
        cmd.add_argument("--thread", help="thread scope")
        cmd.add_argument("--at", help="evaluation time (show) or when it starts to apply (set), ISO 8601 "
                                      "(default now)")
        cmd.add_argument("--json", action="store_true", help="print the budget and every row's standing as JSON")
        cmd.add_argument("--database", help=DATABASE_HELP)
        cmd.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)
    show_budget.add_argument("--intent", default="fact_check", help="budget intent (default fact_check)")

    assemble_cmd = add(
        commands, "assemble", _assemble,
        "assemble one context window, record its manifest, print the request",
        'ctxasm assemble --tenant acme --user jane --agent research-assistant --thread thread_jane_research '
        '--question "Is Helios-RAG still the one to beat?" --intent fact_check --at 2026-09-28T12:00:00 --json')
    tenant_arguments(assemble_cmd)
    assemble_cmd.add_argument("--user", help="user scope")
    assemble_cmd.add_argument("--agent", help="agent scope")
    assemble_cmd.add_argument("--thread", help="thread scope (its recent turns form the volatile tail)")
    assemble_cmd.add_argument("--question", required=True, help="the user's message")
    assemble_cmd.add_argument("--intent", default="fact_check", help="budget intent (default fact_check)")
    assemble_cmd.add_argument("--at", help="evaluation time, ISO 8601 (default now; no offset = UTC)")
    assemble_cmd.add_argument("--model", default="gpt-4.1-mini", help="target model named in the request")
    assemble_cmd.add_argument("--json", action="store_true",
                              help='print {"request", "manifest", "manifest_id"} as one JSON object')
    assemble_cmd.add_argument("--database", help=DATABASE_HELP)
    assemble_cmd.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)

    def scope_arguments(cmd) -> None:
        tenant_arguments(cmd, "; no tool argument can change it")
        cmd.add_argument("--user", help="user scope")
        cmd.add_argument("--agent", help="agent scope")
        cmd.add_argument("--thread", help="thread scope")
        cmd.add_argument("--role", action="append", default=[],
                         help="a role of the caller, checked against each tool's access_policy (repeatable)")
        cmd.add_argument("--database", help=DATABASE_HELP)
        cmd.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)

    mcp_cmd = add(commands, "mcp", _mcp,
                  "serve the Memory Manager over MCP on stdio: tools from toolbox rows, guidelines and persona as "
                  "resources", "ctxasm mcp --tenant acme --user jane --agent research-assistant "
                  "--thread thread_jane_research --role researcher")
    scope_arguments(mcp_cmd)
    mcp_cmd.add_argument("--manifest", help="the caller's current window for expand (default: the thread's latest)")
    mcp_cmd.add_argument("--at", help="evaluation time, ISO 8601 (default now at each call)")

    ask_cmd = add(commands, "ask", _ask,
                  "the agent loop: assemble, call the model (OPENAI_API_KEY) or a recorded --transcript, run tool "
                  "calls over MCP, record every request, result and response",
                  'ctxasm ask --tenant acme --user jane --agent research-assistant --thread thread_jane_research '
                  '--role researcher --question "Is Helios-RAG still the one to beat?" --at 2026-09-28T12:00:00')
    scope_arguments(ask_cmd)
    ask_cmd.add_argument("--question", required=True, help="the user's message")
    ask_cmd.add_argument("--intent", default="fact_check", help="budget intent (default fact_check)")
    ask_cmd.add_argument("--at", help="evaluation time, ISO 8601 (default now; no offset = UTC)")
    ask_cmd.add_argument("--model", default="gpt-4.1-mini", help="the model (default gpt-4.1-mini)")
    ask_cmd.add_argument("--transcript", help="replay a recorded transcript instead of calling the provider "
                         "(db/tests/transcripts)")
    ask_cmd.add_argument("--json", action="store_true", help="print the run as one JSON object")
    ask_cmd.add_argument("--base-url", metavar="URL", help="an OpenAI-compatible server (vLLM, Ollama, LiteLLM; "
                         "default OPENAI_BASE_URL, else api.openai.com)")
    ask_cmd.add_argument("--clarify-answer", metavar="TEXT", help="the user's answer when the model calls the clarify "
                         "tool (without it the tool says the client cannot ask)")

    turn_cmd = add(commands, "add-turn", _add_turn,
                   "add a turn to a thread (user or assistant); the database gives it the thread's next turn_index",
                   'ctxasm add-turn user "Which retriever do we use now?" --tenant acme --user jane '
                   '--agent research-assistant --thread thread_jane_research')
    turn_cmd.add_argument("role", choices=("user", "assistant"), help="who said it: the user or the assistant")
    turn_cmd.add_argument("content", help="the turn's text")
    turn_cmd.add_argument("--name", help="who said it, by name (a person of a group conversation, a named agent; "
                                         "at most 64 characters): a recalled turn's line shows it for the role")
    tenant_arguments(turn_cmd)
    turn_cmd.add_argument("--user", required=True, help="user scope")
    turn_cmd.add_argument("--agent", required=True, help="agent scope")
    turn_cmd.add_argument("--thread", required=True, help="the thread the turn belongs to")
    turn_cmd.add_argument("--at", help="when it was said, ISO 8601 (default now; no offset = UTC)")
    turn_cmd.add_argument("--database", help=DATABASE_HELP)
    turn_cmd.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)

    remember_cmd = add(commands, "remember", _remember,
                       "remember a fact by its identity (subject, predicate): the current value is superseded, or a "
                       "new fact is written; shared with the tenant unless --personal",
                       'ctxasm remember helios_rag beir_ndcg10 "Helios-RAG scores 0.78 nDCG@10 on BEIR." '
                       "--tenant acme --at 2026-09-28T12:00:00")
    remember_cmd.add_argument("subject", help="what the fact is about, e.g. helios_rag")
    remember_cmd.add_argument("predicate", help="which property of it, e.g. beir_ndcg10")
    remember_cmd.add_argument("content", help="the fact, as a sentence")
    tenant_arguments(remember_cmd)
    remember_cmd.add_argument("--user", help="user scope (with --personal: the fact is this user's)")
    remember_cmd.add_argument("--agent", help="agent scope (with --personal: the fact is this agent's)")
    remember_cmd.add_argument("--personal", action="store_true",
                              help="keep the fact to --user and --agent instead of the whole tenant")
    remember_cmd.add_argument("--value-json", metavar="JSON", help="the fact's structured value (content_json)")
    remember_cmd.add_argument("--confidence", type=float, help="confidence between 0 and 1")
    remember_cmd.add_argument("--at", help="valid from, ISO 8601 (default now; no offset = UTC)")
    remember_cmd.add_argument("--database", help=DATABASE_HELP)
    remember_cmd.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)

    summarize_cmd = add(
        commands, "summarize-threads", _summarize_threads,
        "write an episode summary for each thread that has grown or gone quiet since its last one (a new version "
        "when it had one), with the deployment's summarizer: the model CTXASM_SUMMARY_MODEL names, else the offline "
        "extractive one (docs/summaries.md). One pass, for a cron job; --every keeps passing",
        "ctxasm summarize-threads --tenant acme --min-turns 20 --quiet-after 6h --json")
    tenant_arguments(summarize_cmd)
    summarize_cmd.add_argument("--user", help="only this user's threads (the claim's user, when it names one)")
    summarize_cmd.add_argument("--agent", help="only this agent's threads (the claim's agent, when it names one)")
    # The bounds of episodes.Thresholds, checked by argparse: a bad value is a usage error naming the flag (exit 2).
    summarize_cmd.add_argument("--min-turns", type=at_least(1), default=20, metavar="N",
                               help="a thread with N turns its summary does not cover is due (default 20)")
    summarize_cmd.add_argument("--quiet-after", default="6h", metavar="DURATION",
                               help="so is one whose last turn is this old (default 6h) ...")
    summarize_cmd.add_argument("--min-quiet-turns", type=at_least(1), default=4, metavar="N",
                               help="... with at least N turns not covered (default 4)")
    summarize_cmd.add_argument("--summary-tokens", type=at_least(16), default=300, metavar="N",
                               help="the longest summary, in tokens (default 300)")
    summarize_cmd.add_argument("--max-threads", type=at_least(1), default=100, metavar="N",
                               help="summarize at most N threads per pass, busiest first (default 100)")
    summarize_cmd.add_argument("--at", help="measure quiet from this time, ISO 8601 (default now)")
    summarize_cmd.add_argument("--every", metavar="DURATION",
                               help="background mode: a pass, then another after this long (e.g. 15m), until "
                                    "interrupted; a claim given with --claim or CTXASM_CLAIM must outlive it")
    summarize_cmd.add_argument("--json", action="store_true", help="print each pass as one JSON object")
    summarize_cmd.add_argument("--database", help=DATABASE_HELP)
    summarize_cmd.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)

    replay_cmd = add(
        commands, "replay", _replay,
        "rebuild a recorded window from its manifest and check it: match (exit 0), mismatch (5), unavailable (6)",
        "ctxasm replay manifest_0123abcd --tenant acme --json")
    replay_cmd.add_argument("manifest_id", help="the manifest id printed by `ctxasm assemble`")
    tenant_arguments(replay_cmd)
    replay_cmd.add_argument("--json", action="store_true", help="print the result as one JSON object")
    replay_cmd.add_argument("--database", help=DATABASE_HELP)
    replay_cmd.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)

    erase_cmd = add(commands, "erase", _erase,
                    "erase a memory and what was derived from it (compressions, recorded requests); "
                    "windows that used it can no longer be replayed",
                    "ctxasm erase --tenant acme summary context_july_summary")
    erase_cmd.add_argument("memory_type", help="memory type, e.g. entity, summary, conversation")
    erase_cmd.add_argument("memory_id", help="row id")
    tenant_arguments(erase_cmd)
    erase_cmd.add_argument("--vacuum", action="store_true",
                           help="then VACUUM (ANALYZE) the tenant's partitions it touched and rebuild their text and "
                           "vector indexes, as the owner, so dead row versions, planner statistics and index entries "
                           "holding the erased text go too; exits 1 when an older open transaction kept versions")
    erase_cmd.add_argument("--json", action="store_true", help="print the report as one JSON object")
    erase_cmd.add_argument("--database", help=DATABASE_HELP)
    erase_cmd.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)

    inventory = add(commands, "inventory", _inventory,
                    "count a tenant's memory rows through a tenant-scoped application connection",
                    "ctxasm inventory --tenant acme")
    tenant_arguments(inventory)
    inventory.add_argument("--database", help=DATABASE_HELP)
    inventory.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)

    show_cmd = add(commands, "show", _show,
                   "print a recorded manifest, provider request (the request as sent), model response or tool result "
                   "by its id, as text",
                   "ctxasm show request_0123abcd --tenant acme")
    show_cmd.add_argument("id", metavar="ID", help="an id printed by `ctxasm assemble` or recorded by `ctxasm ask` "
                          "(ask --json lists them)")
    tenant_arguments(show_cmd, "; another tenant's records are not found")
    show_cmd.add_argument("--database", help=DATABASE_HELP)
    show_cmd.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)

    inspect_cmd = add(commands, "inspect", _inspect,
                      "show what the model saw: a recorded manifest (the literal request, every token of the budget, "
                      "why each row was left out) as text or as one self-contained HTML page; or a recorded provider "
                      "request, model response or tool result by its id",
                      "ctxasm inspect manifest_0123abcd --tenant acme --html jane.html --open\n"
                      "         ctxasm inspect manifest_0123abcd --tenant acme --why entity:fact_helios_rag_beir_ndcg10")
    inspect_cmd.add_argument("manifest_id", metavar="ID", help="a manifest id (printed by assemble), or the id of a "
                             "provider request, model response or tool result recorded by `ctxasm ask`")
    tenant_arguments(inspect_cmd, "; another tenant's manifest is not found")
    inspect_cmd.add_argument("--html", metavar="OUT.html", help="write the page to this file instead of printing text")
    inspect_cmd.add_argument("--open", action="store_true", help="open the page in the default browser (without "
                             "--html it is written to the temporary directory)")
    inspect_cmd.add_argument("--diff", metavar="OTHER_ID", help="compare with another manifest of the same tenant")
    inspect_cmd.add_argument("--why", metavar="ROW", help="why is this row (not) in the window: TYPE:ID, "
                             "TYPE:ID:VERSION or a citation id (M12, or a stable M012345678901)")
    inspect_cmd.add_argument("--request", action="store_true", help="print the literal request, message by message")
    inspect_cmd.add_argument("--database", help=DATABASE_HELP)
    inspect_cmd.add_argument("--engine", choices=ENGINES, help=ENGINE_HELP)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name in ("engine", "database"):
        setattr(args, name, getattr(args, name, None) or getattr(args, f"global_{name}"))
    try:
        return args.handler(args)
    except CtxasmError as exc:
        _log(f"ctxasm: error: {exc}")
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
