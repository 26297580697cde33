"""One Memory per process: the engine (ctxasm.engines.registry), a pool of application connections, and the
question embedding, loaded once on first use (or at once with `warm=True`)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from ctxasm.api.session import Session, require_text
from ctxasm.errors import InvalidArgument
from ctxasm.claims import ClaimSource, FixedClaim, launch_claims
from ctxasm.engines.pool import ConnectionPool
from ctxasm.engines.registry import OWNER, Engine, as_engine, connected_store, open_engine

DEFAULT_POOL_SIZE = 4


class Memory:
    def __init__(self, engine: Engine | str | None = None, *, database: str | None = None,
                 pool_size: int = DEFAULT_POOL_SIZE):
        self.engine = open_engine(engine, database=database) if engine is None or isinstance(engine, str) \
            else as_engine(engine)
        self.pool = ConnectionPool(self.engine.connect, size=pool_size)

    @classmethod
    def open(cls, engine: Engine | str | None = None, *, database: str | None = None,
             pool_size: int = DEFAULT_POOL_SIZE, warm: bool = False) -> Memory:
        """A Memory over the engine the settings name (CTXASM_ENGINE, its DSN); `warm` loads the question
        embedding now instead of at the first call that needs it."""
        memory = cls(engine, database=database, pool_size=pool_size)
        if warm:
            memory.warm()
        return memory

    def warm(self) -> None:
        """Load the models this process will use (once per process, however many Memory objects)."""
        from ctxasm.ml import embedding

        embedding.embed_one("warm up")

    def session(self, tenant_id: str, *, user_id: str | None = None, agent_id: str | None = None,
                thread_id: str | None = None, roles: tuple[str, ...] = (), claim: str | None = None) -> Session:
        """A caller's session. `claim` is a signed tenant claim (`ctxasm claim`, CTXASM_CLAIM); without one the
        process mints claims with the deployment's key, scoped to the user and agent (the trusted side). A claim
        for another tenant, or one that has expired, is refused at once with InvalidClaim, as the database would
        refuse it (one message for every refusal)."""
        require_text(tenant_id=tenant_id)
        for name, value in (("user_id", user_id), ("agent_id", agent_id), ("thread_id", thread_id)):
            if value is not None:
                require_text(**{name: value})
        if isinstance(roles, str) or not all(isinstance(role, str) for role in roles):
            raise InvalidArgument("invalid_argument: roles must be a tuple of role names, e.g. ('researcher',)")
        token = claim
        scoped: ClaimSource
        shared: ClaimSource
        if token:
            scoped = shared = FixedClaim(token)
            scoped.claim_for(tenant_id)
        else:
            scoped = launch_claims(None, user_id=user_id, agent_id=agent_id)
            shared = launch_claims(None)
        return Session(self.engine, self.pool, tenant_id, user_id, agent_id, thread_id, tuple(roles), scoped, shared)

    def load(self, path: str | Path, *, upsert: bool = False) -> Any:
        """Load a scenario file as the schema owner (docs/scenario-format.md); returns the load report. `upsert`
        writes only what differs from what is stored (a new version of a changed memory), so a second load of
        the same file writes nothing; an erased memory in the file is refused, naming it and its tenant."""
        from ctxasm.services import load

        return load.load_file(self.engine, path, upsert=upsert)

    def create_tenant(self, tenant_id: str, display_name: str | None = None, *,
                      at: datetime | str | None = None) -> Any:
        """Register a tenant with the default context budget (the article's numbers, reclaim_unused on) and the
        default memory instructions, as the schema owner, so its first window assembles at once. `at` (datetime
        or ISO 8601; default now) is when the rows start to apply. Returns the load report."""
        from ctxasm.services.assemble import parse_time
        from ctxasm.services.tenants import create_tenant

        when = at if isinstance(at, datetime) else parse_time(at, name="at")
        with self.owner_store() as store:
            return create_tenant(store, tenant_id, display_name or tenant_id, when)

    def purge_tenant(self, tenant_id: str) -> int:
        """Remove a tenant: every row of every memory type, their history and its registration, as the schema
        owner (offboarding; nothing is kept to replay its windows with). Returns the rows removed, 0 for a tenant
        the database does not have."""
        from ctxasm.services.tenants import purge_tenant

        with self.owner_store() as store:
            return purge_tenant(store, tenant_id)

    def owner_store(self):
        """A store on an owner connection of its own (a context manager): tenant registration and purging."""
        return connected_store(self.engine, role=OWNER)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
