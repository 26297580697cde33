--liquibase formatted sql logicalFilePath:db/schema/oracle/0050_keys_and_erasure.sql

-- The claim key and erasure of compression hashes. The PostgreSQL twin is
-- db/postgresql/schema/keys_and_erasure.sql. Oracle needs no session key: the application context
-- CTXASM_CTX can only be set by CTX_SESSION, so the tenant in it needs no signature.

--changeset ctxasm:ora-0050-01-ctx-hmac-key dbms:oracle
--comment: the key tenant claims are verified with (HMAC-SHA256); no VPD, no grant: only CTX_SESSION and
--comment: CTX_ADMIN read or write it. Until ctx_admin.set_claim_key installs the deployment's key, a random
--comment: one nobody holds.
create table ctx_hmac_key (
   purpose     varchar2(16) not null,
   key_bytes   raw(256)     not null,
   changed_at  timestamp with time zone default systimestamp not null,
   constraint ctx_hmac_key_pk primary key (purpose),
   constraint ctx_hmac_key_purpose_ck check (purpose in ('claim'))
);
insert into ctx_hmac_key (purpose, key_bytes) values ('claim', sys.dbms_crypto.randombytes(number_bytes => 32));
--rollback drop table ctx_hmac_key purge;

--changeset ctxasm:ora-0050-02-compression-hash-erasable dbms:oracle
--comment: erasure clears source_hash too (a hash of erased text confirms a guess of it); every other row keeps
--comment: the 64 hex digits it must have
alter table context_compression modify (source_hash null);
alter table context_compression add constraint context_compression_source_hash_required_ck
   check (source_hash is not null or status = 'erased');
--rollback alter table context_compression drop constraint context_compression_source_hash_required_ck; alter table context_compression modify (source_hash not null);
