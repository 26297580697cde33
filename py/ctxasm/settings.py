"""Where ctxasm keeps its state, and the environment variables that change it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

# The repository root when running from a checkout (py/ctxasm/settings.py -> repo).
_CHECKOUT_ROOT = Path(__file__).resolve().parents[2]


def project_root() -> Path:
    """The checkout holding liquibase/ and db/ (CTXASM_ROOT overrides)."""
    root = Path(os.environ.get("CTXASM_ROOT", _CHECKOUT_ROOT))
    if not (root / "liquibase" / "changelog-master.yaml").is_file():
        from .errors import ConfigError

        raise ConfigError(
            f"CTXASM_ROOT={root} holds no liquibase/changelog-master.yaml; run from a ctxasm checkout"
        )
    return root


def state_dir() -> Path:
    """Private state: the embedded cluster, credentials, caches (CTXASM_HOME, default <root>/.ctxasm)."""
    home = os.environ.get("CTXASM_HOME")
    return Path(home) if home else _CHECKOUT_ROOT / ".ctxasm"


@dataclass(frozen=True)
class Environment:
    pg_dsn: str | None
    pg_database: str
    oracle_dsn: str | None
    #: statement_timeout of the application role (a PostgreSQL duration: "30s", "2min", "500ms")
    app_statement_timeout: str = "30s"

    @classmethod
    def read(cls) -> "Environment":
        return cls(
            pg_dsn=os.environ.get("CTXASM_PG_DSN") or None,
            pg_database=os.environ.get("CTXASM_PG_DATABASE", "ctxasm"),
            oracle_dsn=os.environ.get("CTXASM_ORACLE_DSN") or None,
            app_statement_timeout=_duration(os.environ.get("CTXASM_APP_STATEMENT_TIMEOUT") or "30s"),
        )


def _duration(text: str) -> str:
    if not re.fullmatch(r"\d+\s*(ms|s|min|h)?", text.strip()):
        from .errors import ConfigError

        raise ConfigError(f"config_error: CTXASM_APP_STATEMENT_TIMEOUT {text[:40]!r} is not a duration like 30s, "
                          "2min or 500ms")
    return text.strip()
