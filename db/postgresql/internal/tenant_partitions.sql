--liquibase formatted sql logicalFilePath:db/packages/postgresql/0012_ctxasm_partitions.sql
-- A tenant's storage: one partition per tenant of every memory table and of every history table, named by a
-- keyed hash of the tenant id and bounded by an opaque slot, so the catalog (readable by every role) lists no
-- tenant id. The partitions are HASH-partitioned by tenant_id through the operator class the admin installs
-- (py/ctxasm/local/tenant_storage.py), whose hash of a tenant id is the tenant's random storage slot: the bound
-- reads FOR VALUES WITH (MODULUS 8192, REMAINDER <slot>), and every read that names tenant_id still prunes to
-- the tenant's partition. Where the admin could not install it (not a superuser) the tables stay LIST-
-- partitioned by tenant_id. A tenant is registered without blocking anyone: its partitions are created as
-- tables of their own and then attached, which takes SHARE UPDATE EXCLUSIVE on the parents, a lock no read or
-- write of another tenant conflicts with.

--changeset ctxasm:pg-internal-tenant-storage-key dbms:postgresql runOnChange:true splitStatements:false
--comment: the suffix of a tenant's partitions: keyed, so the catalog (readable by every role) does not list
--comment: tenant ids, and stable, so registering a tenant again finds its partitions
CREATE OR REPLACE FUNCTION ctxasm.tenant_storage_key(in_tenant_id varchar) RETURNS varchar
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT 't' || left(encode(ctxasm.keyed_mac('session', convert_to('partition|' || in_tenant_id, 'UTF8')), 'hex'), 16)
$$;
REVOKE ALL ON FUNCTION ctxasm.tenant_storage_key(varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.tenant_storage_key(varchar);

--changeset ctxasm:pg-internal-tenant-storage-slots dbms:postgresql splitStatements:false
--comment: each tenant's storage slot, drawn at random when it is first registered: the remainder its
--comment: partitions are bounded by. Kept by storage key (no tenant id), so a tenant purged and registered
--comment: again finds its partitions, which stay; ctx_tenant carries the slot of each registered tenant for the
--comment: operator class to read. Owner only.
CREATE TABLE ctxasm.tenant_storage (
    storage_key varchar(32) PRIMARY KEY,
    slot        integer     NOT NULL UNIQUE CHECK (slot BETWEEN 1 AND 8191)
);
REVOKE ALL ON ctxasm.tenant_storage FROM PUBLIC;
ALTER TABLE ctxasm.ctx_tenant ADD COLUMN storage_slot integer UNIQUE CHECK (storage_slot BETWEEN 1 AND 8191);
--rollback ALTER TABLE ctxasm.ctx_tenant DROP COLUMN storage_slot; DROP TABLE ctxasm.tenant_storage;

--changeset ctxasm:pg-internal-storage-modulus dbms:postgresql runOnChange:true splitStatements:false
--comment: the modulus of every hash partition bound: 8191 tenants at most (slot 0 is no tenant's). PostgreSQL
--comment: keeps an array of this many entries per partitioned table in each backend that opens it (32 KB).
--comment: More tenants later: partitions may be added with a multiple of it, 16384, next to the existing ones.
CREATE OR REPLACE FUNCTION ctxasm.storage_modulus() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT 8192
$$;
REVOKE ALL ON FUNCTION ctxasm.storage_modulus() FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.storage_modulus();

--changeset ctxasm:pg-internal-storage-slot dbms:postgresql runOnChange:true splitStatements:false
--comment: the tenant's storage slot: the one its storage key has, or a free one drawn at random (one drawing at a
--comment: time: the table lock is held by registrations only, never by a read or write of memory)
CREATE OR REPLACE FUNCTION ctxasm.storage_slot(in_tenant_id varchar) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_key  varchar := ctxasm.tenant_storage_key(in_tenant_id);
    l_slot integer;
BEGIN
    SELECT s.slot INTO l_slot FROM ctxasm.tenant_storage AS s WHERE s.storage_key = l_key;
    IF l_slot IS NOT NULL THEN
        RETURN l_slot;
    END IF;
    LOCK TABLE ctxasm.tenant_storage IN SHARE ROW EXCLUSIVE MODE;
    SELECT s.slot INTO l_slot FROM ctxasm.tenant_storage AS s WHERE s.storage_key = l_key;
    IF l_slot IS NULL THEN
        SELECT g.slot INTO l_slot
          FROM generate_series(1, ctxasm.storage_modulus() - 1) AS g (slot)
         WHERE NOT EXISTS (SELECT 1 FROM ctxasm.tenant_storage AS s WHERE s.slot = g.slot)
         ORDER BY random()
         LIMIT 1;
        IF l_slot IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'program_limit_exceeded', MESSAGE = format(
                'every one of the %s storage slots is taken: partitions with modulus %s are needed',
                ctxasm.storage_modulus() - 1, 2 * ctxasm.storage_modulus());
        END IF;
        INSERT INTO ctxasm.tenant_storage (storage_key, slot) VALUES (l_key, l_slot);
    END IF;
    RETURN l_slot;
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.storage_slot(varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.storage_slot(varchar);

--changeset ctxasm:pg-internal-partition-bound dbms:postgresql runOnChange:true splitStatements:false
--comment: the bound of the tenant's partition of one table, by how the table is partitioned: its slot (HASH
--comment: through the slot operator class) or its id (LIST, where the operator class could not be installed)
CREATE OR REPLACE FUNCTION ctxasm.partition_bound(in_table varchar, in_tenant_id varchar) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_strategy char;
    l_slot     integer;
BEGIN
    SELECT p.partstrat INTO l_strategy
      FROM pg_catalog.pg_partitioned_table AS p
     WHERE p.partrelid = format('ctxasm.%I', in_table)::regclass;
    IF l_strategy = 'l' THEN
        RETURN format('FOR VALUES IN (%L)', in_tenant_id);
    END IF;
    SELECT t.storage_slot INTO l_slot FROM ctxasm.ctx_tenant AS t WHERE t.tenant_id = in_tenant_id;
    IF l_strategy <> 'h' OR l_slot IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state', MESSAGE = format(
            'ctxasm.%I has no tenant partitions by slot or %s has no storage slot', in_table,
            ctxasm.quoted(in_tenant_id));
    END IF;
    RETURN format('FOR VALUES WITH (MODULUS %s, REMAINDER %s)', ctxasm.storage_modulus(), l_slot);
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.partition_bound(varchar, varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.partition_bound(varchar, varchar);

--changeset ctxasm:pg-internal-row-storage-options dbms:postgresql runOnChange:true splitStatements:false
--comment: the storage options of every table that holds memory rows (a tenant's partitions, or the tables
--comment: themselves where they are not partitioned): a row stays whole in its heap page up to 8,160 bytes, the
--comment: most PostgreSQL allows (by default values are moved out of line, into the TOAST table, once a row
--comment: passes about 2 kB). Every read of a window reads whole rows by key or by the text index: a knowledge
--comment: base chunk with its text, tsvector and vector is about 3.4 kB, and out of line its text and tsvector
--comment: cost a TOAST lookup each (the lexical probe read 1,000 chunks of a 1e6-row tenant in 4.7 ms, 1.9 ms
--comment: with the rows whole; docs/assembly.md, "Speed").
CREATE OR REPLACE FUNCTION ctxasm.row_storage_options() RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT 'toast_tuple_target = 8160'::text
$$;
REVOKE ALL ON FUNCTION ctxasm.row_storage_options() FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.row_storage_options();

--changeset ctxasm:pg-internal-add-tenant-partition dbms:postgresql runOnChange:true splitStatements:false
--comment: the tenant's partition of one table, made without a lock that waits behind, or blocks, another
--comment: tenant's work: CREATE TABLE (LIKE the parent) as a table of its own, then ATTACH PARTITION, which takes
--comment: SHARE UPDATE EXCLUSIVE on the parent (CREATE TABLE ... PARTITION OF would take ACCESS EXCLUSIVE, and
--comment: queue every other tenant's reads behind an idle transaction's). The parent's indexes (btree, GIN,
--comment: HNSW) are built on the empty table as it is attached. A lock still held elsewhere (another
--comment: registration, a VACUUM of the parent) is waited for at most lock_timeout, then tried again.
CREATE OR REPLACE FUNCTION ctxasm.add_tenant_partition(in_table varchar, in_tenant_id varchar) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET lock_timeout = '1s' AS $$
DECLARE
    co_attempts constant integer := 5;
    l_partition text := in_table || '_' || ctxasm.tenant_storage_key(in_tenant_id);
    l_attached  boolean;
BEGIN
    FOR l_attempt IN 1 .. co_attempts LOOP
        BEGIN
            SELECT c.relispartition INTO l_attached
              FROM pg_catalog.pg_class AS c WHERE c.oid = to_regclass(format('ctxasm.%I', l_partition));
            IF l_attached IS NULL THEN
                EXECUTE format('CREATE TABLE ctxasm.%I (LIKE ctxasm.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                               'INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMPRESSION) WITH (%s)', l_partition,
                               in_table, ctxasm.row_storage_options());
            END IF;
            IF NOT coalesce(l_attached, FALSE) THEN
                EXECUTE format('ALTER TABLE ctxasm.%I ATTACH PARTITION ctxasm.%I %s', in_table, l_partition,
                               ctxasm.partition_bound(in_table, in_tenant_id));
            END IF;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            IF l_attempt = co_attempts THEN
                RAISE EXCEPTION USING ERRCODE = 'lock_not_available', MESSAGE = format(
                    'the tenant''s partition of ctxasm.%I could not be attached: another session held a conflicting '
                    'lock on it (a registration, a VACUUM or ANALYZE of the table) through %s attempts; try again',
                    in_table, co_attempts);
            END IF;
            PERFORM pg_sleep(0.05 * l_attempt);
        END;
    END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.add_tenant_partition(varchar, varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.add_tenant_partition(varchar, varchar);

--changeset ctxasm:pg-internal-add-tenant-partitions dbms:postgresql runOnChange:true splitStatements:false
--comment: the tenant's partition of every memory table and of its history (idempotent: a registered tenant's
--comment: partitions are found by name, and nothing is locked). Every read goes through the parent, whose
--comment: policies apply; no role but the owner may name a partition. The partition itself has no policy, so its
--comment: planner statistics stay readable to the owner's selection code (pg_stats hides them where RLS is active).
CREATE OR REPLACE FUNCTION ctxasm.add_tenant_partitions(in_tenant_id varchar) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_table text;
BEGIN
    FOR l_table IN SELECT t.name
                     FROM ctxasm.memory_type AS m,
                          LATERAL (VALUES (m.table_name, 1), (m.table_name || '_history', 2)) AS t (name, part)
                    ORDER BY t.part, m.ordinal LOOP
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_partitioned_table AS p
                    WHERE p.partrelid = format('ctxasm.%I', l_table)::regclass) THEN
            PERFORM ctxasm.add_tenant_partition(l_table, in_tenant_id);
        END IF;
    END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.add_tenant_partitions(varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.add_tenant_partitions(varchar);

--changeset ctxasm:pg-internal-tenant-partition dbms:postgresql runOnChange:true splitStatements:false
--comment: the name of the tenant's partition of each of in_tables, which may not exist (tenant_partitions), or
--comment: of one table (tenant_partition). One window names a dozen partitions: asked for together, the keyed
--comment: hash of the tenant is computed once, not once a name.
CREATE OR REPLACE FUNCTION ctxasm.tenant_partitions(in_tenant_id varchar, in_tables varchar[])
RETURNS TABLE (table_name varchar, partition_name varchar)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.table_name, (t.table_name || '_' || k.storage_key)::varchar
      -- OFFSET 0 keeps the key a subquery's output, computed once.
      FROM (SELECT ctxasm.tenant_storage_key(in_tenant_id) AS storage_key OFFSET 0) AS k
     CROSS JOIN unnest(in_tables) WITH ORDINALITY AS t(table_name, ord)
     ORDER BY t.ord
$$;
REVOKE ALL ON FUNCTION ctxasm.tenant_partitions(varchar, varchar[]) FROM PUBLIC;
CREATE OR REPLACE FUNCTION ctxasm.tenant_partition(in_tenant_id varchar, in_table varchar) RETURNS varchar
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT p.partition_name FROM ctxasm.tenant_partitions(in_tenant_id, ARRAY[in_table]) AS p
$$;
REVOKE ALL ON FUNCTION ctxasm.tenant_partition(varchar, varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.tenant_partition(varchar, varchar); DROP FUNCTION ctxasm.tenant_partitions(varchar, varchar[]);

--changeset ctxasm:pg-internal-rebuild-tenant-table dbms:postgresql runOnChange:true splitStatements:false
--comment: one memory or history table rebuilt under another partitioning: 'slot' (HASH by the slot operator
--comment: class), 'list' (LIST by tenant_id) or 'none' (one table). A partition keeps its rows and indexes: it is
--comment: detached and attached to the new parent (an empty one is dropped, and made again below); the rows of
--comment: a table that was not partitioned are copied. Keys, indexes, triggers, row level security and policies
--comment: are made again as they were, under the same names. Views and functions that depend on the table must
--comment: be gone first (ctxasm.rebuild_tenant_tables keeps and remakes them). Deployment only: it locks the table.
CREATE OR REPLACE FUNCTION ctxasm.rebuild_tenant_table(in_table varchar, in_mode varchar) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_unregistered constant text :=
        '%s holds rows of a tenant that is not registered: register it again or purge the rows, then deploy again';
    l_old        regclass := format('ctxasm.%I', in_table)::regclass;
    l_kept       text := in_table || '__rebuilt';
    l_strategy   char;
    l_clause     text := CASE in_mode
                             WHEN 'slot' THEN 'PARTITION BY HASH (tenant_id ctxasm_storage.tenant_slot_ops)'
                             WHEN 'list' THEN 'PARTITION BY LIST (tenant_id)'
                             WHEN 'none' THEN '' END;
    l_keys       text[];
    l_indexes    text[];
    l_triggers   text[];
    l_policies   text[];
    l_rls        boolean;
    l_force      boolean;
    l_moved      text[] := '{}';
    l_partition  record;
    l_tenant     varchar;
    l_columns    text;
    l_statement  text;
BEGIN
    IF l_clause IS NULL THEN
        RAISE EXCEPTION 'rebuild_tenant_table: % is not slot, list or none', in_mode;
    END IF;
    SELECT p.partstrat INTO l_strategy FROM pg_catalog.pg_partitioned_table AS p WHERE p.partrelid = l_old;
    IF coalesce(l_strategy, 'n') = (CASE in_mode WHEN 'slot' THEN 'h' WHEN 'list' THEN 'l' ELSE 'n' END) THEN
        RETURN;  -- already so
    END IF;
    -- What the table has besides its columns, as statements that make it again on the new table.
    SELECT coalesce(array_agg(format('ALTER TABLE %s ADD CONSTRAINT %I %s', l_old, c.conname,
                                     pg_get_constraintdef(c.oid)) ORDER BY c.conname), '{}')
      INTO l_keys
      FROM pg_catalog.pg_constraint AS c WHERE c.conrelid = l_old AND c.contype IN ('p', 'u', 'x');
    SELECT coalesce(array_agg(replace(pg_get_indexdef(i.indexrelid), ' ON ONLY ', ' ON ')
                              ORDER BY i.indexrelid::regclass::text), '{}')
      INTO l_indexes
      FROM pg_catalog.pg_index AS i
     WHERE i.indrelid = l_old
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS c WHERE c.conindid = i.indexrelid);
    SELECT coalesce(array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname), '{}') INTO l_triggers
      FROM pg_catalog.pg_trigger AS t WHERE t.tgrelid = l_old AND NOT t.tgisinternal AND t.tgparentid = 0;
    SELECT coalesce(array_agg(format('CREATE POLICY %I ON %s AS %s FOR %s TO %s%s%s', p.polname, l_old,
                                     CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
                                     CASE p.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE'
                                                   WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
                                     (SELECT string_agg(CASE WHEN r.role = 0 THEN 'PUBLIC'
                                                             ELSE quote_ident(r.role::regrole::text) END, ', ')
                                        FROM unnest(p.polroles) AS r (role)),
                                     ' USING (' || pg_get_expr(p.polqual, p.polrelid) || ')',
                                     ' WITH CHECK (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')')
                              ORDER BY p.polname), '{}')
      INTO l_policies
      FROM pg_catalog.pg_policy AS p WHERE p.polrelid = l_old;
    SELECT c.relrowsecurity, c.relforcerowsecurity INTO l_rls, l_force FROM pg_catalog.pg_class AS c
     WHERE c.oid = l_old;
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO l_columns
      FROM pg_catalog.pg_attribute AS a
     WHERE a.attrelid = l_old AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '';

    -- The old table steps aside (read whole by its owner: no policy applies to it any more); its partitions
    -- leave it with their rows and indexes (an empty one goes).
    EXECUTE format('ALTER TABLE %s RENAME TO %I', l_old, l_kept);
    EXECUTE format('ALTER TABLE %s NO FORCE ROW LEVEL SECURITY', l_old);
    IF l_strategy IS NOT NULL AND in_mode <> 'none' THEN
        FOR l_partition IN SELECT i.inhrelid::regclass AS name FROM pg_catalog.pg_inherits AS i
                            WHERE i.inhparent = l_old ORDER BY i.inhrelid LOOP
            EXECUTE format('SELECT tenant_id FROM %s LIMIT 1', l_partition.name) INTO l_tenant;
            EXECUTE format('ALTER TABLE %s DETACH PARTITION %s', l_old, l_partition.name);
            IF l_tenant IS NULL THEN
                EXECUTE format('DROP TABLE %s', l_partition.name);
            ELSIF NOT EXISTS (SELECT 1 FROM ctxasm.ctx_tenant AS t WHERE t.tenant_id = l_tenant) THEN
                RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
                    MESSAGE = format(co_unregistered, l_partition.name);
            ELSE
                l_moved := l_moved || l_partition.name::text;
            END IF;
        END LOOP;
    END IF;
    FOR l_statement IN
        SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', l_old, c.conname)
          FROM pg_catalog.pg_constraint AS c WHERE c.conrelid = l_old AND c.contype IN ('p', 'u', 'x')
        UNION ALL
        SELECT format('DROP INDEX %s', i.indexrelid::regclass)
          FROM pg_catalog.pg_index AS i
         WHERE i.indrelid = l_old
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS c WHERE c.conindid = i.indexrelid)
    LOOP
        EXECUTE l_statement;
    END LOOP;

    -- The new table, under the old name, with what the old one had.
    EXECUTE format('CREATE TABLE ctxasm.%I (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED '
                   'INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS) %s', in_table, l_old,
                   -- a partitioned table holds no rows and takes no storage options; its partitions do
                   CASE WHEN in_mode = 'none' THEN format('WITH (%s)', ctxasm.row_storage_options()) ELSE l_clause END);
    EXECUTE format('REVOKE ALL ON ctxasm.%I FROM PUBLIC', in_table);
    FOREACH l_statement IN ARRAY l_keys || l_indexes || l_triggers || l_policies LOOP
        EXECUTE l_statement;
    END LOOP;
    -- The rows: partitions attached again (their indexes attach to the new parent's), or copied, before the
    -- policies apply to the new table.
    FOREACH l_statement IN ARRAY l_moved LOOP
        EXECUTE format('SELECT tenant_id FROM %s LIMIT 1', l_statement) INTO l_tenant;
        EXECUTE format('ALTER TABLE ctxasm.%I ATTACH PARTITION %s %s', in_table, l_statement,
                       ctxasm.partition_bound(in_table, l_tenant));
    END LOOP;
    IF in_mode <> 'none' THEN
        PERFORM ctxasm.add_tenant_partition(in_table, t.tenant_id) FROM ctxasm.ctx_tenant AS t;
    END IF;
    IF l_strategy IS NULL OR in_mode = 'none' THEN
        EXECUTE format('SELECT o.tenant_id FROM %s AS o WHERE NOT EXISTS (SELECT 1 FROM ctxasm.ctx_tenant AS t '
                       'WHERE t.tenant_id = o.tenant_id) LIMIT 1', l_old) INTO l_tenant;
        IF l_tenant IS NOT NULL AND in_mode <> 'none' THEN
            RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = format(co_unregistered, l_old);
        END IF;
        EXECUTE format('INSERT INTO ctxasm.%I (%s) SELECT %s FROM %s', in_table, l_columns, l_columns, l_old);
    END IF;
    IF l_rls THEN
        EXECUTE format('ALTER TABLE ctxasm.%I ENABLE ROW LEVEL SECURITY', in_table);
    END IF;
    IF l_force THEN
        EXECUTE format('ALTER TABLE ctxasm.%I FORCE ROW LEVEL SECURITY', in_table);
    END IF;
    EXECUTE format('DROP TABLE %s', l_old);
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.rebuild_tenant_table(varchar, varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.rebuild_tenant_table(varchar, varchar);

--changeset ctxasm:pg-internal-rebuild-tenant-tables dbms:postgresql runOnChange:true splitStatements:false
--comment: every memory table and its history rebuilt under one partitioning: 'slot' (HASH by the slot operator
--comment: class: bounds name no tenant), 'list' (LIST by tenant_id) or 'revert' (memory tables LIST, histories one
--comment: table each, as before the histories were partitioned). Every registered tenant gets a storage slot
--comment: first; the views and functions that depend on the tables (the memory-row views, the functions over
--comment: their row types) are kept as their definitions, dropped, and made again afterwards with their grants.
CREATE OR REPLACE FUNCTION ctxasm.rebuild_tenant_tables(in_mode varchar) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tables     oid[];
    l_frontier   oid[];
    l_functions  oid[] := '{}';
    l_next_views oid[];
    l_next_funcs oid[];
    l_depth      integer := 0;
    l_object     record;
    l_grant      record;
    l_table      record;
BEGIN
    IF in_mode NOT IN ('slot', 'list', 'revert') THEN
        RAISE EXCEPTION 'rebuild_tenant_tables: % is not slot, list or revert', in_mode;
    END IF;
    IF in_mode = 'slot' THEN
        UPDATE ctxasm.ctx_tenant AS t SET storage_slot = ctxasm.storage_slot(t.tenant_id)
         WHERE t.storage_slot IS NULL;
    END IF;
    SELECT array_agg(format('ctxasm.%I', t.name)::regclass::oid) INTO l_tables
      FROM ctxasm.memory_type AS m, LATERAL (VALUES (m.table_name), (m.table_name || '_history')) AS t (name);
    -- Nothing to do (the state of every deployment after its first run): no view or function is touched.
    IF NOT EXISTS (
        SELECT 1
          FROM unnest(l_tables) AS t (relation)
          LEFT JOIN pg_catalog.pg_partitioned_table AS p ON p.partrelid = t.relation
         WHERE coalesce(p.partstrat, 'n') <> CASE WHEN in_mode = 'slot' THEN 'h'
                                                  WHEN in_mode = 'list' THEN 'l'
                                                  WHEN t.relation::regclass::text LIKE '%\_history' THEN 'n'
                                                  ELSE 'l' END) THEN
        RETURN;
    END IF;

    -- The views and functions that depend on the tables, at the depth of their longest path from one.
    CREATE TEMPORARY TABLE rebuild_dependent (
        kind char, object oid, depth integer, name text, definition text, acl aclitem[],
        PRIMARY KEY (kind, object)
    ) ON COMMIT DROP;
    l_frontier := l_tables;
    LOOP
        SELECT coalesce(array_agg(DISTINCT r.ev_class), '{}') INTO l_next_views
          FROM pg_catalog.pg_depend AS d
          JOIN pg_catalog.pg_rewrite AS r ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = r.oid
         WHERE ((d.refclassid = 'pg_catalog.pg_class'::regclass AND d.refobjid = ANY (l_frontier))
                OR (d.refclassid = 'pg_catalog.pg_proc'::regclass AND d.refobjid = ANY (l_functions)))
           AND r.ev_class <> d.refobjid;
        SELECT coalesce(array_agg(DISTINCT d.objid), '{}') INTO l_next_funcs
          FROM pg_catalog.pg_depend AS d
          JOIN pg_catalog.pg_type AS t ON d.refclassid = 'pg_catalog.pg_type'::regclass AND d.refobjid = t.oid
         WHERE d.classid = 'pg_catalog.pg_proc'::regclass
           AND (t.typrelid = ANY (l_frontier)
                OR t.typelem IN (SELECT e.oid FROM pg_catalog.pg_type AS e WHERE e.typrelid = ANY (l_frontier)));
        EXIT WHEN cardinality(l_next_views) = 0 AND cardinality(l_next_funcs) = 0;
        l_depth := l_depth + 1;
        IF l_depth > 50 THEN
            RAISE EXCEPTION 'rebuild_tenant_tables: the dependencies of the memory tables do not end';
        END IF;
        INSERT INTO rebuild_dependent (kind, object, depth)
        SELECT 'v', unnest(l_next_views), l_depth
        UNION ALL
        SELECT 'f', unnest(l_next_funcs), l_depth
        ON CONFLICT (kind, object) DO UPDATE SET depth = excluded.depth;
        l_frontier := l_next_views;
        l_functions := l_next_funcs;
    END LOOP;
    UPDATE rebuild_dependent AS d
       SET name = c.oid::regclass::text,
           definition = format('CREATE VIEW %s%s AS %s', c.oid::regclass,
                               ' WITH (' || array_to_string(c.reloptions, ', ') || ')', pg_get_viewdef(c.oid)),
           acl = coalesce(c.relacl, acldefault('r', c.relowner))
      FROM pg_catalog.pg_class AS c
     WHERE d.kind = 'v' AND c.oid = d.object;
    UPDATE rebuild_dependent AS d
       SET name = p.oid::regprocedure::text, definition = pg_get_functiondef(p.oid),
           acl = coalesce(p.proacl, acldefault('f', p.proowner))
      FROM pg_catalog.pg_proc AS p
     WHERE d.kind = 'f' AND p.oid = d.object;
    FOR l_object IN SELECT * FROM rebuild_dependent ORDER BY depth DESC, kind LOOP
        EXECUTE format(CASE l_object.kind WHEN 'v' THEN 'DROP VIEW %s' ELSE 'DROP FUNCTION %s' END, l_object.name);
    END LOOP;

    FOR l_table IN SELECT t.name, t.mode
                     FROM ctxasm.memory_type AS m,
                          LATERAL (VALUES (m.table_name, CASE in_mode WHEN 'revert' THEN 'list' ELSE in_mode END, 1),
                                          (m.table_name || '_history',
                                           CASE in_mode WHEN 'revert' THEN 'none' ELSE in_mode END, 2))
                                  AS t (name, mode, part)
                    ORDER BY t.part, m.ordinal LOOP
        PERFORM ctxasm.rebuild_tenant_table(l_table.name, l_table.mode);
    END LOOP;

    -- Made again from the bottom up, with the privileges they had (their owner's are its own).
    FOR l_object IN SELECT * FROM rebuild_dependent ORDER BY depth, kind DESC LOOP
        EXECUTE l_object.definition;
        EXECUTE format(CASE l_object.kind WHEN 'v' THEN 'REVOKE ALL ON %s FROM PUBLIC'
                                          ELSE 'REVOKE ALL ON FUNCTION %s FROM PUBLIC' END, l_object.name);
        FOR l_grant IN SELECT a.privilege_type, a.grantee FROM aclexplode(l_object.acl) AS a
                        WHERE a.grantee <> a.grantor LOOP
            EXECUTE format('GRANT %s ON %s%s TO %s', l_grant.privilege_type,
                           CASE l_object.kind WHEN 'f' THEN 'FUNCTION ' ELSE '' END, l_object.name,
                           CASE WHEN l_grant.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(l_grant.grantee::regrole::text) END);
        END LOOP;
    END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.rebuild_tenant_tables(varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.rebuild_tenant_tables(varchar);

--changeset ctxasm:pg-internal-partitions-by-storage-slot dbms:postgresql runAlways:true splitStatements:false
--comment: every memory table and history partitioned by tenant under opaque bounds (slots), where the admin
--comment: installed the slot operator class, else LIST by tenant_id (each tenant's history in a partition of its
--comment: own too). Run on every deployment: nothing happens once the tables are so, and a deployment whose
--comment: admin installs the operator class later moves its partitions to slots then.
DO $$
BEGIN
    PERFORM ctxasm.rebuild_tenant_tables(
        CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_opclass AS c
                           WHERE c.opcname = 'tenant_slot_ops'
                             AND c.opcnamespace = to_regnamespace('ctxasm_storage')) THEN 'slot' ELSE 'list' END);
END;
$$;
--rollback SELECT ctxasm.rebuild_tenant_tables('revert');

--changeset ctxasm:pg-internal-row-storage-of-existing-tables dbms:postgresql splitStatements:false
--comment: the storage options (ctxasm.row_storage_options) on the tables that held memory rows before they were
--comment: set at creation: rows written from now on stay whole; rows already written move in when rewritten
--comment: (VACUUM FULL of the table)
DO $$
DECLARE
    l_table regclass;
BEGIN
    FOR l_table IN
        SELECT c.oid::regclass
          FROM pg_catalog.pg_class AS c
          LEFT JOIN pg_catalog.pg_inherits AS i ON i.inhrelid = c.oid
          LEFT JOIN pg_catalog.pg_class AS p ON p.oid = i.inhparent
         WHERE c.relnamespace = 'ctxasm'::regnamespace AND c.relkind = 'r'
           AND coalesce(p.relname, c.relname) IN (SELECT t.name FROM ctxasm.memory_type AS m,
                                                  LATERAL (VALUES (m.table_name), (m.table_name || '_history')) AS t (name))
    LOOP
        EXECUTE format('ALTER TABLE %s SET (%s)', l_table, ctxasm.row_storage_options());
    END LOOP;
END;
$$;
--rollback SELECT 1;
