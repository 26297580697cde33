--liquibase formatted sql

--changeset ctxasm:pg-ctx-session-signature dbms:postgresql runOnChange:true splitStatements:false
--comment: the signature that makes the tenant setting trustworthy: keyed, bound to this backend and transaction
CREATE OR REPLACE FUNCTION ctxasm.session_signature(in_tenant_id varchar) RETURNS varchar
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT encode(sha256(convert_to(
               k.key_text || encode(sha256(convert_to(
                   k.key_text || '|' || in_tenant_id || '|' || pg_backend_pid()::text
                   || '|' || extract(epoch FROM now())::text, 'UTF8')), 'hex'),
           'UTF8')), 'hex')
      FROM ctxasm.ctx_session_key k
$$;
REVOKE ALL ON FUNCTION ctxasm.session_signature(varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.session_signature(varchar);

--changeset ctxasm:pg-ctx-session-set-tenant dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SESSION.set_tenant: the only way to scope a transaction to a tenant
CREATE OR REPLACE FUNCTION ctx_session.set_tenant(in_tenant_id varchar) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF in_tenant_id IS NULL OR in_tenant_id = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'CX108',
            MESSAGE = 'invalid_argument: in_tenant_id must not be empty';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM ctxasm.ctx_tenant t WHERE t.tenant_id = in_tenant_id) THEN
        RAISE EXCEPTION USING ERRCODE = 'CX101',
            MESSAGE = format('unknown_tenant: no tenant %s is registered', quote_literal(in_tenant_id));
    END IF;
    PERFORM set_config('ctxasm.tenant_id', in_tenant_id, true);
    PERFORM set_config('ctxasm.tenant_sig', ctxasm.session_signature(in_tenant_id), true);
END;
$$;
--rollback DROP FUNCTION ctx_session.set_tenant(varchar);

--changeset ctxasm:pg-ctx-session-clear-tenant dbms:postgresql runOnChange:true splitStatements:false
CREATE OR REPLACE FUNCTION ctx_session.clear_tenant() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('ctxasm.tenant_id', '', true);
    PERFORM set_config('ctxasm.tenant_sig', '', true);
END;
$$;
--rollback DROP FUNCTION ctx_session.clear_tenant();

--changeset ctxasm:pg-ctx-session-current-tenant dbms:postgresql runOnChange:true splitStatements:false
--comment: the tenant every RLS policy compares with; NULL (no rows) unless set_tenant signed it
CREATE OR REPLACE FUNCTION ctx_session.current_tenant() RETURNS varchar
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := current_setting('ctxasm.tenant_id', true);
BEGIN
    IF coalesce(l_tenant, '') = ''
       OR current_setting('ctxasm.tenant_sig', true) IS DISTINCT FROM ctxasm.session_signature(l_tenant) THEN
        RETURN NULL;
    END IF;
    RETURN l_tenant;
END;
$$;
--rollback DROP FUNCTION ctx_session.current_tenant();
