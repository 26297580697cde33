--liquibase formatted sql logicalFilePath:db/packages/postgresql/0020_ctx_admin.sql

--changeset ctxasm:pg-ctx-admin-register-tenant dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_ADMIN.register_tenant: owner only (never granted to the app). It never waits behind, or blocks,
--comment: another tenant's work: a tenant already registered as asked is left alone (no row lock), a new one gets
--comment: its storage slot and its partitions attached (ctxasm.add_tenant_partitions). Call it in a transaction
--comment: of its own and commit: until then the attached partitions keep other registrations waiting.
CREATE OR REPLACE FUNCTION ctx_admin.register_tenant(in_tenant_id varchar, in_display_name varchar)
RETURNS void
LANGUAGE plpgsql SET lock_timeout = '5s' AS $$
DECLARE
    l_slot integer;
BEGIN
    IF in_tenant_id IS NULL OR in_tenant_id !~ '^[a-z0-9][a-z0-9_-]{0,63}$' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'), MESSAGE = format(
            'invalid_argument: in_tenant_id %s must be 1..64 of a-z, 0-9, _ and -, starting with a letter or digit',
            ctxasm.quoted(in_tenant_id));
    END IF;
    IF coalesce(in_display_name, '') = '' THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'),
            MESSAGE = 'invalid_argument: in_display_name must not be empty';
    END IF;
    -- A slot only where partitions are bounded by slots (see tenant_partitions.sql).
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_partitioned_table AS p
                WHERE p.partrelid = 'ctxasm.guideline_memory'::regclass AND p.partstrat = 'h') THEN
        l_slot := ctxasm.storage_slot(in_tenant_id);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM ctxasm.ctx_tenant AS t
                    WHERE t.tenant_id = in_tenant_id AND t.display_name = in_display_name
                      AND t.storage_slot IS NOT DISTINCT FROM l_slot) THEN
        INSERT INTO ctxasm.ctx_tenant (tenant_id, display_name, storage_slot)
        VALUES (in_tenant_id, in_display_name, l_slot)
        ON CONFLICT (tenant_id) DO UPDATE SET display_name = excluded.display_name,
                                              storage_slot = excluded.storage_slot;
    END IF;
    -- The tenant's own partition of every memory table and history: its rows, indexes and statistics are its own.
    PERFORM ctxasm.add_tenant_partitions(in_tenant_id);
    IF l_slot IS NOT NULL AND NOT satisfies_hash_partition('ctxasm.guideline_memory'::regclass,
                                                           ctxasm.storage_modulus(), l_slot, in_tenant_id::text) THEN
        RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state', MESSAGE =
            'the storage slot operator class does not place rows as this PostgreSQL partitions them';
    END IF;
END;
$$;
REVOKE ALL ON FUNCTION ctx_admin.register_tenant(varchar, varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctx_admin.register_tenant(varchar, varchar);

--changeset ctxasm:pg-ctx-admin-purge-tenant dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_ADMIN.purge_tenant: remove every row of one tenant, history included, and the tenant itself
--comment: (owner only; for test fixtures and for offboarding a tenant). Returns the number of rows removed.
CREATE OR REPLACE FUNCTION ctx_admin.purge_tenant(in_tenant_id varchar) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    l_table text;
    l_rows  integer;
    l_total integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM ctxasm.ctx_tenant t WHERE t.tenant_id = in_tenant_id) THEN
        RETURN 0;
    END IF;
    PERFORM ctxasm.enter_tenant(in_tenant_id, NULL, NULL);
    FOR l_table IN SELECT m.table_name FROM ctxasm.memory_type m ORDER BY m.ordinal LOOP
        EXECUTE format('SELECT count(*) FROM ctxasm.%I WHERE tenant_id = $1', l_table) INTO l_rows USING in_tenant_id;
        l_total := l_total + l_rows;
        -- The tenant's partitions are emptied at once (no dead rows left for a vacuum to find); they stay,
        -- empty, for a later registration of the same tenant (its storage key finds them and their slot).
        IF to_regclass(format('ctxasm.%I', ctxasm.tenant_partition(in_tenant_id, l_table))) IS NOT NULL THEN
            EXECUTE format('TRUNCATE ctxasm.%I', ctxasm.tenant_partition(in_tenant_id, l_table));
        END IF;
        IF to_regclass(format('ctxasm.%I', ctxasm.tenant_partition(in_tenant_id, l_table || '_history'))) IS NOT NULL
        THEN
            EXECUTE format('TRUNCATE ctxasm.%I', ctxasm.tenant_partition(in_tenant_id, l_table || '_history'));
        ELSE
            EXECUTE format('DELETE FROM ctxasm.%I WHERE tenant_id = $1', l_table || '_history') USING in_tenant_id;
        END IF;
    END LOOP;
    DELETE FROM ctxasm.ctx_tenant t WHERE t.tenant_id = in_tenant_id;
    PERFORM ctx_session.clear_tenant();
    RETURN l_total;
END;
$$;
REVOKE ALL ON FUNCTION ctx_admin.purge_tenant(varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctx_admin.purge_tenant(varchar);

--changeset ctxasm:pg-ctx-admin-set-claim-key dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_ADMIN.set_claim_key: install the key tenant claims are signed with (HMAC-SHA256), the one the
--comment: deployment hands to the trusted side; owner only. Claims signed with an earlier key are refused from now.
CREATE OR REPLACE FUNCTION ctx_admin.set_claim_key(in_key varchar) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_min_length constant integer := 32;
    co_max_length constant integer := 256;  -- the Oracle twin keeps the key in a raw(256)
    l_pads record;
BEGIN
    IF in_key IS NULL OR octet_length(in_key) NOT BETWEEN co_min_length AND co_max_length THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_argument'), MESSAGE = format(
            'invalid_argument: in_key must be %s to %s bytes of secret text', co_min_length, co_max_length);
    END IF;
    l_pads := ctxasm.hmac_pads(convert_to(in_key, 'UTF8'));
    UPDATE ctxasm.ctx_hmac_key AS k
       SET inner_pad = l_pads.inner_pad, outer_pad = l_pads.outer_pad, changed_at = now()
     WHERE k.purpose = 'claim';
END;
$$;
REVOKE ALL ON FUNCTION ctx_admin.set_claim_key(varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctx_admin.set_claim_key(varchar);
