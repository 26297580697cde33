"""Deployment: bootstrap the roles and database, then `liquibase update` as the owner role."""

from __future__ import annotations

from ctxasm.errors import DatabaseUnavailable
from ctxasm.local import liquibase, pgconn


class DeploymentFailed(DatabaseUnavailable):
    code = "deployment_failed"


def install_claim_key(target: pgconn.Target) -> None:
    """Give the database the claim key of this deployment's launch configuration (made once, kept 0600 in the
    state directory, or CTXASM_CLAIM_KEY): set_tenant verifies claims with it; the trusted side mints with it."""
    from ctxasm import claims

    with pgconn.connect(target, pgconn.owner_login()) as connection:
        connection.execute("SELECT ctx_admin.set_claim_key(in_key => %s)", (claims.ensure_key(),))
        connection.commit()


def deploy_postgres(target: pgconn.Target, *, fresh: bool = False, app_instances: tuple[str, ...] = ()) -> str:
    """Bring `target` to the head of the master changelog (dropping it first if `fresh`), then install the claim
    key; returns a summary. `app_instances` adds a login role for each named application instance."""
    if fresh:
        pgconn.drop_database(target)
    notes = pgconn.bootstrap(target, app_instances)
    owner = pgconn.owner_login()
    result = liquibase.run(
        [f"--liquibase-schema-name={pgconn.LIQUIBASE_SCHEMA}", "update"],
        url=target.jdbc_url(), username=owner.user, password=owner.password,
    )
    if result.returncode != 0:
        raise DeploymentFailed(f"liquibase update on {target.describe()} failed: {liquibase.error_text(result)}")
    install_claim_key(target)
    counts = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition(":") for line in result.stdout.splitlines())
        if key.strip() in ("Run", "Previously run", "Filtered out")
    )
    return (f"deployed {target.describe()}: {counts.get('Run', '0')} changesets run, "
            f"{counts.get('Previously run', '0')} already applied, "
            f"{counts.get('Filtered out', '0')} for the other engine; claim key installed; application logins: "
            f"{', '.join(sorted(pgconn.app_logins()))} (passwords in the state directory's roles.json)"
            + "".join(f"\nnote: {note}" for note in notes))
