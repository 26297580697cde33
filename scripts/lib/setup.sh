# Sourced by scripts/test and scripts/demo: everything a fresh machine needs, idempotent.
#   - Java 17+ for Liquibase (installed from Debian's packages when missing and we are root)
#   - a virtual environment .venv with the pinned Python dependencies (py/pyproject.toml)
#   - the embedded PostgreSQL started (unless CTXASM_PG_DSN points at another server)
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

ensure_java() {
    if command -v java >/dev/null 2>&1; then
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing Java 17 for Liquibase (openjdk-17-jre-headless)"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
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
        say "installing Chromium for the browser test (Debian package chromium)"
        apt-get update -qq >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 \
            || say "Chromium did not install: the browser test will be skipped"
    fi
}

ensure_venv() {
    local stamp="$VENV/.ctxasm-deps" want
    want="$(sha256sum "$CTXASM_ROOT/py/pyproject.toml" | cut -d' ' -f1)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$VENV/bin/ctxasm" ]; then
        return
    fi
    say "preparing the virtual environment in .venv (pinned dependencies from py/pyproject.toml)"
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' >&2 || true
    "$VENV/bin/python" -m pip install -q -e "$CTXASM_ROOT/py[dev]" 2>&1 \
        | grep -vE '^WARNING: Location|BuildBackendWarning|^ *(!!|\*+|Please be careful|name as your|with strategy|$)' >&2 || true
    "$VENV/bin/python" -c "import ctxasm.local.pgcluster, ctxasm.local.liquibase, psycopg, tiktoken; ctxasm.local.pgcluster.bin_dir()" \
        || { say "the Python dependencies did not install"; exit 2; }
    echo "$want" > "$stamp"
}

ensure_database_server() {
    if [ -n "${CTXASM_PG_DSN:-}" ]; then
        say "using the PostgreSQL server in CTXASM_PG_DSN"
    else
        "$VENV/bin/ctxasm" db up >&2
    fi
}

ctxasm_setup() {
    ensure_java
    ensure_venv
    ensure_database_server
}
