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
        from ctxasm.errors import ConfigError

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
    #: CTXASM_ENGINE: postgresql (default) or oracle (ctxasm.engines.registry)
    engine: str | None = None
    #: the Oracle schema owner (loading, purging) and the schema holding the CTX_* packages
    oracle_owner_dsn: str | None = None
    oracle_schema: str | None = None
    #: statement_timeout of the application role (a PostgreSQL duration: "30s", "2min", "500ms")
    app_statement_timeout: str = "30s"
    #: idle_in_transaction_session_timeout of the application role (a duration)
    app_idle_timeout: str = "60s"
    #: CONNECTION LIMIT of each application login role (one per application instance)
    app_connection_limit: int = 50
    #: the application instance this process logs in as: login role ctxasm_app_<name> (CTXASM_APP_LOGIN)
    app_login: str = "default"

    @classmethod
    def read(cls) -> "Environment":
        return cls(
            pg_dsn=os.environ.get("CTXASM_PG_DSN") or None,
            pg_database=os.environ.get("CTXASM_PG_DATABASE", "ctxasm"),
            oracle_dsn=os.environ.get("CTXASM_ORACLE_DSN") or None,
            engine=os.environ.get("CTXASM_ENGINE") or None,
            oracle_owner_dsn=os.environ.get("CTXASM_ORACLE_OWNER_DSN") or None,
            oracle_schema=os.environ.get("CTXASM_ORACLE_SCHEMA") or None,
            app_statement_timeout=_duration(os.environ.get("CTXASM_APP_STATEMENT_TIMEOUT") or "30s"),
            app_idle_timeout=_duration(os.environ.get("CTXASM_APP_IDLE_TIMEOUT") or "60s",
                                       "CTXASM_APP_IDLE_TIMEOUT"),
            app_connection_limit=_count(os.environ.get("CTXASM_APP_CONNECTION_LIMIT") or "50",
                                        "CTXASM_APP_CONNECTION_LIMIT"),
            app_login=_instance(os.environ.get("CTXASM_APP_LOGIN") or "default"),
        )


def _duration(text: str, name: str = "CTXASM_APP_STATEMENT_TIMEOUT") -> str:
    if not re.fullmatch(r"[1-9]\d*\s*(ms|s|min|h)?", text.strip()):
        from ctxasm.errors import ConfigError

        raise ConfigError(f"config_error: {name} {text[:40]!r} is not a duration like 30s, 2min or 500ms "
                          "(and not 0: a limit of none is no limit)")
    return text.strip()


def _count(text: str, name: str) -> int:
    if not re.fullmatch(r"[1-9]\d{0,4}", text.strip()):
        from ctxasm.errors import ConfigError

        raise ConfigError(f"config_error: {name} {text[:40]!r} is not a number from 1 to 99999")
    return int(text)


def _instance(text: str) -> str:
    if not re.fullmatch(r"[a-z0-9_]{1,40}", text):  # ctxasm.local.lockdown.login_role asks the same
        from ctxasm.errors import ConfigError

        raise ConfigError(f"config_error: CTXASM_APP_LOGIN {text[:40]!r} must be 1..40 of a-z, 0-9 and _")
    return text
