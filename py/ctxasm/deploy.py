"""Deployment: bootstrap the roles and database, then `liquibase update` as the owner role."""

from __future__ import annotations

from . import liquibase, pgconn
from .errors import DatabaseUnavailable


class DeploymentFailed(DatabaseUnavailable):
    code = "deployment_failed"


def deploy_postgres(target: pgconn.Target) -> str:
    """Bring `target` to the head of the master changelog; returns Liquibase's summary line."""
    pgconn.bootstrap(target)
    owner = pgconn.owner_login()
    result = liquibase.run(
        [f"--liquibase-schema-name={pgconn.LIQUIBASE_SCHEMA}", "update"],
        url=target.jdbc_url(), username=owner.user, password=owner.password,
    )
    if result.returncode != 0:
        raise DeploymentFailed(f"liquibase update on {target.describe()} failed: {liquibase.error_text(result)}")
    summary = [line for line in result.stdout.splitlines() if "changeset" in line.lower() or "Run:" in line]
    return "; ".join(summary[-4:]) or "up to date"
