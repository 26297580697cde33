--liquibase formatted sql

--changeset ctxasm:pg-ctx-admin-register-tenant dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_ADMIN.register_tenant: owner only (never granted to the app)
CREATE OR REPLACE FUNCTION ctx_admin.register_tenant(in_tenant_id varchar, in_display_name varchar)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF in_tenant_id IS NULL OR in_tenant_id !~ '^[a-z0-9][a-z0-9_-]{0,63}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'CX108', MESSAGE = format(
            'invalid_argument: in_tenant_id %s must be 1..64 of a-z, 0-9, _ and -, starting with a letter or digit',
            coalesce(quote_literal(in_tenant_id), 'NULL'));
    END IF;
    IF coalesce(in_display_name, '') = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'CX108', MESSAGE = 'invalid_argument: in_display_name must not be empty';
    END IF;
    INSERT INTO ctxasm.ctx_tenant (tenant_id, display_name)
    VALUES (in_tenant_id, in_display_name)
    ON CONFLICT (tenant_id) DO UPDATE SET display_name = excluded.display_name;
END;
$$;
REVOKE ALL ON FUNCTION ctx_admin.register_tenant(varchar, varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctx_admin.register_tenant(varchar, varchar);
