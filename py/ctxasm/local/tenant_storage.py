"""The operator class that keys every tenant partition by an opaque storage slot, installed by the admin.

A LIST partition's bound is the key value itself, and the catalog (pg_class.relpartbound) is readable by every
role: `FOR VALUES IN ('acme')` lists the tenants. So the memory tables and their histories are HASH-partitioned
by tenant_id through an operator class of our own whose "hash" of a tenant id is the random slot the tenant
got at registration (ctxasm.ctx_tenant.storage_slot, owner only). A bound then reads
`FOR VALUES WITH (modulus 8192, remainder 4242)`: nothing about the tenant. The operator class keeps the
ordinary text `=` as its equality operator, so every read that says `tenant_id = $1` still prunes to the
tenant's partition (at plan time for a constant, at executor start for a parameter), and every index keeps
leading with tenant_id.

PostgreSQL lets only a superuser create an operator class. The admin of the embedded cluster is one; an
external server's admin may not be: then nothing is installed, the deployment notes it, and the partitions stay
LIST-partitioned by tenant id (docs/security.md).
"""

from __future__ import annotations

import psycopg
from psycopg import sql

SCHEMA = "ctxasm_storage"
OPCLASS = f"{SCHEMA}.tenant_slot_ops"

#: PostgreSQL combines the hash of a one-column key as hash_combine64(0, h) = h + this constant (mod 2^64)
#: before it takes the remainder, so the function returns slot - constant to make the remainder the slot.
#: ctx_admin.register_tenant checks the result with satisfies_hash_partition, so a server that combined
#: differently would refuse to register rather than misplace rows.
_HASH_COMBINE_CONSTANT = 5305509591434766563

#: VOLATILE, though a tenant's slot never changes: PL/pgSQL runs a volatile function's query under a snapshot
#: of its own, which sees the ctx_tenant row a registration wrote earlier in the same routine; an IMMUTABLE
#: one would read the caller's snapshot, which the planner may have taken before that row existed.
_FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION {SCHEMA}.tenant_slot_hash(in_tenant_id text, in_seed bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- The tenant's slot (0, which no partition has, for a tenant that is not registered), shifted so that
    -- PostgreSQL's remainder of the combined hash is the slot. in_seed is PostgreSQL's partition seed: unused.
    RETURN coalesce((SELECT t.storage_slot FROM ctxasm.ctx_tenant AS t WHERE t.tenant_id = in_tenant_id), 0)::bigint
           - {_HASH_COMBINE_CONSTANT};
END;
$$;
CREATE OR REPLACE FUNCTION {SCHEMA}.tenant_slot(in_tenant_id text) RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN coalesce((SELECT t.storage_slot FROM ctxasm.ctx_tenant AS t WHERE t.tenant_id = in_tenant_id), 0);
END;
$$;
REVOKE ALL ON FUNCTION {SCHEMA}.tenant_slot_hash(text, bigint), {SCHEMA}.tenant_slot(text) FROM PUBLIC;
"""

_OPCLASS = f"""
CREATE OPERATOR CLASS {OPCLASS} FOR TYPE text USING hash AS
    OPERATOR 1 = (text, text),
    FUNCTION 1 {SCHEMA}.tenant_slot(text),
    FUNCTION 2 {SCHEMA}.tenant_slot_hash(text, bigint)
"""


def install_slot_opclass(connection: psycopg.Connection, owner: str) -> str | None:
    """In the connected database, as admin (autocommit): the schema, the two support functions and the operator
    class; idempotent. Returns a note when the admin may not create an operator class (not a superuser)."""
    superuser = connection.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if not (superuser and superuser[0]):
        return ("partition bounds name tenant ids (LIST by tenant_id): only a superuser admin can install the "
                f"operator class {OPCLASS} that keys them by opaque slots")
    with connection.transaction():
        connection.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        connection.execute(f"REVOKE ALL ON SCHEMA {SCHEMA} FROM PUBLIC")
        connection.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(SCHEMA),
                                                                            sql.Identifier(owner)))
        # ctxasm.ctx_tenant may not exist yet (a fresh database): PL/pgSQL resolves it when it first runs.
        connection.execute(_FUNCTIONS)
        exists = connection.execute(
            "SELECT 1 FROM pg_opclass AS c JOIN pg_am AS a ON a.oid = c.opcmethod "
            "WHERE a.amname = 'hash' AND c.opcname = 'tenant_slot_ops' AND c.opcnamespace = %s::regnamespace",
            (SCHEMA,)).fetchone()
        if not exists:
            connection.execute(_OPCLASS)
    return None
