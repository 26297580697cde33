--liquibase formatted sql logicalFilePath:db/schema/postgresql/0080_keys_and_erasure.sql

--changeset ctxasm:pg-0080-hmac-key dbms:postgresql splitStatements:false
--comment: the two HMAC-SHA256 keys, kept as their RFC 2104 pads (key xor ipad, key xor opad), so a MAC is
--comment: two sha256 calls: 'session' signs the transaction's tenant setting (made here, never leaves the
--comment: database); 'claim' verifies tenant claims (installed from the trusted side's launch configuration
--comment: by ctx_admin.set_claim_key; until then a random key nobody holds). Owner only: no grant, no RLS.
CREATE TABLE ctxasm.ctx_hmac_key (
    purpose    varchar(16) PRIMARY KEY CHECK (purpose IN ('session', 'claim')),
    inner_pad  bytea       NOT NULL CHECK (length(inner_pad) = 64),
    outer_pad  bytea       NOT NULL CHECK (length(outer_pad) = 64),
    changed_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON ctxasm.ctx_hmac_key FROM PUBLIC;
-- 64 random bytes per key, from four version-4 UUIDs (gen_random_uuid draws from the strong random source).
DO $$
DECLARE
    l_purpose text;
    l_key     bytea;
    l_inner   bytea;
    l_outer   bytea;
BEGIN
    FOREACH l_purpose IN ARRAY ARRAY['session', 'claim'] LOOP
        l_key := decode(replace(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text
                                || gen_random_uuid()::text, '-', ''), 'hex');
        l_inner := l_key;
        l_outer := l_key;
        FOR l_index IN 0 .. 63 LOOP
            l_inner := set_byte(l_inner, l_index, get_byte(l_key, l_index) # 54);
            l_outer := set_byte(l_outer, l_index, get_byte(l_key, l_index) # 92);
        END LOOP;
        INSERT INTO ctxasm.ctx_hmac_key (purpose, inner_pad, outer_pad) VALUES (l_purpose, l_inner, l_outer);
    END LOOP;
END;
$$;
DROP TABLE ctxasm.ctx_session_key;
--rollback DROP TABLE ctxasm.ctx_hmac_key; CREATE TABLE ctxasm.ctx_session_key (singleton boolean PRIMARY KEY DEFAULT TRUE CHECK (singleton), key_text text NOT NULL); INSERT INTO ctxasm.ctx_session_key (key_text) VALUES (gen_random_uuid()::text || gen_random_uuid()::text);

--changeset ctxasm:pg-0080-compression-hash-erasable dbms:postgresql
--comment: erasure clears source_hash too (a hash of erased text confirms a guess of it); every other row keeps
--comment: the 64 hex digits it must have
ALTER TABLE ctxasm.context_compression ALTER COLUMN source_hash DROP NOT NULL;
ALTER TABLE ctxasm.context_compression
    ADD CONSTRAINT context_compression_source_hash_required CHECK (source_hash IS NOT NULL OR status = 'erased');
ALTER TABLE ctxasm.context_compression_history ALTER COLUMN source_hash DROP NOT NULL;
--rollback ALTER TABLE ctxasm.context_compression DROP CONSTRAINT context_compression_source_hash_required; ALTER TABLE ctxasm.context_compression ALTER COLUMN source_hash SET NOT NULL; ALTER TABLE ctxasm.context_compression_history ALTER COLUMN source_hash SET NOT NULL;
