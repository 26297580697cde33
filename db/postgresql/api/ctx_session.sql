--liquibase formatted sql logicalFilePath:db/packages/postgresql/0010_ctx_session.sql

--changeset ctxasm:pg-internal-hmac-pads dbms:postgresql runOnChange:true splitStatements:false
--comment: RFC 2104: a key (hashed first when longer than sha256's 64-byte block, then zero-padded to 64 bytes)
--comment: xor ipad (0x36) and xor opad (0x5c); the pads are all ctx_hmac_key keeps
CREATE OR REPLACE FUNCTION ctxasm.hmac_pads(in_key bytea, OUT inner_pad bytea, OUT outer_pad bytea)
LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_block constant integer := 64;
    l_key    bytea := CASE WHEN length(in_key) > co_block THEN sha256(in_key) ELSE in_key END;
BEGIN
    l_key := l_key || decode(repeat('00', co_block - length(l_key)), 'hex');
    inner_pad := l_key;
    outer_pad := l_key;
    FOR l_index IN 0 .. co_block - 1 LOOP
        inner_pad := set_byte(inner_pad, l_index, get_byte(l_key, l_index) # 54);
        outer_pad := set_byte(outer_pad, l_index, get_byte(l_key, l_index) # 92);
    END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.hmac_pads(bytea) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.hmac_pads(bytea);

--changeset ctxasm:pg-internal-keyed-mac dbms:postgresql runOnChange:true splitStatements:false
--comment: HMAC-SHA256 of a message under one of the keys of ctx_hmac_key: H(K xor opad || H(K xor ipad || m))
CREATE OR REPLACE FUNCTION ctxasm.keyed_mac(in_purpose varchar, in_message bytea) RETURNS bytea
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT sha256(k.outer_pad || sha256(k.inner_pad || in_message))
      FROM ctxasm.ctx_hmac_key AS k
     WHERE k.purpose = in_purpose
$$;
REVOKE ALL ON FUNCTION ctxasm.keyed_mac(varchar, bytea) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.keyed_mac(varchar, bytea);

--changeset ctxasm:pg-internal-base64url-decode dbms:postgresql runOnChange:true splitStatements:false
--comment: base64url without padding (RFC 4648 section 5, as JWTs use it) to bytes; NULL when it is not that
CREATE OR REPLACE FUNCTION ctxasm.base64url_decode(in_text text) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF in_text IS NULL OR in_text !~ '^[A-Za-z0-9_-]*$' OR length(in_text) % 4 = 1 THEN
        RETURN NULL;
    END IF;
    RETURN decode(translate(in_text, '-_', '+/') || repeat('=', (4 - length(in_text) % 4) % 4), 'base64');
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.base64url_decode(text) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.base64url_decode(text);

--changeset ctxasm:pg-ctx-session-signature dbms:postgresql runOnChange:true splitStatements:false
--comment: the signature that makes the session settings trustworthy: an HMAC under the session key of the
--comment: tenant, the claim's user and agent, this backend and this transaction's start
DROP FUNCTION IF EXISTS ctxasm.session_signature(varchar);
CREATE OR REPLACE FUNCTION ctxasm.session_signature(in_tenant_id varchar, in_user_id varchar, in_agent_id varchar)
RETURNS varchar
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    -- A JSON array: no separator inside a user or agent id can make two different scopes sign the same bytes.
    SELECT encode(ctxasm.keyed_mac('session', convert_to(
               jsonb_build_array(in_tenant_id, in_user_id, in_agent_id, pg_backend_pid(),
                                 extract(EPOCH FROM now())::text)::text, 'UTF8')), 'hex')
$$;
REVOKE ALL ON FUNCTION ctxasm.session_signature(varchar, varchar, varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.session_signature(varchar, varchar, varchar);

--changeset ctxasm:pg-internal-enter-tenant dbms:postgresql runOnChange:true splitStatements:false
--comment: scope this transaction to a tenant (and the claim's user and agent): owner code only, after the
--comment: claim was verified (set_tenant) or for the owner's own maintenance (purge_tenant)
CREATE OR REPLACE FUNCTION ctxasm.enter_tenant(in_tenant_id varchar, in_user_id varchar, in_agent_id varchar)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM set_config('ctxasm.tenant_id', in_tenant_id, TRUE);
    PERFORM set_config('ctxasm.claim_user', coalesce(in_user_id, ''), TRUE);
    PERFORM set_config('ctxasm.claim_agent', coalesce(in_agent_id, ''), TRUE);
    PERFORM set_config('ctxasm.tenant_sig', ctxasm.session_signature(in_tenant_id, in_user_id, in_agent_id), TRUE);
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.enter_tenant(varchar, varchar, varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.enter_tenant(varchar, varchar, varchar);

--changeset ctxasm:pg-ctx-session-set-tenant dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SESSION.set_tenant: the only way to scope a transaction to a tenant: a signed claim, verified here
-- Before claims the parameter was the tenant id itself: drop that signature (a parameter cannot be renamed).
DROP FUNCTION IF EXISTS ctx_session.set_tenant(varchar);
CREATE OR REPLACE FUNCTION ctx_session.set_tenant(in_claim varchar) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    co_max_length   constant integer := 4096;
    co_max_lifetime constant integer := 86400;  -- seconds from iat to exp
    co_clock_skew   constant integer := 300;    -- seconds an iat may lie in the future
    co_claim_shape  constant text := '^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$';
    l_parts   text[];
    l_header  jsonb;
    l_payload jsonb;
    l_now     numeric := extract(EPOCH FROM clock_timestamp());
    l_valid   boolean := FALSE;
BEGIN
    PERFORM ctx_session.clear_tenant();
    PERFORM ctxasm.require_session_limits();
    IF length(in_claim) <= co_max_length THEN
        l_parts := regexp_match(in_claim, co_claim_shape);
    END IF;
    -- The signature first: nothing else about the claim is looked at unless it was signed with the claim key.
    -- Both MACs are hashed before comparing, so the comparison takes the same time wherever they differ.
    IF l_parts IS NOT NULL
       AND sha256(convert_to(l_parts[3], 'UTF8')) = sha256(convert_to(rtrim(translate(encode(
               ctxasm.keyed_mac('claim', convert_to(l_parts[1] || '.' || l_parts[2], 'UTF8')), 'base64'),
               '+/', '-_'), '='), 'UTF8')) THEN
        BEGIN
            l_header := convert_from(ctxasm.base64url_decode(l_parts[1]), 'UTF8')::jsonb;
            l_payload := convert_from(ctxasm.base64url_decode(l_parts[2]), 'UTF8')::jsonb;
            l_valid := l_header ->> 'alg' = 'HS256'
                       AND coalesce(l_header ->> 'typ', 'JWT') = 'JWT'
                       AND jsonb_typeof(l_payload -> 'tenant') = 'string'
                       AND jsonb_typeof(l_payload -> 'iat') = 'number'
                       AND jsonb_typeof(l_payload -> 'exp') = 'number'
                       AND coalesce(jsonb_typeof(l_payload -> 'user'), 'string') IN ('string', 'null')
                       AND coalesce(jsonb_typeof(l_payload -> 'agent'), 'string') IN ('string', 'null')
                       -- An empty user or agent names nobody: it would have scoped the session to no one,
                       -- that is tenant-wide.
                       AND coalesce(l_payload ->> 'user', '-') <> ''
                       AND coalesce(l_payload ->> 'agent', '-') <> ''
                       AND (l_payload ->> 'exp')::numeric > l_now
                       AND (l_payload ->> 'iat')::numeric <= l_now + co_clock_skew
                       AND (l_payload ->> 'exp')::numeric - (l_payload ->> 'iat')::numeric <= co_max_lifetime
                       AND EXISTS (SELECT 1 FROM ctxasm.ctx_tenant AS t WHERE t.tenant_id = l_payload ->> 'tenant');
        EXCEPTION WHEN data_exception OR untranslatable_character OR character_not_in_repertoire THEN
            l_valid := FALSE;
        END;
    END IF;
    -- One answer for every refusal (malformed, wrong key, tampered, expired, unregistered tenant): a caller
    -- learns nothing about which tenants exist. So it has no detail: the catalogue's message is the answer.
    IF NOT coalesce(l_valid, FALSE) THEN
        RAISE EXCEPTION USING ERRCODE = ctxasm.error_code('invalid_claim'),
            MESSAGE = 'invalid_claim: ' || ctxasm.error_message('invalid_claim');
    END IF;
    PERFORM ctxasm.enter_tenant(l_payload ->> 'tenant', l_payload ->> 'user', l_payload ->> 'agent');
END;
$$;
--rollback DROP FUNCTION ctx_session.set_tenant(varchar);

--changeset ctxasm:pg-ctx-session-clear-tenant dbms:postgresql runOnChange:true splitStatements:false
CREATE OR REPLACE FUNCTION ctx_session.clear_tenant() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM set_config('ctxasm.tenant_id', '', TRUE);
    PERFORM set_config('ctxasm.claim_user', '', TRUE);
    PERFORM set_config('ctxasm.claim_agent', '', TRUE);
    PERFORM set_config('ctxasm.tenant_sig', '', TRUE);
END;
$$;
--rollback DROP FUNCTION ctx_session.clear_tenant();

--changeset ctxasm:pg-internal-session-tenant dbms:postgresql runOnChange:true splitStatements:false
--comment: the tenant every RLS policy compares with; NULL (no rows) unless set_tenant signed the settings.
--comment: Owner code only (policies are evaluated inside the contract routines, which run as the owner).
CREATE OR REPLACE FUNCTION ctxasm.session_tenant() RETURNS varchar
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l_tenant varchar := current_setting('ctxasm.tenant_id', TRUE);
BEGIN
    IF coalesce(l_tenant, '') = ''
       OR sha256(convert_to(coalesce(current_setting('ctxasm.tenant_sig', TRUE), ''), 'UTF8'))
          <> sha256(convert_to(ctxasm.session_signature(
                 l_tenant, nullif(current_setting('ctxasm.claim_user', TRUE), ''),
                 nullif(current_setting('ctxasm.claim_agent', TRUE), '')), 'UTF8')) THEN
        RETURN NULL;
    END IF;
    RETURN l_tenant;
END;
$$;
REVOKE ALL ON FUNCTION ctxasm.session_tenant() FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.session_tenant();

--changeset ctxasm:pg-ctx-session-current-tenant dbms:postgresql runOnChange:true splitStatements:false
--comment: CTX_SESSION.current_tenant: the session's verified tenant, or NULL
CREATE OR REPLACE FUNCTION ctx_session.current_tenant() RETURNS varchar
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT ctxasm.session_tenant()
$$;
--rollback DROP FUNCTION ctx_session.current_tenant();

--changeset ctxasm:pg-internal-claim-scope dbms:postgresql runOnChange:true splitStatements:false
--comment: the user or agent the session's verified claim names ('user' or 'agent'), or NULL when it names none
--comment: (or no tenant is set); RLS and require_scope read it
CREATE OR REPLACE FUNCTION ctxasm.claim_scope(in_part varchar) RETURNS varchar
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN ctxasm.session_tenant() IS NOT NULL
                THEN nullif(current_setting('ctxasm.claim_' || in_part, TRUE), '') END
$$;
REVOKE ALL ON FUNCTION ctxasm.claim_scope(varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.claim_scope(varchar);

--changeset ctxasm:pg-internal-claim-setting dbms:postgresql runOnChange:true splitStatements:false
--comment: the user or agent ('user' or 'agent') the session's claim names, as set, not verified here: for the
--comment: row level security policies only, which compare the row's tenant with the verified session_tenant()
--comment: in the same predicate. A claim altered after set_tenant fails that verification, and the predicate
--comment: is false whatever this returns; a claim that passes it is the one set. claim_scope verified the
--comment: signature again for each of the four references of a policy: a table read verified it five times.
CREATE OR REPLACE FUNCTION ctxasm.claim_setting(in_part varchar) RETURNS varchar
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT nullif(current_setting('ctxasm.claim_' || in_part, TRUE), '')
$$;
REVOKE ALL ON FUNCTION ctxasm.claim_setting(varchar) FROM PUBLIC;
--rollback DROP FUNCTION ctxasm.claim_setting(varchar);
