--liquibase formatted sql logicalFilePath:db/packages/postgresql/0012_ctxasm_partitions.sql

--changeset ctxasm:pg-internal-tenant-storage-key dbms:postgresql runOnChange:true splitStatements:false
--comment: the suffix of a tenant's partitions: keyed, so the catalog (readable by every role) does not list
--comment: tenant ids, and stable, so registering a tenant again finds its partitions
CREATE OR REPLACE FUNCTION ctxasm.tenant_storage_key(in_tenant_id varchar) RETURNS varchar
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT 't' || left(encode(ctxasm.keyed_mac('session', convert_to('partition|' || in_tenant_id, 'UTF8')), 'hex'), 16)
$$;
REVOKE ALL ON FUNCTION ctxasm.tenant_storage_key(varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.tenant_storage_key(varchar);

--changeset ctxasm:pg-internal-add-tenant-partitions dbms:postgresql runOnChange:true splitStatements:false
--comment: one partition per memory table for the tenant (idempotent); the partitioned indexes of each
--comment: table (btree, GIN, HNSW) are created on it. Every read goes through the parent, whose policies
--comment: apply; no role but the owner may name a partition. The partition itself has no policy, so its planner
--comment: statistics stay readable to the owner's selection code (pg_stats hides them where RLS is active).
CREATE OR REPLACE FUNCTION ctxasm.add_tenant_partitions(in_tenant_id varchar) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_key       varchar := ctxasm.tenant_storage_key(in_tenant_id);
    l_table     text;
    l_partition text;
BEGIN
    FOR l_table IN SELECT m.table_name FROM ctxasm.memory_type m ORDER BY m.ordinal LOOP
        l_partition := l_table || '_' || l_key;
        IF to_regclass(format('ctxasm.%I', l_partition)) IS NULL THEN
            EXECUTE format('CREATE TABLE ctxasm.%I PARTITION OF ctxasm.%I FOR VALUES IN (%L)',
                           l_partition, l_table, in_tenant_id);
        END IF;
    END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.add_tenant_partitions(varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.add_tenant_partitions(varchar);

--changeset ctxasm:pg-internal-tenant-partition dbms:postgresql runOnChange:true splitStatements:false
--comment: the tenant's partition of one memory table (NULL when the tenant has none): selection reads its
--comment: planner statistics (lexeme frequencies) for the lexical retriever
CREATE OR REPLACE FUNCTION ctxasm.tenant_partition(in_tenant_id varchar, in_table varchar) RETURNS varchar
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT in_table || '_' || ctxasm.tenant_storage_key(in_tenant_id)
$$;
REVOKE ALL ON FUNCTION ctxasm.tenant_partition(varchar, varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.tenant_partition(varchar, varchar);
